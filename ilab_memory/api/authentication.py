"""``Authorization: Bearer <token>``, what most HTTP clients and agent frameworks send, for the
same tokens as DRF's ``Authorization: Token <token>``.

DRF's own pattern: a ``TokenAuthentication`` subclass that changes only its ``keyword``. List it
after ``TokenAuthentication`` in ``DEFAULT_AUTHENTICATION_CLASSES``, so a request without
credentials is still told ``WWW-Authenticate: Token``.
"""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """The account's DRF token, sent as ``Authorization: Bearer <token>``."""

    keyword = "Bearer"

