"""``ilab_memory.encoding`` and the output serializers describe the same shapes.

The views answer with ``encoding.encode`` (and MCP's tools too); the serializers are the
OpenAPI description. Both are checked here against each other: the bodies, field for field and
in order, and the schemas, property for property.
"""

import json

import pytest
from drf_spectacular.generators import SchemaGenerator

from ilab_memory import ILabMemory, encoding, types
from ilab_memory.api import serializers
from ilab_memory.exceptions import ObservationNotFound, ValidationError
from ilab_memory.models import SessionStatus
from ilab_memory.services import observations


def rendered(value) -> str:
    """JSON text, keys in the order they come: equal texts mean equal bodies, field order too."""
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture
def records(db):
    memory = ILabMemory()
    memory.mem_session_start("u1")
    first = memory.mem_save("u1", "Deploy notes", "We deploy with <private>k</private> blue-green", metadata={"a": [1]})
    memory.mem_save("u1", "Topic", "first version", topic_key="deploy/plan")
    revised = memory.mem_save("u1", "Topic", "second version", topic_key="deploy/plan")
    memory.mem_session_end("u1", "a summary")
    start = memory.mem_session_start("u1")
    return {
        "start": start,
        "save": first,
        "revised": revised,
        "session": memory.mem_session_end("u1"),
        "search": memory.mem_search("u1", "deploy"),
        "context": memory.mem_context("u1"),
        "timeline": memory.mem_timeline("u1", first.observation.id),
        "revisions": memory.mem_revisions("u1", revised.observation.id),
        "stats": memory.mem_stats("u1", scope="*"),
    }


def test_every_encoded_value_is_what_its_serializer_renders(records):
    assert records["start"].sessions_context and records["start"].memories
    assert records["search"] and records["context"] and records["revisions"]
    pairs = [
        (records["start"], serializers.SessionStartSerializer(records["start"]).data),
        (records["save"], serializers.SaveResultSerializer(records["save"]).data),
        (records["revised"], serializers.SaveResultSerializer(records["revised"]).data),
        (records["save"].observation, serializers.ObservationRecordSerializer(records["save"].observation).data),
        (records["session"], serializers.SessionRecordSerializer(records["session"]).data),
        (records["search"], serializers.ObservationCompactSerializer(records["search"], many=True).data),
        (records["context"], serializers.ObservationCompactSerializer(records["context"], many=True).data),
        (records["timeline"], serializers.TimelineSerializer(records["timeline"]).data),
        (records["revisions"], serializers.ObservationRevisionRecordSerializer(records["revisions"], many=True).data),
        (records["stats"], serializers.MemoryStatsSerializer(records["stats"]).data),
    ]
    for value, serialized in pairs:
        assert rendered(encoding.encode(value)) == rendered(serialized)


def test_a_compact_without_a_score_encodes_null(records):
    compact = records["timeline"].anchor
    assert compact.score is None
    assert rendered(encoding.encode(compact)) == rendered(serializers.ObservationCompactSerializer(compact).data)


# ------------------------------------------------------------------------------------- schemas


