"""ilab_memory.services.search.index: the full-text index follows a migration that rebuilds the
table, and a SQLite connection has its terms table from the start."""

from contextlib import contextmanager

import pytest
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection, models, transaction

from ilab_memory.models import Observation


def migrated():
    """What ``migrate`` sends once its migrations ran: ``post_migrate``, which the app's repair receives."""
    emit_post_migrate_signal(verbosity=0, interactive=False, db=connection.alias)


@contextmanager
def altered_type_field():
    """Alter ``Observation.type`` as a migration would (a table rebuild on SQLite), then undo it
    as a migration would, ``post_migrate`` included."""
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
        migrated()


class TestAMigrationThatAltersAField:
    """The search index survives a migration that alters a field (SQLite rebuilds the table then)."""

    @pytest.mark.django_db(transaction=True)
    def test_index_follows_writes_after_a_migration_altered_a_field(self, tmem):
        tmem.mem_save("u", "Before the migration", "kept in the index")
        with altered_type_field():
            tmem.mem_save("u", "During the migration", "written while the table had no triggers")
            if connection.vendor == "sqlite":  # the rebuilt table lost its triggers until post_migrate
                assert {r.title for r in tmem.mem_search("u", "migration")} == {"Before the migration"}
            migrated()
            created = tmem.mem_save("u", "After the migration", "written with the triggers back").observation
            assert {r.title for r in tmem.mem_search("u", "migration")} == {
                "After the migration", "During the migration", "Before the migration"}
            tmem.mem_delete("u", created.id, hard=True)
            assert {r.title for r in tmem.mem_search("u", "migration")} == {
                "During the migration", "Before the migration"}

    @pytest.mark.django_db(transaction=True)
    def test_migrate_signal_repairs_the_triggers(self, tmem):
        from ilab_memory.services.search.index import repair_after_migrate
        from ilab_memory.services.search.sqlite import sqlite_triggers_present

        if connection.vendor != "sqlite":
            pytest.skip("PostgreSQL alters columns in place; its trigger is never dropped")
        with altered_type_field():
            assert not sqlite_triggers_present(connection)
            repair_after_migrate(using="default")
            assert sqlite_triggers_present(connection)


@pytest.mark.django_db(transaction=True)
def test_a_sqlite_connection_has_its_terms_table_before_its_first_search(tmem):
    """The vocabulary table lives in the connection's temp schema, made as the connection opens
    (outside any transaction): the first search of a new connection finds it, and a search
    rolled back with its transaction does not take it away."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's terms table")
    tmem.mem_save("alice", "Deploy checklist", "Migrations first.")
    connection.close()
    with pytest.raises(RuntimeError), transaction.atomic():
        assert [r.title for r in tmem.mem_search("alice", "deploy")] == ["Deploy checklist"]
        raise RuntimeError("roll back")
    assert [r.title for r in tmem.mem_search("alice", "deploy")] == ["Deploy checklist"]
