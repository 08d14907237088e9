"""DRF's own way of serving the API's observation reads, as its documentation builds them.

A ``ListAPIView`` with ``CursorPagination`` on the API's ordering and a ``RetrieveAPIView``,
each with a ``ModelSerializer`` of the API's fields, over the caller's live observations.
``urlpatterns`` puts them at ``/drf/observations/`` in front of the demo site's routes, so one
WSGI handler serves both. Import after ``django.setup()``.
"""

from __future__ import annotations

from django.urls import include, path
from rest_framework import serializers
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.pagination import CursorPagination

from ilab_memory.conf import get_config
from ilab_memory.models import Observation


class ObservationListSerializer(serializers.ModelSerializer):
    session_id = serializers.UUIDField(read_only=True)
    preview = serializers.SerializerMethodField()

    class Meta:
        model = Observation
        fields = ("id", "type", "title", "preview", "topic_key", "session_id", "updated_at")

    def get_preview(self, observation) -> str:
        return observation.content[: get_config().PREVIEW_CHARS]


class ObservationSerializer(serializers.ModelSerializer):
    session_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = Observation
        fields = ("id", "user_id", "session_id", "type", "title", "content", "topic_key", "metadata",
                  "revision_count", "duplicate_count", "redacted_blocks", "created_at", "updated_at",
                  "last_seen_at", "deleted_at")


class Pagination(CursorPagination):
    ordering = ("-updated_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 100


class CallersObservations:
    def get_queryset(self):
        return Observation.objects.filter(user_id=str(self.request.user.pk), deleted_at__isnull=True)


class ObservationList(CallersObservations, ListAPIView):
    serializer_class = ObservationListSerializer
    pagination_class = Pagination


class ObservationDetail(CallersObservations, RetrieveAPIView):
    serializer_class = ObservationSerializer


urlpatterns = [
    path("drf/observations/", ObservationList.as_view()),
    path("drf/observations/<uuid:pk>/", ObservationDetail.as_view()),
    path("", include("project.urls")),
]
