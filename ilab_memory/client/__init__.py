"""A Python client of the memory API, for services that are not the Django site.

``MemoryClient(base_url, token)`` has the facade's methods and signatures, returns the same
frozen values (``ilab_memory.types``) and raises the same exceptions (``ilab_memory.exceptions``),
plus ``errors``' for what only a remote call can fail on. Standard library only: importing it
imports no Django.
"""

from .errors import AccessDenied, ApiError, NotAuthenticated, RateLimited, ServiceUnavailable
from .memory import Identity, MemoryClient

__all__ = [
    "AccessDenied", "ApiError", "Identity", "MemoryClient", "NotAuthenticated", "RateLimited", "ServiceUnavailable",
]
