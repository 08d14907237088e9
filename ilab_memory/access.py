"""Who an HTTP request is, and whom and where it acts, by the same rules for the API and MCP over
HTTP: its token (``Token`` or ``Bearer``), its user_id (its own, or another it may act for), its
scope (its account's binding, else the one it names) and its per-user rate. What the site
decides comes from the adapter (``adapter.py``).

DRF's: the request is DRF's, and a refusal is DRF's ``PermissionDenied`` or ``Throttled``,
which both faces answer in the one ``{"detail", "code"}`` body.
"""

from __future__ import annotations

import logging

from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.throttling import SimpleRateThrottle

from .adapter import get_adapter
from .conf import get_config
from .scopes import SHARED
from .validation import clean_user_id

# Every request that acts for another user_id is logged here (INFO): who, for whom, what.
access_logger = logging.getLogger("ilab_memory.access")

NOT_NAMED = object()  # the request names no user_id (a JSON null is named, and refused)


def acting_scope(request, requested=NOT_NAMED, *, default=SHARED):
    """The scope a request acts in: the one it names (as sent: the services clean it), else
    ``default``; for a request the adapter binds to a scope (``scope_of``), that scope.
    ``requested`` is a string, a list (a read's repeated parameter), or NOT_NAMED; None names
    nothing either.

    A bound account that names any other scope (``"*"``, a list, even the shared space it
    reads) gets PermissionDenied (403, ``scope_bound``): it acts in its own scope only, and its
    reads still see the shared space, as every read of a scope does.
    """
    if requested is None:  # a JSON null: the field's documented default, like leaving it out
        requested = NOT_NAMED
    bound = get_adapter().scope_of(request)
    if bound is None:
        return default if requested is NOT_NAMED else requested
    if requested is NOT_NAMED or (isinstance(requested, str) and requested == bound):
        return bound
    raise PermissionDenied(
        _("This account is bound to the scope '{scope}'; it may not name another scope.").format(scope=bound),
        code="scope_bound",
    )


def acting_user_id(request, requested=NOT_NAMED) -> str:
    """The user_id a request acts for: its own (``user_id_of``), or ``requested`` when its user
    may act for anyone (``may_act_for_any_user``).

    Both are cleaned by ``validation.clean_user_id`` before they are compared (a bad one is the
    app's ValidationError, a 400), so the answer is the id every service would store. Raises
    PermissionDenied (403) when another user_id is named without the permission.
    """
    adapter = get_adapter()
    limit = get_config().MAX_USER_ID_CHARS
    own = clean_user_id(adapter.user_id_of(request), limit=limit)
    if requested is NOT_NAMED or (requested := clean_user_id(requested, limit=limit)) == own:
        return own
    if adapter.may_act_for_any_user(request.user):
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


class MemoryUserRateThrottle(SimpleRateThrottle):
    """One bucket per request's own user_id across the API and MCP; off while
    ``ILAB_MEMORY["API_THROTTLE_RATE"]`` is None."""

    scope = "ilab_memory"

    def __init__(self):
        # The rate is read per request (not at import time) so settings overrides apply.
        pass

    def allow_request(self, request, view):
        self.rate = get_config().API_THROTTLE_RATE
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None  # unauthenticated requests are refused before they cost anything
        return self.cache_format % {"scope": self.scope, "ident": get_adapter().user_id_of(request)}


class BearerTokenAuthentication(TokenAuthentication):
    """The account's DRF token sent as ``Authorization: Bearer <token>``, what most HTTP clients
    and agent frameworks send. DRF's own pattern: a ``TokenAuthentication`` subclass that changes
    only its ``keyword``. List it after ``TokenAuthentication`` in ``DEFAULT_AUTHENTICATION_CLASSES``,
    so a request without credentials is still told ``WWW-Authenticate: Token``."""

    keyword = "Bearer"
