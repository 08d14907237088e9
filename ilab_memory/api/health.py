"""``health/`` and ``metrics/``: what probes and Prometheus read, with no authentication.

Neither reads a user's data or answers any: counts, ages, times and the names of failing parts.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import health, metrics
from .errors import AppErrorMixin


class ProbeView(AppErrorMixin, APIView):
    """Open to probes and scrapers: no authentication, no throttling, JSON errors."""

    authentication_classes: list = []
    permission_classes: list = []
    renderer_classes = [JSONRenderer]
    throttle_classes: list = []


@extend_schema(exclude=True)  # for probes and operators, not for the clients generated from the schema
class HealthView(ProbeView):
    """200 when every part holds; 503 naming the parts that fail."""

    def get(self, request):
        report = health.check()
        body = {
            "status": "ok" if report.ok else "failing",
            "failing": report.failing,
            "parts": {part.name: {"ok": part.ok, **part.detail} for part in report.parts},
        }
        # A probe's answer is never cached on the way: each says how things are now.
        headers = {"Cache-Control": "no-store"}
        return Response(body, status=status.HTTP_200_OK if report.ok else status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers=headers)


@extend_schema(exclude=True)
class MetricsView(ProbeView):
    """Prometheus' text format; 404 when metrics are off or ``prometheus-client`` is missing."""

    def get(self, request):
        if not metrics.enabled():
            raise NotFound(_("Metrics are off: install ilab-memory[metrics] and leave the METRICS setting on."))
        body, content_type = metrics.exposition()
        return HttpResponse(body, content_type=content_type, headers={"Cache-Control": "no-store"})
