"""OpenAPI pieces shared by the views: the user_id parameter and the documented error answers."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from .authentication import BearerTokenAuthentication
from .serializers import ErrorSerializer

USER_ID_PARAMETER = OpenApiParameter(
    "user_id",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    required=False,
    description=(
        "Act for this user_id instead of the caller's own. Needs the "
        "`ilab_memory.act_for_any_user` permission, else 403."
    ),
)

# Rows per kind, e.g. ``{"sessions": 2, "observations": 5, "revisions": 1, "vectors": 5}``.
COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}

_MEANINGS = {
    400: "Invalid input: `errors` maps each field to its messages.",
    401: "Not authenticated.",
    403: "Not allowed: another user_id without the permission, or a scope other than the account's own.",
    404: "Not found, or not yours.",
    405: "The id is the name of an action (`start`, `summary`, `end`), which takes POST only.",
    409: "Concurrent writes to the same rows won every retry; nothing was written. Try again.",
    413: "Request body larger than the site allows.",
    415: "Body is not JSON.",
    429: "Throttled.",
}

READ_ERRORS = (400, 401, 403, 429)
WRITE_ERRORS = (400, 401, 403, 409, 413, 415, 429)


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    return {s: OpenApiResponse(ErrorSerializer, description=_MEANINGS[s]) for s in statuses}


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of ``BearerTokenAuthentication``: its own name, since
    drf-spectacular would otherwise give it DRF's ``tokenAuth`` with another prefix."""

    target_class = BearerTokenAuthentication
    name = "bearerTokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix=self.target.keyword)
