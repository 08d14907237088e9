"""Query-string filters for the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters
from django.utils.translation import gettext_lazy as _

from ..models import Observation, Session, SessionStatus
from ..validation import normalize_topic_key


class SessionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=SessionStatus.choices)
    is_auto_generated = django_filters.BooleanFilter(
        help_text=_("true: synthetic summaries only; false: narrative or none.")
    )

    class Meta:
        model = Session
        fields = ["status", "is_auto_generated"]


class ObservationFilter(django_filters.FilterSet):
    type = django_filters.CharFilter()
    # A plain UUID filter, not a model choice: validating the id against every session in the
    # table would tell a caller whether another user's session exists.
    session = django_filters.UUIDFilter(field_name="session_id")
    topic_key = django_filters.CharFilter(method="filter_topic_key", help_text=_("Normalized like on save."))

    class Meta:
        model = Observation
        fields = ["type", "session", "topic_key"]

    def filter_topic_key(self, queryset, name, value):
        return queryset.filter(topic_key=normalize_topic_key(value))
