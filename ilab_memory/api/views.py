"""Thin views: a serializer checks the shape, a service or selector does the work.

Every view names its own permission, parser, renderer, throttle, pagination and filter classes,
so a host's DRF defaults can never open or reshape these endpoints; only authentication comes
from the host.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.urls import Resolver404, resolve
from django.utils.translation import gettext_lazy as _
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import BasePagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.viewsets import GenericViewSet

from .. import metrics, selectors, types
from ..access import NOT_NAMED, MemoryUserRateThrottle, acting_scope, acting_user_id
from ..conf import get_config
from ..encoding import encode
from ..exceptions import ValidationError
from ..models import Observation, Session
from ..scopes import ALL, SHARED, clean_read_reach
from ..services import erasure, export, imports
from ..services import observations as observation_services
from ..services import search as search_services
from ..services import sessions as session_services
from ..visibility import clean_window
from . import serializers
from .errors import AppErrorMixin, PayloadTooLarge
from .filters import ObservationFilter, SessionFilter
from .metadata import InputMetadata
from .pagination import ObservationCursorPagination, SessionCursorPagination
from .parsers import BoundedJSONParser, max_body_bytes
from .schema import COUNTS, READ_ERRORS, USER_ID_PARAMETER, WRITE_ERRORS, error_responses

# The service's names of the search's fields, as the API's query string spells them.
SEARCH_PARAMETERS = {"query": "q"}


if TYPE_CHECKING:  # a mixin of DRF views: the type checker reads it as one
    _View = GenericAPIView
else:
    _View = object


class MemoryAPIMixin(AppErrorMixin, _View):
    """What every memory endpoint shares: who may call, what it accepts, whom it acts for."""

    permission_classes = [IsAuthenticated]
    parser_classes = [BoundedJSONParser]
    renderer_classes = [JSONRenderer]
    throttle_classes = [MemoryUserRateThrottle]
    metadata_class = InputMetadata
    filter_backends: list = []
    pagination_class: type[BasePagination] | None = None
    # The body each write accepts, by viewset action or by HTTP method (plain views): what
    # ``validated_body`` checks and what an OPTIONS request describes.
    input_serializers: dict = {}

    def filter_queryset(self, queryset):
        # django-filter builds a form class and validates a form on every request; a query that
        # names none of the filters has nothing for it to do.
        filters = getattr(self, "filterset_class", None)
        if filters is None or any(name in self.request.query_params for name in filters.base_filters):
            return super().filter_queryset(queryset)
        return queryset

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        limit = max_body_bytes()
        if limit is not None and _content_length(request) > limit:
            raise PayloadTooLarge(limit)

    def validated_query(self, serializer_class) -> dict:
        """The query parameters checked by ``serializer_class``; 400 when malformed."""
        return serializers.query_values(serializer_class, self.request.query_params)

    def input_serializer_class(self, method: str | None):
        """The serializer of the body a ``method`` request to this route sends, or None."""
        method = (method or "").lower()
        return self.input_serializers.get(getattr(self, "action_map", {}).get(method, method))

    def validated_body(self) -> dict:
        """The request body's fields, after the checks only the face can make (400 otherwise): a
        JSON object, no field this endpoint does not accept, every required one present.

        The values reach the service as sent: it checks them (types, blanks, limits, private
        blocks), once, for every face.
        """
        return serializers.body_fields(self.input_serializer_class(self.request.method), self.request.data)

    def acting_user_id(self, body: dict | None = None) -> str:
        """The caller's user_id, or the one it names in the body or the query (403 if not allowed)."""
        if body is not None and "user_id" in body:
            return acting_user_id(self.request, body["user_id"])
        return acting_user_id(self.request, self.request.query_params.get("user_id", NOT_NAMED))

    def acting_scope(self, body: dict | None = None, *, default=SHARED):
        """The scope the request names in the body or the query (``?scope=a&scope=b`` is a list),
        else ``default``; a bound account's own scope (403 if it names another)."""
        if body is not None and body.get("scope") is not None:  # null: as if left out, the query may name it
            return acting_scope(self.request, body["scope"], default=default)
        values = self.request.query_params.getlist("scope")
        requested = NOT_NAMED if not values else values[0] if len(values) == 1 else values
        return acting_scope(self.request, requested, default=default)

    def acting(self, body: dict) -> tuple[str, object, dict]:
        """A write's user_id and scope, and the rest of its body (the service's fields)."""
        fields = {name: value for name, value in body.items() if name not in ("user_id", "scope")}
        return self.acting_user_id(body), self.acting_scope(body), fields

    def reach(self):
        """What a queryset-built read sees (``scopes.clean_read_reach``: a 400 for a bad scope)."""
        return clean_read_reach(self.acting_scope(), config=get_config())


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


# -------------------------------------------------------------------------------------- sessions


