"""The demo command loads a useful, idempotent mix of sessions and an operator login."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from ilab_memory.models import Observation, Session


@pytest.mark.django_db
def test_demo_data_is_idempotent_and_covers_every_summary_kind():
    call_command("ilab_memory_demo", verbosity=0)
    snapshot = (Session.objects.count(), Observation.objects.count())
    call_command("ilab_memory_demo", verbosity=0)
    assert (Session.objects.count(), Observation.objects.count()) == snapshot
    assert Session.objects.filter(status="active").count() == 3
    assert Session.objects.filter(is_auto_generated=True).exists()
    assert Session.objects.filter(status="completed", is_auto_generated=False).exists()
    assert Session.objects.filter(summary="Memorias registradas: (ninguna)").exists()
    assert not Observation.objects.filter(content__contains="abc123").exists()  # private block redacted
    operator = get_user_model().objects.get(username="operator")
    assert operator.is_superuser and operator.check_password("operator")


@pytest.mark.django_db
def test_the_demo_gives_agents_plain_accounts_and_one_service_account_granted_on_purpose():
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    call_command("ilab_memory_demo", verbosity=0)
    call_command("ilab_memory_demo", verbosity=0)  # idempotent
    users = get_user_model().objects
    agent, backend = users.get(username="agent"), users.get(username="agent-backend")
    for account in (agent, backend):
        assert not account.is_superuser and not account.is_staff and not account.has_usable_password()
    grant = Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
    assert list(agent.user_permissions.all()) == [] and list(backend.user_permissions.all()) == [grant]
    as_agent, as_backend = APIClient(), APIClient()
    as_agent.force_authenticate(agent)
    as_backend.force_authenticate(backend)
    assert as_agent.get("/api/memory/context/", {"user_id": "alice"}).status_code == 403
    assert as_agent.get("/api/memory/context/").status_code == 200  # its own memory
    titles = [m["title"] for m in as_backend.get("/api/memory/context/", {"user_id": "alice"}).json()]
    assert "Prefers to be called Ali" in titles
