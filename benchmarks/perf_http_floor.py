"""The framework's floor over HTTP: bare DRF views served by the same server as the demo site.

``benchmarks.perf_http_floor:application`` is the demo site's WSGI application with two more
routes in front of it, so the floor and every memory endpoint run in the same gunicorn workers,
with the same middleware, the host's authentication classes (token first) and a database
connection kept across requests:

* ``GET /floor/ok/``: an ``APIView`` with ``IsAuthenticated`` answering ``{"ok": true}``: the
  token lookup, DRF's request wrapping and JSON rendering, and nothing else;
* ``POST /floor/body/``: the same, reading a small JSON body (unique per request in the load
  script) and answering two of its fields: what parsing a body adds.

A memory endpoint's throughput divided by the floor's is the share of the framework's own limit
the endpoint reaches (issue 19).
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.urls import include, path  # noqa: E402
from rest_framework.parsers import JSONParser  # noqa: E402
from rest_framework.permissions import IsAuthenticated  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402


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


urlpatterns = [
    path("floor/ok/", FloorView.as_view()),
    path("floor/body/", FloorBodyView.as_view()),
    path("", include("project.urls")),
]


class FloorHandler(WSGIHandler):
    """The demo site's handler, resolving against this module's routes (the site's settings stay
    as they are: ``request.urlconf`` is Django's own per-request override)."""

    def get_response(self, request):
        request.urlconf = __name__
        return super().get_response(request)


application = FloorHandler()