@extend_schema_view(
    list=extend_schema(
        summary=_("The caller's sessions, newest started first (cursor pages)"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer],
        responses={200: serializers.SessionRecordSerializer(many=True), **error_responses(*READ_ERRORS, 404)},
    ),
    retrieve=extend_schema(
        summary=_("One session"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer],
        # A session id is never "start", "summary" or "end": those paths are the actions'.
        responses={200: serializers.SessionRecordSerializer, **error_responses(*READ_ERRORS, 404, 405)},
    ),
)
class SessionViewSet(MemoryAPIMixin, GenericViewSet):
    """Sessions are owned by the server: clients start, summarize and end them, never name one."""

    queryset = Session.objects.none()
    serializer_class = serializers.SessionRecordSerializer
    pagination_class = SessionCursorPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = SessionFilter
    lookup_value_regex = "[^/]+"
    input_serializers = {
        "start": serializers.SessionStartInputSerializer,
        "summary": serializers.SessionSummaryInputSerializer,
        "end": serializers.SessionEndInputSerializer,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request user
            return Session.objects.none()
        sessions = Session.objects.for_user(self.acting_user_id()).filter(self.reach().q())
        return sessions.with_observation_count()

    def list(self, request):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        records = [types.session_record(session, session.observation_count) for session in page]
        return self.get_paginated_response(encode(records))

    def retrieve(self, request, pk=None):
        record = selectors.session_get(
            user_id=self.acting_user_id(), session_id=pk, scope=self.acting_scope()
        )
        return Response(encode(record))

    @extend_schema(
        summary=_("Start or reuse the caller's session (call it whenever the user shows up)"),
        request=serializers.SessionStartInputSerializer,
        responses={
            201: OpenApiResponse(serializers.SessionStartSerializer, description=_("A new session was opened.")),
            200: OpenApiResponse(serializers.SessionStartSerializer, description=_("The active session was reused.")),
            **error_responses(*WRITE_ERRORS),
        },
    )
    @action(detail=False, methods=["post"])
    def start(self, request):
        body = self.validated_body()
        result = session_services.session_start(
            user_id=self.acting_user_id(body), scope=self.acting_scope(body)
        )
        code = status.HTTP_201_CREATED if result.is_new else status.HTTP_200_OK
        return Response(encode(result), status=code)

    @extend_schema(
        summary=_("Store a narrative summary on the active session without closing it"),
        request=serializers.SessionSummaryInputSerializer,
        responses={200: serializers.SessionRecordSerializer, **error_responses(*WRITE_ERRORS)},
    )
    @action(detail=False, methods=["post"])
    def summary(self, request):
        body = self.validated_body()
        user_id, scope, fields = self.acting(body)
        record = session_services.session_summary(user_id=user_id, scope=scope, **fields)
        return Response(encode(record))

    @extend_schema(
        summary=_("Close the active session now"),
        request=serializers.SessionEndInputSerializer,
        responses={
            200: serializers.SessionRecordSerializer,
            **error_responses(*WRITE_ERRORS),
            404: OpenApiResponse(
                serializers.ErrorSerializer, description=_('No active session (code "no_active_session").')
            ),
        },
    )
    @action(detail=False, methods=["post"])
    def end(self, request):
        body = self.validated_body()
        user_id, scope, fields = self.acting(body)
        record = session_services.session_end(user_id=user_id, scope=scope, **fields)
        return Response(encode(record))


# ---------------------------------------------------------------------------------- observations


@extend_schema_view(
    list=extend_schema(
        summary=_("The caller's live observations, newest update first (cursor pages)"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer, serializers.PeriodQuerySerializer],
        responses={200: serializers.ObservationCompactSerializer(many=True), **error_responses(*READ_ERRORS, 404)},
    ),
    create=extend_schema(
        summary=_("Save an observation: create, revise by topic_key, or count a duplicate"),
        request=serializers.ObservationCreateInputSerializer,
        responses={
            201: OpenApiResponse(serializers.SaveResultSerializer, description=_('Created (action "created").')),
            200: OpenApiResponse(serializers.SaveResultSerializer, description=_('action "revised" or "duplicate".')),
            **error_responses(*WRITE_ERRORS),
        },
    ),
    retrieve=extend_schema(
        summary=_("One live observation, full content"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer],
        responses={200: serializers.ObservationRecordSerializer, **error_responses(*READ_ERRORS, 404)},
    ),
    partial_update=extend_schema(
        summary=_("Change some fields; the old version goes to the history"),
        request=serializers.ObservationUpdateInputSerializer,
        responses={200: serializers.ObservationRecordSerializer, **error_responses(*WRITE_ERRORS, 404)},
    ),
    destroy=extend_schema(
        summary=_("Soft delete, or hard delete with ?hard=true"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeTargetQuerySerializer, serializers.DeleteQuerySerializer],
        responses={204: None, **error_responses(*READ_ERRORS, 404)},
    ),
)
class ObservationViewSet(MemoryAPIMixin, GenericViewSet):
    """Typed memories of the caller; another user's id is a 404, never a 403."""

    queryset = Observation.objects.none()
    serializer_class = serializers.ObservationRecordSerializer
    pagination_class = ObservationCursorPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = ObservationFilter
    lookup_value_regex = "[^/]+"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    input_serializers = {
        "create": serializers.ObservationCreateInputSerializer,
        "partial_update": serializers.ObservationUpdateInputSerializer,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request user
            return Observation.objects.none()
        return Observation.objects.live_for_user(self.acting_user_id()).filter(self.reach().q())

    def list(self, request):
        period = self.validated_query(serializers.PeriodQuerySerializer)
        window = clean_window(period.get("since"), period.get("until"))
        preview_chars = get_config().PREVIEW_CHARS
        observations = self.filter_queryset(self.get_queryset()).filter(window.q())
        rows = selectors.with_content_head(observations, preview_chars=preview_chars)
        page = self.paginate_queryset(rows)
        items = [types.observation_compact(row, preview_chars=preview_chars) for row in page]
        return self.get_paginated_response(encode(items))

    def create(self, request):
        user_id, scope, fields = self.acting(self.validated_body())
        with metrics.timed("save", face="api"):
            result = observation_services.observation_save(user_id=user_id, scope=scope, **fields)
        code = status.HTTP_201_CREATED if result.action == observation_services.CREATED else status.HTTP_200_OK
        return Response(encode(result), status=code)

    def retrieve(self, request, pk=None):
        observation = selectors.observation_get(
            user_id=self.acting_user_id(), observation_id=pk, scope=self.acting_scope()
        )
        return Response(encode(types.observation_record(observation)))

    def partial_update(self, request, pk=None):
        user_id, scope, fields = self.acting(self.validated_body())
        record = observation_services.observation_update(
            user_id=user_id, observation_id=pk, scope=scope, **fields
        )
        return Response(encode(record))

    def destroy(self, request, pk=None):
        query = self.validated_query(serializers.DeleteQuerySerializer)
        observation_services.observation_delete(
            user_id=self.acting_user_id(), observation_id=pk, hard=query["hard"], scope=self.acting_scope()
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary=_("The observations written by the same session around this one"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer, serializers.TimelineQuerySerializer],
        responses={200: serializers.TimelineSerializer, **error_responses(*READ_ERRORS, 404)},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def timeline(self, request, pk=None):
        query = self.validated_query(serializers.TimelineQuerySerializer)
        timeline = selectors.observation_timeline(
            user_id=self.acting_user_id(), observation_id=pk, before=query["before"], after=query["after"],
            scope=self.acting_scope(),
        )
        return Response(encode(timeline))

    @extend_schema(
        summary=_("The earlier versions of a live observation, newest first"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer],
        responses={
            200: serializers.ObservationRevisionRecordSerializer(many=True), **error_responses(*READ_ERRORS, 404)
        },
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def revisions(self, request, pk=None):
        revisions = selectors.observation_revisions(
            user_id=self.acting_user_id(), observation_id=pk, scope=self.acting_scope()
        )
        return Response(encode(revisions))

    @extend_schema(
        summary=_("Full-text search over the caller's live observations, best first"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer, serializers.SearchQuerySerializer],
        responses={200: serializers.ObservationCompactSerializer(many=True), **error_responses(*READ_ERRORS)},
    )
    @action(detail=False, methods=["get"], filter_backends=[], pagination_class=None)
    def search(self, request):
        query = self.validated_query(serializers.SearchQuerySerializer)
        user_id, scope = self.acting_user_id(), self.acting_scope()
        try:
            with metrics.timed("search", face="api"):
                results = search_services.observation_search(
                    user_id=user_id, query=query["q"], type=query.get("type"), limit=query.get("limit"),
                    min_score=query.get("min_score"), scope=scope, since=query.get("since"), until=query.get("until"),
                    time_zone=query.get("time_zone"), now=query.get("now"),
                )
        except ValidationError as error:
            raise error.spelled(SEARCH_PARAMETERS) from None  # the service's "query" is the API's "q"
        return Response(encode(results))


# --------------------------------------------------------------------------------------- context


class ContextView(MemoryAPIMixin, APIView):
    """The start-of-session ranking, on demand."""

    @extend_schema(
        summary=_("The caller's memories ranked by ContextScore (read-only; touches no session)"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer, serializers.ContextQuerySerializer],
        responses={200: serializers.ObservationCompactSerializer(many=True), **error_responses(*READ_ERRORS)},
    )
    def get(self, request):
        query = self.validated_query(serializers.ContextQuerySerializer)
        config = get_config()
        memories = selectors.context_memories(
            user_id=self.acting_user_id(), limit=query.get("limit", config.CONTEXT_MEMORIES),
            scope=self.acting_scope(), since=query.get("since"), until=query.get("until"), config=config,
        )
        return Response(encode(memories))


class StatsView(MemoryAPIMixin, APIView):
    """Counts of what a scope reads, and the live memories per scope."""

    @extend_schema(
        summary=_("Counts of the caller's sessions and memories in what the scope reads"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeReadQuerySerializer],
        responses={200: serializers.MemoryStatsSerializer, **error_responses(*READ_ERRORS)},
    )
    def get(self, request):
        return Response(encode(selectors.stats(user_id=self.acting_user_id(), scope=self.acting_scope())))


# ------------------------------------------------------------------------------------------ data


class ExportView(MemoryAPIMixin, APIView):
    """A versioned export of everything the caller has (private blocks were never stored)."""

    @extend_schema(
        summary=_("Everything the caller has (every scope, or the one named), as a versioned JSON document"),
        parameters=[USER_ID_PARAMETER, serializers.ScopeExportQuerySerializer],
        responses={200: serializers.ExportDocumentSerializer, **error_responses(*READ_ERRORS)},
    )
    def get(self, request):
        # Streamed row by row, so a long history is never held in memory as one document. The
        # generator checks its arguments when it starts: its first piece is taken here, so a bad
        # scope is a 400, not a 200 whose body breaks off.
        chunks = export.user_export_json(
            user_id=self.acting_user_id(), scope=self.acting_scope(default=ALL)
        )
        head = next(chunks)
        return StreamingHttpResponse(streamed(request, itertools.chain([head], chunks)),
                                     content_type="application/json")


def streamed(request, chunks):
    """``chunks`` as the server can stream them: under ASGI an async iterator (Django reads a
    plain one whole before it sends a byte), under WSGI the iterator itself."""
    return _in_the_sync_thread(chunks) if isinstance(request._request, ASGIRequest) else chunks


async def _in_the_sync_thread(chunks):
    # Each chunk is read in the thread the view ran in: its rows come from that thread's connection.
    take, end = sync_to_async(next), object()
    while (chunk := await take(chunks, end)) is not end:
        yield chunk


class ImportView(MemoryAPIMixin, APIView):
    """Import an export document; the whole document is checked before anything is written."""

    input_serializers = {"post": serializers.ImportInputSerializer}

    @extend_schema(
        summary=_("Add the rows of an export document the caller lacks (idempotent), maybe into one scope"),
        request=serializers.ImportInputSerializer,
        responses={200: OpenApiResponse(COUNTS), **error_responses(*WRITE_ERRORS)},
    )
    def post(self, request):
        body = self.validated_body()
        counts = imports.user_import(
            user_id=self.acting_user_id(body), data=body["data"], scope=self.acting_scope(body, default=None)
        )
        return Response(counts)


class ForgetView(MemoryAPIMixin, APIView):
    """Erasure: every session, observation and revision of the user (or of one scope), in one transaction."""

    input_serializers = {"post": serializers.ForgetInputSerializer}

    @extend_schema(
        summary=_("Erase every row of the caller, or of one scope (confirm with the user_id)"),
        request=serializers.ForgetInputSerializer,
        responses={200: OpenApiResponse(COUNTS), **error_responses(*WRITE_ERRORS)},
    )
    def post(self, request):
        body = self.validated_body()
        user_id, scope = self.acting_user_id(body), self.acting_scope(body, default=ALL)
        if body["confirm"] != user_id:
            raise ValidationError(
                "confirm", "must equal the user_id being erased; nothing was erased.", code="confirmation_mismatch"
            )
        return Response(erasure.user_forget(user_id=user_id, scope=scope))


# ------------------------------------------------------------------------------------- not found


@extend_schema(exclude=True)
class NotFoundView(AppErrorMixin, APIView):
    """Any other path under the API's prefix, any method: a JSON 404, never Django's HTML page.

    No authentication runs first: a path that does not exist says nothing about anyone.
    """

    authentication_classes: list = []
    permission_classes: list = []
    renderer_classes = [JSONRenderer]
    throttle_classes: list = []

    def initial(self, request, *args, **kwargs):
        # The path is not echoed: like any value a caller sends, it may hold a private block.
        if not request.path_info.endswith("/") and _resolves_to_endpoint(f"{request.path_info}/"):
            # Django's APPEND_SLASH would redirect and drop a POST body (or fail in DEBUG).
            raise NotFound(_("No memory API endpoint at this path; add the trailing slash."))
        raise NotFound(_("No memory API endpoint at this path."))


def _resolves_to_endpoint(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return getattr(match.func, "view_class", None) is not NotFoundView
