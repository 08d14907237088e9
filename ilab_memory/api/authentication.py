"""``Authorization: Bearer <token>`` for the API: ``BearerTokenAuthentication``, kept with the
rules both HTTP faces share (``ilab_memory.access``) and named here, the path sites list in
``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``."""

from ..access import BearerTokenAuthentication

__all__ = ["BearerTokenAuthentication"]
