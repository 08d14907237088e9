"""How an HTTP request becomes a user_id and a scope: the two resolvers the settings name
(``USER_ID_RESOLVER``, ``SCOPE_RESOLVER``), acting for another user_id, and an account bound to
one scope."""

from __future__ import annotations

import logging

from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied

from ..conf import get_config
from ..scopes import SHARED
from ..validation import clean_user_id

ACT_FOR_ANY_USER = "ilab_memory.act_for_any_user"

# Every request that acts for another user_id is logged here (INFO): who, for whom, what.
access_logger = logging.getLogger("ilab_memory.access")


def may_act_for_any_user(user) -> bool:
    """Whether ``user`` was granted ``ilab_memory.act_for_any_user`` on purpose (directly or
    through a group, as any permission, custom backends included).

    A superuser holds every permission implicitly; that is not enough here. An agent's token
    that leaked would read every user's memory, so an account acts for others only when the
    permission was given to it, superuser or not.
    """
    if not user.is_active or not user.has_perm(ACT_FOR_ANY_USER):
        return False
    if not user.is_superuser:
        return True
    from django.contrib.auth.models import Permission

    app_label, codename = ACT_FOR_ANY_USER.split(".")
    granted = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    return granted.filter(user=user).exists() or granted.filter(group__user=user).exists()


def _resolver(setting: str):
    """The callable a resolver setting names (a dotted path, or the callable), read at call time."""
    resolver = getattr(get_config(), setting)
    return import_string(resolver) if isinstance(resolver, str) else resolver


def user_id_from_request(request) -> str:
    """The authenticated user's primary key, as a string (the default ``USER_ID_RESOLVER``)."""
    return str(request.user.pk)


def resolve_user_id(request) -> str:
    """The request's own user_id, through ``USER_ID_RESOLVER``."""
    return _resolver("USER_ID_RESOLVER")(request)


def scope_from_account(request) -> str | None:
    """The scope ``ACCOUNT_SCOPES`` binds the request's account to, by username, or None
    (the default ``SCOPE_RESOLVER``)."""
    user = request.user
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return get_config().ACCOUNT_SCOPES.get(user.get_username())


NOT_NAMED = object()  # the request names no user_id (a JSON null is named, and refused)


def acting_scope(request, requested=NOT_NAMED, *, default=SHARED):
    """The scope a request acts in: the one it names (as sent: the services clean it), else
    ``default``; for a request ``SCOPE_RESOLVER`` binds to a scope, that scope. ``requested`` is a
    string, a list (a read's repeated parameter), or NOT_NAMED; None names nothing either.

    A bound account that names any other scope (``"*"``, a list, even the shared space it
    reads) gets PermissionDenied (403, ``scope_bound``): it acts in its own scope only, and its
    reads still see the shared space, as every read of a scope does.
    """
    if requested is None:  # a JSON null: the field's documented default, like leaving it out
        requested = NOT_NAMED
    bound = _resolver("SCOPE_RESOLVER")(request)
    if bound is None:
        return default if requested is NOT_NAMED else requested
    if requested is NOT_NAMED or (isinstance(requested, str) and requested == bound):
        return bound
    raise PermissionDenied(
        _("This account is bound to the scope '{scope}'; it may not name another scope.").format(scope=bound),
        code="scope_bound",
    )


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
    if may_act_for_any_user(request.user):
        access_logger.info(
            "account %r (pk %s) acted for user_id %r: %s %s", request.user.get_username(), request.user.pk,
            requested, getattr(request, "method", ""), getattr(request, "path", ""),
        )
        return requested
    # The caller's own id is named: the account learns whose memory its token reads, and what to do.
    raise PermissionDenied(
        _("This token belongs to user {user_id}; omit user_id or use an account allowed to act for any user.")
        .format(user_id=own),
        code="act_for_any_user_required",
    )
