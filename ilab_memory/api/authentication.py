"""``Authorization: Bearer <token>``, what most HTTP clients and agent frameworks send, for the
same tokens as DRF's ``Authorization: Token <token>``.

DRF's own pattern: a ``TokenAuthentication`` subclass that changes only its ``keyword``. List it
after ``TokenAuthentication`` in ``DEFAULT_AUTHENTICATION_CLASSES``, so a request without
credentials is still told ``WWW-Authenticate: Token``.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """The account's DRF token, sent as ``Authorization: Bearer <token>``."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of ``BearerTokenAuthentication``: its own name, since
    drf-spectacular would otherwise give it DRF's ``tokenAuth`` with another prefix."""

    target_class = BearerTokenAuthentication
    name = "bearerTokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix=self.target.keyword)
