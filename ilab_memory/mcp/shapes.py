"""The tools' results, in the HTTP API's JSON shapes, and the JSON Schemas that describe them.

Results are built by the API's own response builders (``ilab_memory.api.responses``, checked
against its serializers), so a tool answers exactly what the matching endpoint answers. Their output schemas are derived from the
same serializer fields, so they cannot drift apart; the SDK's client validates every structured
result against them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rest_framework import serializers as drf

from ..api import responses
from ..api import serializers as s

# Shapes with no serializer in the API (it answers ``GET stats`` nowhere and ``DELETE`` with 204).
DELETE_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "hard": {"type": "boolean", "description": "true: the row, its history and index entry were erased."},
    },
    "required": ["id", "hard"],
}

STATS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user_id": {"type": "string"},
        "sessions": {"type": "integer", "minimum": 0},
        "active_sessions": {"type": "integer", "minimum": 0},
        "completed_sessions": {"type": "integer", "minimum": 0},
        "auto_summaries": {"type": "integer", "minimum": 0},
        "human_summaries": {"type": "integer", "minimum": 0},
        "observations": {"type": "integer", "minimum": 0, "description": "Live observations."},
        "deleted_observations": {"type": "integer", "minimum": 0},
        "revisions": {"type": "integer", "minimum": 0},
        "observations_by_type": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
    },
    "required": [
        "user_id", "sessions", "active_sessions", "completed_sessions", "auto_summaries", "human_summaries",
        "observations", "deleted_observations", "revisions", "observations_by_type",
    ],
}


def serializer_schema(serializer: drf.BaseSerializer) -> dict[str, Any]:
    """The JSON Schema of what ``serializer`` renders: every field is always present."""
    properties = {name: field_schema(field) for name, field in serializer.fields.items()}
    return {"type": "object", "properties": properties, "required": list(properties)}


def field_schema(field: drf.Field) -> dict[str, Any]:
    """The JSON Schema of one rendered serializer field (the field kinds the API's outputs use)."""
    if isinstance(field, drf.ListSerializer):
        schema = {"type": "array", "items": serializer_schema(field.child)}
    elif isinstance(field, drf.BaseSerializer):
        schema = serializer_schema(field)
    elif isinstance(field, drf.SerializerMethodField):
        method = getattr(field.parent, field.method_name)
        # The API documents these for drf-spectacular with @extend_schema_field.
        declared = getattr(method, "_spectacular_annotation", {}).get("field")
        schema = field_schema(declared) if isinstance(declared, drf.Field) else {}
    elif isinstance(field, drf.ChoiceField):
        schema = {"type": "string", "enum": [str(choice) for choice in field.choices]}
    elif isinstance(field, drf.UUIDField):
        schema = {"type": "string", "format": "uuid"}
    elif isinstance(field, drf.DateTimeField):
        schema = {"type": "string", "format": "date-time"}
    elif isinstance(field, drf.CharField):
        schema = {"type": "string"}
    elif isinstance(field, drf.BooleanField):
        schema = {"type": "boolean"}
    elif isinstance(field, drf.IntegerField):
        schema = {"type": "integer"}
        if field.min_value is not None:
            schema["minimum"] = field.min_value
    elif isinstance(field, drf.FloatField):
        schema = {"type": "number"}
    elif isinstance(field, drf.DictField):
        schema = {"type": "object"}
    elif isinstance(field, drf.JSONField):
        schema = {}
    else:
        raise TypeError(f"No JSON Schema for serializer field {type(field).__name__}")
    if getattr(field, "allow_null", False):
        if isinstance(schema.get("type"), str) and "enum" not in schema:
            schema = {**schema, "type": [schema["type"], "null"]}
        else:
            schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def listing_schema(key: str, item_serializer: drf.BaseSerializer) -> dict[str, Any]:
    """A list result wrapped in an object (structured content must be a JSON object)."""
    return {
        "type": "object",
        "properties": {key: {"type": "array", "items": serializer_schema(item_serializer)}},
        "required": [key],
    }


# ------------------------------------------------------------------------------------- renderers


# The API's own response builders: a tool answers exactly what the matching endpoint answers.
session_start = responses.session_start
session_record = responses.session_record
save_result = responses.save_result
observation_record = responses.observation_record
compacts = responses.compacts
timeline = responses.timeline


def plain(value) -> dict[str, Any]:
    """A frozen dataclass of ``ilab_memory.types`` (DeleteResult, MemoryStats) as a dict."""
    return dataclasses.asdict(value)


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {}


def output_schemas() -> dict[str, dict[str, Any]]:
    """Tool name → output schema (built once: serializers are fixed at import time)."""
    if not OUTPUT_SCHEMAS:
        session = serializer_schema(s.SessionRecordSerializer())
        record = serializer_schema(s.ObservationRecordSerializer())
        OUTPUT_SCHEMAS.update(
            {
                "mem_session_start": serializer_schema(s.SessionStartSerializer()),
                "mem_save": serializer_schema(s.SaveResultSerializer()),
                "mem_session_summary": session,
                "mem_session_end": session,
                "mem_search": listing_schema("results", s.ObservationCompactSerializer()),
                "mem_context": listing_schema("memories", s.ObservationCompactSerializer()),
                "mem_get_observation": record,
                "mem_update": record,
                "mem_delete": DELETE_RESULT_SCHEMA,
                "mem_timeline": serializer_schema(s.TimelineSerializer()),
                "mem_stats": STATS_SCHEMA,
            }
        )
    return OUTPUT_SCHEMAS
