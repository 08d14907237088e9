"""The site's adapter (ilab_memory/adapter.py): one class a site subclasses, named by
``ILAB_MEMORY["ADAPTER"]``, deciding who a request is, its account's scope and who may act for
any user, for the API and MCP over HTTP alike; the settings it replaced still work, each with
the warning W014 naming the method that replaces it. Beside the API's tests: it uses their
accounts (tests/api/conftest.py)."""

import pytest
from django.contrib.auth.models import Group
from django.test import override_settings

from ilab_memory.adapter import DefaultMemoryAdapter, get_adapter, user_id_is_primary_key
from ilab_memory.checks import check_adapter
from ilab_memory.models import Observation
from tests.api.conftest import API, uid

SUPPORT = "support"


class GroupAdapter(DefaultMemoryAdapter):
    """A site's adapter: the user_id is the username, an account in the group ``agent:<scope>``
    acts in that scope, and members of the group ``operators`` act for any user."""

    def user_id_of(self, request) -> str:
        return request.user.get_username()

    def scope_of(self, request) -> str | None:
        names = request.user.groups.filter(name__startswith="agent:").values_list("name", flat=True)
        return next((name.removeprefix("agent:") for name in names), None)

    def may_act_for_any_user(self, user) -> bool:
        return user.groups.filter(name="operators").exists()


ADAPTER = {"ADAPTER": "tests.api.test_adapter_api.GroupAdapter"}


def test_the_default_adapter_is_the_users_primary_key_unbound_and_the_permission(rf, alice, agent):
    request = rf.get("/")
    request.user = alice
    adapter = get_adapter()
    assert type(adapter) is DefaultMemoryAdapter
    assert (adapter.user_id_of(request), adapter.scope_of(request)) == (uid(alice), None)
    assert not adapter.may_act_for_any_user(alice) and adapter.may_act_for_any_user(agent)
    assert user_id_is_primary_key()


def test_a_sites_adapter_decides_the_apis_user_id_and_scope(alice, as_alice):
    with override_settings(ILAB_MEMORY=ADAPTER):
        assert not user_id_is_primary_key()
        saved = as_alice.post(API + "observations/", {"title": "Unbound", "content": "c"}, format="json")
        assert saved.status_code == 201, saved.content
        alice.groups.create(name="agent:support")
        saved = as_alice.post(API + "observations/", {"title": "Bound", "content": "c"}, format="json")
        assert saved.json()["observation"]["scope"] == SUPPORT
        refused = as_alice.post(API + "observations/", {"title": "t", "content": "c", "scope": ""}, format="json")
        assert (refused.status_code, refused.json()["code"]) == (403, "scope_bound")
    assert sorted(Observation.objects.values_list("user_id", "scope", "title")) == [
        ("alice", "", "Unbound"), ("alice", SUPPORT, "Bound")]


def test_a_sites_adapter_decides_who_may_act_for_any_user(alice, as_alice, as_agent, agent):
    with override_settings(ILAB_MEMORY=ADAPTER):
        # The permission alone no longer suffices: this site's rule is the group.
        refused = as_agent.get(API + "observations/", {"user_id": "alice"})
        assert (refused.status_code, refused.json()["code"]) == (403, "act_for_any_user_required")
        agent.groups.add(Group.objects.create(name="operators"))
        assert as_agent.get(API + "observations/", {"user_id": "alice"}).status_code == 200


@pytest.mark.parametrize("key, value, method", [
    ("USER_ID_RESOLVER", "ilab_memory.api.identity.user_id_from_request", "user_id_of"),
    ("SCOPE_RESOLVER", "ilab_memory.api.identity.scope_from_account", "scope_of"),
    ("ACCOUNT_SCOPES", {"bot": SUPPORT}, "scope_of"),
])
def test_each_replaced_setting_is_a_warning_naming_the_method_that_replaces_it(key, value, method):
    with override_settings(ILAB_MEMORY={key: value}):
        [warning] = check_adapter()
    assert warning.id == "ilab_memory.W014" and key in warning.msg
    assert f"DefaultMemoryAdapter.{method}()" in warning.hint


def test_the_replaced_settings_still_decide_for_the_default_adapter(alice, as_alice):
    settings = {"USER_ID_RESOLVER": lambda request: f"site-{request.user.pk}",
                "ACCOUNT_SCOPES": {alice.username: SUPPORT}}
    with override_settings(ILAB_MEMORY=settings):
        assert not user_id_is_primary_key()
        saved = as_alice.post(API + "observations/", {"title": "Old settings", "content": "c"}, format="json")
    assert saved.json()["observation"]["scope"] == SUPPORT
    assert Observation.objects.get().user_id == f"site-{alice.pk}"


def test_an_adapter_that_cannot_be_imported_is_an_error():
    with override_settings(ILAB_MEMORY={"ADAPTER": "myproject.memory.NoSuchAdapter"}):
        [error] = check_adapter()
    assert error.id == "ilab_memory.E013"
    with override_settings(ILAB_MEMORY={}):
        assert check_adapter() == []
