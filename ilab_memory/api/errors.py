"""One error shape, ``{"detail", "code"}``, for the app's own exceptions and DRF's.

The app's exceptions are mapped here, in the views, so the host's ``EXCEPTION_HANDLER`` stays in
charge of everything else; its answers only gain a ``code`` when they lack one.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from .. import encoding, exceptions

NOT_FOUND_ERRORS = (exceptions.NoActiveSession, exceptions.ObservationNotFound, exceptions.SessionNotFound)


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("The request body is larger than {limit} bytes.")
    default_code = "payload_too_large"

    def __init__(self, limit: int):
        super().__init__(self.default_detail.format(limit=limit))


def app_error_response(exc: exceptions.IlabMemoryError) -> Response | None:
    """The HTTP answer for one of the app's own exceptions; None for anything else."""
    if isinstance(exc, exceptions.ValidationError):
        return Response(encoding.error(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, NOT_FOUND_ERRORS):
        return Response(encoding.error(exc), status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, exceptions.Conflict):
        return Response(encoding.error(exc), status=status.HTTP_409_CONFLICT)
    return None


def with_error_shape(response: Response, exc: Exception) -> Response:
    """Give a DRF error answer the ``detail``/``code`` keys, keeping field errors under ``errors``."""
    data = response.data
    if not isinstance(exc, APIException) or not isinstance(data, (dict, list)):
        return response
    # A detail that is text: field errors keyed by a field a caller named "detail" are a list.
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        if "code" not in data:
            codes = exc.get_codes()
            data["code"] = codes.get("detail", exc.default_code) if isinstance(codes, dict) else codes
        return response
    errors = data if isinstance(data, dict) else {"non_field_errors": data}
    response.data = {"detail": str(_("Invalid input.")), "code": "invalid", "errors": errors}
    return response


class AppErrorMixin:
    """Maps ``ilab_memory.exceptions`` to HTTP; defers everything else to the host's handler."""

    def handle_exception(self, exc):
        response = app_error_response(exc) if isinstance(exc, exceptions.IlabMemoryError) else None
        if response is not None:
            return response
        return with_error_shape(super().handle_exception(exc), exc)
