"""docs/contributing.md's recipe for a new optional field on a memory, walked on a scratch field.

A field ``source`` is declared where the recipe says (``validation.MEMORY_FIELDS`` and a record of
``types``), and every face that derives from the declarations is asked for it: the API's save and
update bodies and its record serializer, the MCP tools' input schemas, the records' JSON and JSON
Schema, the builder from rows, the remote client's decoding, the import's reading. None of them
is edited for it. The recipe's table itself is read: it names at most six library modules.
"""

import dataclasses
import re
import typing
from pathlib import Path

from ilab_memory import encoding, types
from ilab_memory.api import serializers
from ilab_memory.client.decode import decode
from ilab_memory.conf import get_config
from ilab_memory.mcp import tools
from ilab_memory.models import Observation
from ilab_memory.services import document
from ilab_memory.validation import MEMORY_FIELDS, UPDATABLE_FIELDS, MemoryField

ROOT = Path(__file__).resolve().parent.parent
SOURCE = MemoryField("source", "text", limit="MAX_TITLE_CHARS", default=None,
                     on_save="Where it came from.", on_update="Where it came from now.")
FIELDS = (*MEMORY_FIELDS, SOURCE)
HINTS = typing.get_type_hints(types.ObservationRecord)
ScratchRecord = dataclasses.make_dataclass(
    "ScratchRecord",
    [(field.name, HINTS[field.name], field) for field in dataclasses.fields(types.ObservationRecord)]
    + [("source", str | None, dataclasses.field(metadata=types.described("Where it came from.")))],
    frozen=True,
)


def test_the_api_bodies_take_the_declared_field():
    save = serializers.memory_input_serializer("ScratchSave", serializers.ScopedWriteSerializer, update=False,
                                               fields=FIELDS)().fields["source"]
    update = serializers.memory_input_serializer("ScratchUpdate", serializers.ActingUserSerializer, update=True,
                                                 fields=FIELDS)().fields["source"]
    assert (save.required, save.allow_null, save.default) == (False, True, None)
    assert (update.required, update.allow_null) == (False, True)


def test_the_mcp_tools_take_the_declared_field_with_its_bound_and_words():
    config = get_config()
    save = tools.memory_properties(config, update=False, fields=FIELDS)["source"]
    update = tools.memory_properties(config, update=True, fields=FIELDS)["source"]
    assert save == {"type": ["string", "null"], "maxLength": config.MAX_TITLE_CHARS,
                    "description": "Where it came from."}
    assert update["description"] == "Where it came from now."


def test_the_record_field_reaches_the_api_schema_the_json_and_the_client():
    field = serializers.record_serializer(ScratchRecord)().fields["source"]
    assert (type(field), field.allow_null, field.help_text) == (
        serializers.serializers.CharField, True, "Where it came from.")
    assert encoding.schema(ScratchRecord)["properties"]["source"] == {
        "type": ["string", "null"], "description": "Where it came from."}


def test_a_row_becomes_the_record_and_the_record_comes_back_from_json(mem, clock):
    saved = mem.mem_save("ana", "Title", "Content").observation
    row = Observation.objects.get(pk=saved.id)
    row.source = "a meeting"  # the column the recipe's model step adds
    record = types.from_row(ScratchRecord, row)
    assert record.source == "a meeting" and record.id == saved.id
    assert decode(ScratchRecord, encoding.encode(record)) == record


def test_the_import_reads_the_declared_field_and_the_export_takes_every_column():
    assert ("source", None) in document.read_as_saved(FIELDS)
    columns = {field.attname for field in Observation._meta.concrete_fields} - {"user_id", "dedupe_hash"}
    assert set(document.OBSERVATION_FIELDS) == columns
    assert "source" not in UPDATABLE_FIELDS  # the scratch field touched no shipped declaration


def test_the_recipe_names_at_most_six_library_modules_and_each_exists():
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    table = text[text.index("## A new optional field on a memory"):text.index("Then, derived")]
    modules = set()
    for row in re.findall(r"^\| \d+ \| (.+?) \|", table, re.MULTILINE):
        modules.update(name for name in re.findall(r"`([\w/]+\.py)`", row))
    assert modules, "the recipe's table names no module"
    for module in modules:
        assert (ROOT / "ilab_memory" / module).exists(), module
    assert len(modules) <= 6, sorted(modules)
