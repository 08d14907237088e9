"""How an HTTP request becomes a user_id: the resolver, and acting for another user_id."""

from __future__ import annotations

from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied

from ..conf import get_config

ACT_FOR_ANY_USER = "ilab_memory.act_for_any_user"


def user_id_from_request(request) -> str:
    """The authenticated user's primary key, as a string (the default ``USER_ID_RESOLVER``)."""
    return str(request.user.pk)


def resolve_user_id(request) -> str:
    """The request's own user_id, through ``USER_ID_RESOLVER`` (read at call time)."""
    resolver = get_config().USER_ID_RESOLVER
    if isinstance(resolver, str):
        resolver = import_string(resolver)
    return resolver(request)


def acting_user_id(request, requested: str | None) -> str:
    """The user_id a request acts for: its own, or ``requested`` when its user may act for anyone.

    Raises PermissionDenied (403) when another user_id is named without the permission. The
    value is validated later by the service it reaches, like any other input.
    """
    own = resolve_user_id(request)
    if requested is None or requested == own:
        return own
    if request.user.has_perm(ACT_FOR_ANY_USER):
        return requested
    raise PermissionDenied(
        _("Only accounts allowed to act for any user may name another user_id."),
        code="act_for_any_user_required",
    )
