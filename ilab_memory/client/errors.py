"""What ``MemoryClient`` raises besides the app's own exceptions (``ilab_memory.exceptions``),
which it raises as the facade does: the failures only a remote call can have."""

from __future__ import annotations

from ..exceptions import IlabMemoryError


class ApiError(IlabMemoryError):
    """The API answered with an error the facade has no exception for (``status``, ``code``)."""

    def __init__(self, status: int, code: str, detail: str):
        self.status = status
        self.code = code
        self.detail = detail
        super().__init__(f"HTTP {status} ({code}): {detail}")


class NotAuthenticated(ApiError, PermissionError):
    """401: the token is missing, unknown or of an inactive account."""


class AccessDenied(ApiError, PermissionError):
    """403: the account may not do this (``act_for_any_user_required``, ``scope_bound``, …)."""


class RateLimited(ApiError):
    """429: the account's request rate is over the site's throttle; ``retry_after`` in seconds."""

    def __init__(self, status: int, code: str, detail: str, retry_after: float | None):
        super().__init__(status, code, detail)
        self.retry_after = retry_after


class ServiceUnavailable(IlabMemoryError, ConnectionError):
    """The server could not be reached or did not answer in time (after any retries)."""

    code = "service_unavailable"