def canonical(schema: dict, components: dict) -> dict:
    """A schema reduced to what both descriptions state: types (with null), format, enum,
    minimum, properties, required, items and typed additional properties."""
    nullable = False
    while "$ref" in schema or ("allOf" in schema and len(schema["allOf"]) == 1):
        nullable = nullable or schema.get("nullable", False)
        schema = components[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema["allOf"][0]
    schema = {**schema, "nullable": nullable or schema.get("nullable", False)}
    if "anyOf" in schema:  # JSON Schema's way of saying nullable
        (inner,) = [member for member in schema["anyOf"] if member != {"type": "null"}]
        return {**canonical(inner, components), "null": True}
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    result = {
        "type": next(kind for kind in kinds if kind != "null"),
        "null": "null" in kinds or schema.get("nullable", False),
    }
    for key in ("enum", "minimum"):
        if key in schema:
            result[key] = list(schema[key]) if key == "enum" else schema[key]
    if schema.get("format") in ("uuid", "date-time"):
        result["format"] = schema["format"]
    if "properties" in schema:
        result["properties"] = {name: canonical(sub, components) for name, sub in schema["properties"].items()}
        result["required"] = sorted(schema.get("required", []))
    if "items" in schema:
        result["items"] = canonical(schema["items"], components)
    if schema.get("additionalProperties"):  # {} and False both say nothing about a value's type
        result["additionalProperties"] = canonical(schema["additionalProperties"], components)
    return result


@pytest.fixture(scope="module")
def openapi_components():
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


@pytest.mark.parametrize(
    ("value_type", "component"),
    [
        (types.SessionStartResponse, "SessionStart"),
        (types.SaveResult, "SaveResult"),
        (types.ObservationRecord, "ObservationRecord"),
        (types.ObservationCompact, "ObservationCompact"),
        (types.SessionRecord, "SessionRecord"),
        (types.SessionSummaryCompact, "SessionSummaryCompact"),
        (types.Timeline, "Timeline"),
        (types.ObservationRevisionRecord, "ObservationRevisionRecord"),
        (types.MemoryStats, "MemoryStats"),
    ],
)
def test_every_schema_is_what_the_openapi_description_says(openapi_components, value_type, component):
    documented = canonical({"$ref": f"#/components/schemas/{component}"}, openapi_components)
    assert canonical(encoding.schema(value_type), openapi_components) == documented


def test_the_export_document_schema_names_the_fields_the_document_has():
    """The export document is built by services/document.py, not by a serializer: its schema's
    serializers list exactly the document's fields, in its order."""
    from ilab_memory.services import document

    described = {serializers.ExportDocumentSerializer: document.DOCUMENT_FIELDS,
                 serializers.ExportSessionSerializer: document.SESSION_FIELDS,
                 serializers.ExportObservationSerializer: document.OBSERVATION_FIELDS,
                 serializers.ExportRevisionSerializer: document.REVISION_FIELDS}
    for serializer, fields in described.items():
        assert sorted(serializer().fields) == sorted(fields), serializer.__name__


def json_schema(node):
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable: true`` becomes a null alternative."""
    if isinstance(node, dict):
        if node.get("nullable"):
            return {"anyOf": [json_schema({k: v for k, v in node.items() if k != "nullable"}), {"type": "null"}]}
        return {key: json_schema(value) for key, value in node.items()}
    if isinstance(node, list):
        return [json_schema(value) for value in node]
    return node


def test_every_version_the_import_reads_is_valid_for_its_schema_and_accepted(openapi_components, db):
    """A document of each readable version, with a revision, matches the import's request schema
    (what the TypeScript types are made of) and the import takes it; the export answers with its
    own schema."""
    import jsonschema

    mem = ILabMemory()
    mem.mem_session_start("writer")
    mem.mem_save("writer", "Plan", "First plan.", topic_key="plan")
    mem.mem_save("writer", "Plan", "Second plan.", topic_key="plan")
    current = json.loads(json.dumps(mem.mem_export("writer")))
    assert current["revisions"]
    version_2 = {**current, "version": 2,
                 "observations": [{k: v for k, v in o.items() if k not in ("happened_at", "expires_at")}
                                  for o in current["observations"]],
                 "revisions": [{k: v for k, v in r.items() if k != "happened_at"} for r in current["revisions"]]}
    version_1 = {**version_2, "version": 1,
                 "sessions": [{k: v for k, v in row.items() if k != "scope"} for row in version_2["sessions"]],
                 "observations": [{k: v for k, v in row.items() if k != "scope"} for row in version_2["observations"]]}
    components = {"components": {"schemas": json_schema(openapi_components)}}
    request = jsonschema.Draft7Validator({"$ref": "#/components/schemas/ImportInputRequest", **components})
    answer = jsonschema.Draft7Validator({"$ref": "#/components/schemas/ExportDocument", **components})
    assert list(answer.iter_errors(current)) == []
    for document in (version_1, version_2, current):
        assert [error.message for error in request.iter_errors({"data": document})] == []
        mem.mem_forget_user("writer")  # ids are kept: each version comes back into an empty memory
        counts = mem.mem_import("writer", document)
        assert (counts["observations_created"], counts["revisions_created"]) == (1, 1)


def test_the_choices_are_the_models_and_the_services():
    assert encoding.CHOICES["status"] == tuple(SessionStatus.values)
    assert encoding.CHOICES["action"] == (observations.CREATED, observations.REVISED, observations.DUPLICATE)


def test_every_shape_without_a_serializer_has_its_fields_in_its_schema():
    """Shapes only MCP answers with (the API answers a delete with 204)."""
    value = types.DeleteResult(id="00000000-0000-4000-8000-000000000000", hard=True)
    schema = encoding.schema(type(value))
    assert list(encoding.encode(value)) == list(schema["properties"]) == schema["required"]
    waiting = encoding.schema(types.MemoryStats)["properties"]["waiting_for_vector"]
    assert (waiting["type"], waiting["minimum"]) == ("integer", 0)


# -------------------------------------------------------------------------------------- errors


def test_error_bodies_are_what_the_error_serializer_documents():
    documented = set(serializers.ErrorSerializer().fields)
    bodies = [
        encoding.error(ValidationError.too_long("title", limit=3, size=5)),
        encoding.error(ObservationNotFound("No such observation.")),
    ]
    assert bodies[0] == {"detail": "title: is 5 characters long; the limit is 3 characters.", "code": "max_length",
                         "errors": {"title": ["is 5 characters long; the limit is 3 characters."]},
                         "limit": 3, "size": 5}
    assert bodies[1] == {"detail": "No such observation.", "code": "observation_not_found"}
    assert all(set(body) <= documented for body in bodies)
