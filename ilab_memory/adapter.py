"""The site's hooks, in one class: who a request is, the scope its account is bound to, and who
may act for any user. ``ILAB_MEMORY["ADAPTER"]`` names it (a dotted path); a site subclasses
``DefaultMemoryAdapter`` and overrides what it decides differently, as django-allauth's
``ACCOUNT_ADAPTER``. The API and MCP over HTTP ask it through ``get_adapter()``.
"""

from __future__ import annotations

from django.utils.module_loading import import_string

from .conf import get_config

ACT_FOR_ANY_USER = "ilab_memory.act_for_any_user"


class DefaultMemoryAdapter:
    """What the library decides when the site says nothing. ``request`` is the face's request
    (DRF's, for the API and MCP over HTTP), already authenticated."""

    def user_id_of(self, request) -> str:
        """The user_id a request acts for when it names none: the authenticated user's primary
        key, as a string. The services clean it (``validation.clean_user_id``)."""
        resolver = get_config().USER_ID_RESOLVER  # deprecated setting, read for one release (W014)
        if resolver is not None:
            return _callable(resolver)(request)
        return str(request.user.pk)

    def scope_of(self, request) -> str | None:
        """The one scope a request's account is bound to, or None (not bound: it names its own).
        A bound account acts in that scope only, and still reads the shared space."""
        config = get_config()
        if config.SCOPE_RESOLVER is not None:  # deprecated setting, read for one release (W014)
            return _callable(config.SCOPE_RESOLVER)(request)
        user = request.user
        if not config.ACCOUNT_SCOPES or user is None or not getattr(user, "is_authenticated", False):
            return None
        return config.ACCOUNT_SCOPES.get(user.get_username())  # deprecated setting (W014)

    def may_act_for_any_user(self, user) -> bool:
        """Whether ``user`` may name another user_id: it holds ``ilab_memory.act_for_any_user``,
        granted on purpose (directly or through a group, custom backends included).

        A superuser holds every permission implicitly; that is not enough here. An agent's token
        that leaked would read every user's memory, so an account acts for others only when the
        permission was given to it, superuser or not.
        """
        if not user.is_active or not user.has_perm(ACT_FOR_ANY_USER):
            return False
        if not user.is_superuser:
            return True
        from django.contrib.auth.models import Permission  # the auth app may not be installed

        app_label, codename = ACT_FOR_ANY_USER.split(".")
        granted = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        return granted.filter(user=user).exists() or granted.filter(group__user=user).exists()


def get_adapter() -> DefaultMemoryAdapter:
    """An instance of the adapter ``ILAB_MEMORY["ADAPTER"]`` names, read at call time."""
    return _callable(get_config().ADAPTER)()


def user_id_is_primary_key() -> bool:
    """Whether a user_id is the host user's primary key (the default rule), so the console may
    link it back to the user; a site's own rule cannot be run backwards."""
    adapter = type(get_adapter())
    return adapter.user_id_of is DefaultMemoryAdapter.user_id_of and get_config().USER_ID_RESOLVER is None


def _callable(value):
    """A setting that is a dotted path or the object itself."""
    return import_string(value) if isinstance(value, str) else value
