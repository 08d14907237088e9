"""admin/__init__.py: what the console registers, and who may see and do what there."""


from django.contrib import admin as django_admin
from django.test.utils import override_settings
from django.urls import reverse

from ilab_memory import admin as memory_admin
from ilab_memory.models import Observation, Session
from tests.admin.pages import (
    CLOSE_IDLE,
    OBSERVATIONS,
    SESSIONS,
    observation_url,
    session_url,
    staff_client,
)

# -- Permissions -----------------------------------------------------------------------------


def test_staff_without_view_permission_sees_nothing(client, django_user_model, mix):
    client = staff_client(client, django_user_model)
    assert client.get(SESSIONS).status_code == 403
    assert client.get(OBSERVATIONS).status_code == 403
    assert client.get(session_url(mix["auto"])).status_code == 403
    assert client.post(CLOSE_IDLE).status_code == 403
    index = client.get(reverse("admin:index")).content.decode()
    assert "/ilab_memory/" not in index


def test_view_only_staff_browses_but_cannot_sweep_edit_or_act(client, django_user_model, mix, clock):
    client = staff_client(client, django_user_model, "view_session", "view_observation")
    response = client.get(SESSIONS)
    assert response.status_code == 200 and "Close idle sessions now" not in response.content.decode()
    assert client.post(CLOSE_IDLE).status_code == 403
    assert 'name="summary"' not in client.get(session_url(mix["human"])).content.decode()
    response = client.post(
        OBSERVATIONS, {"action": "soft_delete_selected", "_selected_action": [mix["auto_obs"].pk]}
    )
    assert Observation.objects.get(pk=mix["auto_obs"].pk).deleted_at is None


# -- Registration ----------------------------------------------------------------------------


def test_register_admin_false_leaves_the_site_untouched(db):
    site = django_admin.AdminSite(name="host")
    with override_settings(ILAB_MEMORY={"REGISTER_ADMIN": False}):
        assert memory_admin.register(site) is False
    assert not site.is_registered(Session) and not site.is_registered(Observation)


def test_register_admin_default_registers_both_models(db):
    site = django_admin.AdminSite(name="host")
    assert memory_admin.register(site) is True
    assert site.is_registered(Session) and site.is_registered(Observation)
    assert django_admin.site.is_registered(Session)


def test_change_pages_show_times_as_the_lists_do(admin_client, mix):
    """One date format in the console: ``2026-12-02 18:24`` in lists and on pages alike."""
    import re

    session, observation = mix["human"], mix["human_obs"]
    for url, moment in ((session_url(session), session.started_at),
                        (observation_url(observation), observation.created_at)):
        page = admin_client.get(url).content.decode()
        assert moment.strftime("%Y-%m-%d") in page
        assert not re.search(r"\b(a\.m\.|p\.m\.|midnight|noon)", page), url


def test_the_demo_answers_the_favicon_with_the_consoles_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("ilab_memory/icon.svg")
    from django.contrib.staticfiles import finders

    assert finders.find("ilab_memory/icon.svg")  # served from the app's static files


def test_the_admin_index_links_the_consoles_overview_for_those_who_may_view_it(client, django_user_model, db):
    from django.contrib import admin

    overview = reverse("admin:ilab_memory_overview")
    assert admin.site.index_template == "admin/ilab_memory/index.html"
    viewer = staff_client(client, django_user_model, "view_session", "view_observation")
    index = viewer.get(reverse("admin:index")).content.decode()
    assert f'href="{overview}"' in index and "Memory overview" in index
    assert "app-ilab_memory" in index  # the app list is still there


def test_the_admin_index_has_no_overview_link_for_staff_who_may_not_view_it(client, django_user_model, db):
    index = staff_client(client, django_user_model).get(reverse("admin:index")).content.decode()
    assert reverse("admin:ilab_memory_overview") not in index
