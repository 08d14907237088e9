"""The framework's floor over HTTP: bare DRF views served by the same server as the demo site.

``benchmarks.perf_http_floor:application`` is the demo site's WSGI application with two more
routes in front of it, so the floor and every memory endpoint run in the same gunicorn workers,
with the same middleware, the host's authentication classes (token first) and a database
connection kept across requests:

* ``GET /floor/ok/``: an ``APIView`` with ``IsAuthenticated`` answering ``{"ok": true}``: the
  token lookup, DRF's request wrapping and JSON rendering, and nothing else;
* ``POST /floor/body/``: the same, reading a small JSON body (unique per request in the load
  script) and answering two of its fields: what parsing a body adds;
* ``GET /floor/list/?page_size=10``: the caller's page of observations the way DRF's own
  documentation builds a list: a ``ListAPIView`` with ``CursorPagination`` on the same ordering
  and a ``ModelSerializer`` of the same fields (the preview cut from the same head of the
  content, so no more than the app reads is read). What the framework itself costs for the work
  of ``GET observations/``.

A memory endpoint's throughput divided by the floor's is the share of the framework's own limit
the endpoint reaches (issue 19).
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.db.models.functions import Substr  # noqa: E402
from django.urls import include, path  # noqa: E402
from rest_framework import serializers  # noqa: E402
from rest_framework.generics import ListAPIView  # noqa: E402
from rest_framework.pagination import CursorPagination  # noqa: E402
from rest_framework.parsers import JSONParser  # noqa: E402
from rest_framework.permissions import IsAuthenticated  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from ilab_memory.conf import get_config  # noqa: E402
from ilab_memory.models import Observation  # noqa: E402
from ilab_memory.types import preview  # noqa: E402


class FloorView(APIView):
    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]

    def get(self, request):
        return Response({"ok": True})


class FloorBodyView(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]

    def post(self, request):
        return Response({"ok": True, "title": request.data.get("title")})


class FloorPagination(CursorPagination):
    ordering = ("-updated_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 100


class FloorCompactSerializer(serializers.ModelSerializer):
    preview = serializers.SerializerMethodField()

    class Meta:
        model = Observation
        fields = ("id", "type", "title", "preview", "topic_key", "session_id", "updated_at")

    def get_preview(self, observation) -> str:
        return preview(observation.content_head, get_config().PREVIEW_CHARS)


class FloorListView(ListAPIView):
    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]
    serializer_class = FloorCompactSerializer
    pagination_class = FloorPagination

    def get_queryset(self):
        head = Substr("content", 1, get_config().PREVIEW_CHARS + 1)
        return (
            Observation.objects.filter(user_id=str(self.request.user.pk), deleted_at__isnull=True)
            .only("id", "type", "title", "topic_key", "session_id", "updated_at")
            .annotate(content_head=head)
        )


urlpatterns = [
    path("floor/ok/", FloorView.as_view()),
    path("floor/body/", FloorBodyView.as_view()),
    path("floor/list/", FloorListView.as_view()),
    path("", include("project.urls")),
]


class FloorHandler(WSGIHandler):
    """The demo site's handler, resolving against this module's routes (the site's settings stay
    as they are: ``request.urlconf`` is Django's own per-request override)."""

    def get_response(self, request):
        request.urlconf = __name__
        return super().get_response(request)


application = FloorHandler()
