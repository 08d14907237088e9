"""serializers.py: bodies checked for their shape only, and serializers derived from the declarations."""

import dataclasses

import pytest
from rest_framework.exceptions import ValidationError as DRFValidationError

from ilab_memory import types
from ilab_memory.api import serializers
from ilab_memory.validation import MEMORY_FIELDS


def test_a_body_is_checked_for_its_shape_and_its_values_passed_as_sent():
    body = {"title": "", "content": 5, "ttl": "soon"}  # values are the service's to judge
    assert serializers.body_fields(serializers.ObservationCreateInputSerializer, body) == body


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"content": "c"}, "title", "required"),
    ({"title": "t", "content": "c", "colour": "red"}, "colour", "unknown_field"),
])
def test_a_body_missing_a_required_field_or_naming_an_unknown_one_is_refused(body, field, code):
    with pytest.raises(DRFValidationError) as caught:
        serializers.body_fields(serializers.ObservationCreateInputSerializer, body)
    assert caught.value.detail[field][0].code == code


def test_the_save_and_update_bodies_are_the_declared_fields_after_who_and_where():
    declared = [field.name for field in MEMORY_FIELDS]
    assert list(serializers.ObservationCreateInputSerializer().fields) == ["user_id", "scope", *declared]
    update = serializers.ObservationUpdateInputSerializer().fields
    assert list(update) == ["user_id", "scope", *declared] and not any(f.required for f in update.values())


@pytest.mark.parametrize("record", [types.ObservationRecord, types.ObservationCompact, types.SessionRecord,
                                    types.ObservationRevisionRecord, types.MemoryStats, types.Timeline])
def test_a_record_serializer_has_the_records_fields_in_its_order(record):
    fields = serializers.record_serializer(record)().fields
    assert list(fields) == [field.name for field in dataclasses.fields(record)]
    assert serializers.record_serializer(record) is serializers.record_serializer(record)  # one component each
