"""Query-string filters for the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _

from ..models import Observation, Session, SessionStatus
from ..validation import normalize_topic_key


class PresentValuesFilterSet(django_filters.FilterSet):
    """A filter named in the query must carry a value: ``?status=`` is a 400, not "no filter"."""

    def is_valid(self):
        valid = super().is_valid()
        for name in self.filters:
            if self.data.get(name) == "":
                self.form.add_error(name, _("Must not be empty."))
                valid = False
        return valid


class StrictBooleanField(forms.Field):
    """``true``/``false`` (or 1/0); anything else is a 400 instead of being read as "no filter"."""

    VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_python(self, value):
        if value is None:
            return None
        try:
            return self.VALUES[str(value).lower()]
        except KeyError:
            raise forms.ValidationError(_("Must be true or false."), code="invalid") from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class SessionFilter(PresentValuesFilterSet):
    # Django's default message repeats the value, which may hold a private block.
    status = django_filters.ChoiceFilter(
        choices=SessionStatus.choices,
        error_messages={"invalid_choice": _("Must be 'active' or 'completed'.")},
    )
    is_auto_generated = StrictBooleanFilter(
        help_text=_("true: synthetic summaries only; false: narrative or none.")
    )

    class Meta:
        model = Session
        fields = ["status", "is_auto_generated"]


class ObservationFilter(PresentValuesFilterSet):
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
