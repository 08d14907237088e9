"""The console's pages, as the admin tests reach them: their URLs, what a list shows, the forms they post."""

from django.contrib.auth.models import Permission
from django.urls import reverse

SESSIONS = reverse("admin:ilab_memory_session_changelist")


OBSERVATIONS = reverse("admin:ilab_memory_observation_changelist")


CLOSE_IDLE = reverse("admin:ilab_memory_session_close_idle")


def session_url(session):
    return reverse("admin:ilab_memory_session_change", args=[session.pk])


def observation_url(observation):
    return reverse("admin:ilab_memory_observation_change", args=[observation.pk])


def listed(response) -> set:
    assert response.status_code == 200, response.status_code
    return {row.pk for row in response.context["cl"].result_list}


def staff_client(client, django_user_model, *codenames):
    user = django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="ilab_memory", codename__in=codenames))
    client.force_login(user)
    return client


def time_fields(name: str, moment) -> dict:
    """A moment as the change form's split date and time inputs send it (the site's zone is UTC)."""
    if moment is None:
        return {f"{name}_0": "", f"{name}_1": ""}
    return {f"{name}_0": moment.strftime("%Y-%m-%d"), f"{name}_1": moment.strftime("%H:%M:%S")}


def observation_form(observation, **changes):
    data = {
        "type": observation.type,
        "title": observation.title,
        "content": observation.content,
        "topic_key": observation.topic_key or "",
        "metadata": "{}",
        **time_fields("happened_at", observation.happened_at),
        **time_fields("expires_at", observation.expires_at),
        "_save": "Save",
    }
    data.update(changes)
    return data
