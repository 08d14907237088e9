"""How an HTTP request becomes a user_id: the resolver, and acting for another user_id."""

from __future__ import annotations

from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied

from ..conf import get_config
from ..validation import clean_user_id

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


NOT_NAMED = object()  # the request names no user_id (a JSON null is named, and refused)


def acting_user_id(request, requested=NOT_NAMED) -> str:
    """The user_id a request acts for: its own, or ``requested`` when its user may act for anyone.

    Both are cleaned by ``validation.clean_user_id`` before they are compared (a bad one is the
    app's ValidationError, a 400), so the answer is the id every service would store. Raises
    PermissionDenied (403) when another user_id is named without the permission.
    """
    limit = get_config().MAX_USER_ID_CHARS
    own = clean_user_id(resolve_user_id(request), limit=limit)
    if requested is NOT_NAMED or (requested := clean_user_id(requested, limit=limit)) == own:
        return own
    if request.user.has_perm(ACT_FOR_ANY_USER):
        return requested
    raise PermissionDenied(
        _("Only accounts allowed to act for any user may name another user_id."),
        code="act_for_any_user_required",
    )
