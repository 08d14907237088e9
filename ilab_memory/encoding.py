"""The JSON form of the values of ``types`` and of the app's errors, and the JSON Schema of each.

Every face answers in these shapes: the HTTP API's bodies, the MCP tools' structured results
and error results. A value's JSON is its dataclass fields in declaration order (ids and
timestamps are strings already); a score adds the kind it ranks by. Each shape's JSON Schema is
derived from the same fields' annotations, so a field added to a type is encoded and described
at once: the two cannot drift. The API's output serializers describe the same shapes for
OpenAPI; ``tests/test_encoding.py`` checks that they render these dicts and document these
schemas. No Django import.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from types import UnionType
from typing import TYPE_CHECKING, Any, Union

from .exceptions import IlabMemoryError, ValidationError
from .types import ContextScore, SearchScore, field_names
from .validation import MAX_TTL_SECONDS, NO_DEFAULT, TYPE_PATTERN, MemoryField

if TYPE_CHECKING:
    from .conf import Config

# What a score ranks, as its JSON says it.
SCORE_KINDS: dict[type, str] = {ContextScore: "context", SearchScore: "search"}

# What an annotation cannot say, by field name (the names mean the same in every shape).
CHOICES = {
    "action": ("created", "revised", "duplicate"),  # what a save did
    "status": ("active", "completed"),  # a session's
}
DESCRIPTIONS = {
    "breakdown": "The signals that produced the value.",
    "hard": "true: the row, its history and index entry were erased.",
    "observations": "Live observations.",
    "observations_by_scope": "Live observations per scope (\"\" is the shared space).",
    "scope": "A slug below the user (an agent's or a project's); \"\" is the user's shared space.",
    "waiting_for_vector": "Live observations not yet embedded by the current model (found by their words).",
}
UUID_FIELDS = frozenset({"id", "session_id"})
BLANK_ALLOWED = frozenset({"scope"})  # "" is the shared space; other text is never blank
AT_LEAST_ONE = frozenset({"revision_count", "duplicate_count"})  # other integers are counts from 0


def score_kind(score: ContextScore | SearchScore) -> str:
    try:
        return SCORE_KINDS[type(score)]
    except KeyError:
        raise TypeError(f"not a score: {type(score).__name__}") from None


def encode(value: Any) -> Any:
    """``value`` (a value of ``types``, a list of them, or a plain JSON value) as JSON-ready data."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if type(value) in SCORE_KINDS:
        return {"kind": score_kind(value), "value": float(value.value), "breakdown": dict(value.breakdown)}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return dict(value)  # metadata and counts: JSON already; a copy keeps the frozen value's own
    # A value of ilab_memory.types (field_names raises TypeError for anything else); mypy cannot
    # tell that from ``Any``, hence the ignore.
    return {name: encode(getattr(value, name)) for name in field_names(type(value))}  # type: ignore[arg-type]


def error(exc: IlabMemoryError) -> dict[str, Any]:
    """The body every face answers an error of the app with: ``detail`` and ``code``, and for bad
    input the field's messages under ``errors`` with the ``limit`` and ``size`` when known."""
    body: dict[str, Any] = {"detail": str(exc), "code": exc.code}
    if isinstance(exc, ValidationError):
        body["errors"] = {exc.field: [exc.message]}
        if exc.limit is not None:
            body["limit"] = exc.limit
        if exc.size is not None:
            body["size"] = exc.size
    return body


# -------------------------------------------------------------------------------- JSON Schemas

SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": sorted(SCORE_KINDS.values())},
        "value": {"type": "number"},
        "breakdown": {"type": "object", "description": DESCRIPTIONS["breakdown"]},
    },
    "required": ["kind", "value", "breakdown"],
    "additionalProperties": False,
}


@functools.cache
def schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of ``encode(value)`` for a value of the dataclass ``cls``: every field is
    always present, and nothing else."""
    hints = typing.get_type_hints(cls)
    properties = {
        field.name: _described(_annotation_schema(hints[field.name], field.name), field)
        for field in dataclasses.fields(cls)
    }
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def listing_schema(key: str, item: type) -> dict[str, Any]:
    """A list of ``item`` values under ``key`` (a tool's structured result must be a JSON object)."""
    return {
        "type": "object",
        "properties": {key: {"type": "array", "items": schema(item)}},
        "required": [key],
        "additionalProperties": False,
    }


def description(field: dataclasses.Field[Any]) -> str | None:
    """What a record's field is, in the words of every face: its own (``types.described``), else
    the words for every field of that name."""
    return field.metadata.get("description", DESCRIPTIONS.get(field.name))


def _described(schema: dict[str, Any], field: dataclasses.Field[Any]) -> dict[str, Any]:
    text = description(field)
    return {**schema, "description": text} if text is not None else schema


def _annotation_schema(annotation: Any, name: str) -> dict[str, Any]:
    if typing.get_origin(annotation) in (Union, UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        nullable = len(members) < len(typing.get_args(annotation))
        if all(member in SCORE_KINDS for member in members):
            inner = SCORE_SCHEMA
        elif len(members) == 1:
            inner = _annotation_schema(members[0], name)
        else:
            raise TypeError(f"No JSON Schema for {annotation!r}")
        if not nullable:
            return inner
        if isinstance(inner.get("type"), str) and "enum" not in inner:
            return {**inner, "type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}
    origin = typing.get_origin(annotation)
    if origin is list:
        (item,) = typing.get_args(annotation)
        return {"type": "array", "items": _annotation_schema(item, name)}
    if origin is dict:
        _, item = typing.get_args(annotation)
        if item is Any:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _annotation_schema(item, name)}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return schema(annotation)
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer", "minimum": 1 if name in AT_LEAST_ONE else 0}
    if annotation is float:
        return {"type": "number"}
    if annotation is str:
        if name in CHOICES:
            return {"type": "string", "enum": list(CHOICES[name])}
        if name in UUID_FIELDS:
            return {"type": "string", "format": "uuid"}
        if name.endswith("_at"):
            return {"type": "string", "format": "date-time"}
        return {"type": "string"}
    raise TypeError(f"No JSON Schema for {annotation!r}")


def memory_field_schema(field: MemoryField, config: Config, *, update: bool) -> dict[str, Any]:
    """The JSON Schema of what a save (or an update) takes for ``field``, its bound read from the
    settings: the MCP tools' input schemas are built from these."""
    nullable = field.nullable(update=update)
    if field.kind in ("text", "slug"):
        schema: dict[str, Any] = {"type": "string"}
        if field.kind == "slug":
            schema["pattern"] = f"^{TYPE_PATTERN.pattern}$"
            if config.OBSERVATION_TYPES is not None:
                schema["enum"] = list(config.OBSERVATION_TYPES)
        elif not nullable:
            schema["minLength"] = 1
        if field.limit is not None:
            schema["maxLength"] = getattr(config, field.limit)
    elif field.kind == "object":
        schema = {"type": "object"}
    elif field.kind == "moment":
        schema = {"type": "string"}
    elif field.kind == "seconds":
        schema = {"type": "integer", "minimum": 1, "maximum": MAX_TTL_SECONDS}
    else:
        raise TypeError(f"No JSON Schema for a field of kind {field.kind!r}")
    if nullable:
        schema["type"] = [schema["type"], "null"]
    if not update and field.default is not NO_DEFAULT and field.default is not None:
        schema["default"] = field.default
    words = field.words(update=update)
    if words is not None:
        schema["description"] = words
    return schema
