"""Cursor pagination: stable pages while new rows arrive, no COUNT(*) over a user's history."""

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination


class StrictCursorPagination(CursorPagination):
    """A malformed ``page_size`` is a 400, not silently the default; above the maximum it is capped."""

    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValidationError({self.page_size_query_param: [_("Must be a positive integer.")]})
        return min(value, self.max_page_size)

    def decode_cursor(self, request):
        """DRF checks a cursor's shape; its position must also be a timestamp (our orderings are),
        or a crafted cursor reaches the database as a bad datetime and fails there."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            try:
                valid = parse_datetime(cursor.position) is not None
            except (ValueError, TypeError):
                valid = False
            if not valid:
                raise NotFound(self.invalid_cursor_message)
        return cursor

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] = _("Rows per page; values above {n} are capped at {n}.").format(
                    n=self.max_page_size
                )
        return parameters


class ObservationCursorPagination(StrictCursorPagination):
    ordering = ("-updated_at", "-id")


class SessionCursorPagination(StrictCursorPagination):
    ordering = ("-started_at", "-id")
