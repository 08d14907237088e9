"""``health/``: the probe of a load balancer or an orchestrator, with no authentication.

It reads no user's data and answers none: counts, ages and the names of the parts that fail.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import health


@extend_schema(exclude=True)  # for probes and operators, not for the clients generated from the schema
class HealthView(APIView):
    """200 when every part holds; 503 naming the parts that fail."""

    authentication_classes: list = []
    permission_classes: list = []
    renderer_classes = [JSONRenderer]
    throttle_classes: list = []

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
