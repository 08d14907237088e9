"""docs/scaling.md's list of what sharding by user_id must change is the schema's own.

Citus (and any sharding by ``user_id``) requires each primary key and unique constraint of a
sharded table, and each foreign key between two of them, to include the distribution column.
The page lists every one that does not; this test reads the models and fails on a missing or
an extra line, so the list cannot drift from the code.
"""

import re
from pathlib import Path

from django.apps import apps
from django.db import models

SCALING = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"
# Tables every user shares (no user_id): Citus keeps them whole on each node (reference tables).
SHARED_TABLES = {"EmbedderCalibration"}


def constraints_without_user_id() -> set[str]:
    """``Model: kind (columns)`` for each key of a table with ``user_id`` that lacks it."""
    found = set()
    for model in apps.get_app_config("ilab_memory").get_models():
        if model.__name__ in SHARED_TABLES:
            continue
        fields = {field.name: field for field in model._meta.concrete_fields}
        assert "user_id" in fields, f"{model.__name__} has no user_id: shard it or list it as shared"
        for field in fields.values():
            if field.primary_key and field.name != "user_id":
                found.add(f"{model.__name__}: primary key ({field.column})")
            elif field.unique and not field.primary_key:
                found.add(f"{model.__name__}: unique ({field.column})")
            if field.is_relation:
                found.add(f"{model.__name__}: foreign key ({field.column}) to {field.related_model.__name__}")
        for constraint in model._meta.constraints:
            if isinstance(constraint, models.UniqueConstraint) and "user_id" not in constraint.fields:
                columns = ", ".join(fields[name].column for name in constraint.fields)
                found.add(f"{model.__name__}: unique ({columns})")
    return found


def listed_in_docs() -> set[str]:
    section = SCALING.read_text().split("## Sharding by user_id", 1)[1].split("\n## ", 1)[0]
    return {match.group(1).replace("`", "") for match in re.finditer(r"^\| (`\w+`: [^|]+?) \|", section, re.MULTILINE)}


def test_every_key_that_lacks_user_id_is_listed_in_docs_scaling_and_nothing_else():
    assert listed_in_docs() == constraints_without_user_id()
