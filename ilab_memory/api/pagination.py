"""Cursor pagination: stable pages while new rows arrive, no COUNT(*) over a user's history."""

from rest_framework.pagination import CursorPagination


class ObservationCursorPagination(CursorPagination):
    ordering = ("-updated_at", "-id")
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100


class SessionCursorPagination(CursorPagination):
    ordering = ("-started_at", "-id")
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100
