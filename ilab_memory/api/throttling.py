"""Optional per-user throttling, configured by ``ILAB_MEMORY["API_THROTTLE_RATE"]``."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from ..conf import get_config
from .identity import resolve_user_id


class MemoryUserRateThrottle(SimpleRateThrottle):
    """One bucket per resolved user_id across all memory endpoints; off when the rate is None."""

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
        return self.cache_format % {"scope": self.scope, "ident": resolve_user_id(request)}
