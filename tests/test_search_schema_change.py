"""The search index survives a migration that alters a field (SQLite rebuilds the table then)."""

from contextlib import contextmanager

import pytest
from django.db import connection, models

from ilab_memory.models import Observation


@contextmanager
def altered_type_field():
    """Alter ``Observation.type`` as a migration would (a table rebuild on SQLite), then undo it."""
    old = Observation._meta.get_field("type")
    new = models.CharField(max_length=41, default="manual")
    new.set_attributes_from_name("type")
    new.model = Observation
    with connection.schema_editor() as editor:
        editor.alter_field(Observation, old, new)
    try:
        yield
    finally:
        with connection.schema_editor() as editor:
            editor.alter_field(Observation, new, old)


@pytest.mark.django_db(transaction=True)
def test_index_follows_writes_after_a_field_is_altered(tmem):
    tmem.mem_save("u", "Before the migration", "kept in the index")
    with altered_type_field():
        created = tmem.mem_save("u", "After the migration", "written once the triggers were gone").observation
        assert {r.title for r in tmem.mem_search("u", "migration")} == {"After the migration", "Before the migration"}
        tmem.mem_delete("u", created.id, hard=True)
        assert [r.title for r in tmem.mem_search("u", "migration")] == ["Before the migration"]


@pytest.mark.django_db(transaction=True)
def test_migrate_signal_repairs_the_triggers(tmem):
    from ilab_memory.services.search import repair_after_migrate, sqlite_triggers_present

    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL alters columns in place; its trigger is never dropped")
    with altered_type_field():
        assert not sqlite_triggers_present(connection)
        repair_after_migrate(using="default")
        assert sqlite_triggers_present(connection)
