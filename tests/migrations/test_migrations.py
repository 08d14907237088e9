"""Migrations are shipped, match the models, hold their own schema statements and run both ways."""

import ast
from importlib import import_module
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from ilab_memory import vectors
from ilab_memory.models import OBSERVATION_TABLE
from ilab_memory.services.search.index import index_rebuild

MIGRATIONS = Path(__file__).resolve().parents[2] / "ilab_memory" / "migrations"


@pytest.mark.django_db
def test_no_missing_migrations():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=StringIO())
    assert "No changes detected" in out.getvalue()


def test_migrations_import_only_django_and_the_standard_library():
    """A migration runs the statements it was written with: none comes from the live code,
    whose statements may change after the migration has run on a site."""
    for path in sorted(MIGRATIONS.glob("0*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["(relative)"]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in {"django", "logging", "struct", "uuid"}, (path.name, name)


def index_schema() -> dict:
    """The search index's objects as the database describes them, by name."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT type || ' ' || name, sql FROM sqlite_master "
                           "WHERE name LIKE 'ilab_memory_search%' OR tbl_name LIKE 'ilab_memory_search%'")
            return dict(cursor.fetchall())
        cursor.execute("SELECT 'function ' || proname, pg_get_functiondef(oid) FROM pg_proc "
                       "WHERE proname LIKE 'ilab_memory_search%'")
        found = dict(cursor.fetchall())
        cursor.execute("SELECT 'trigger ' || tgname, pg_get_triggerdef(oid) FROM pg_trigger "
                       "WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal", [OBSERVATION_TABLE])
        found.update(cursor.fetchall())
        cursor.execute("SELECT 'index ' || indexname, indexdef FROM pg_indexes "
                       "WHERE tablename = %s AND indexname IN ('ilab_mem_obs_search', 'ilab_mem_obs_user_search')",
                       [OBSERVATION_TABLE])
        found.update(cursor.fetchall())
        cursor.execute("SELECT 'column ' || attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attrelid = to_regclass(%s) AND attname = 'search_vector' AND NOT attisdropped",
                       [OBSERVATION_TABLE])
        found.update(cursor.fetchall())
        return found


def schema() -> list:
    """Every table, column, index, constraint, trigger and function of the app's tables."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                           "WHERE tbl_name LIKE 'ilab_memory%' ORDER BY type, name")
            return cursor.fetchall()
        cursor.execute(
            """SELECT 'column', c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
                   || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
               FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
               WHERE c.relname LIKE 'ilab_memory%' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
             UNION ALL SELECT 'index', tablename, indexname, indexdef
               FROM pg_indexes WHERE tablename LIKE 'ilab_memory%'
             UNION ALL SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid)
               FROM pg_constraint WHERE conrelid::regclass::text LIKE 'ilab_memory%'
             UNION ALL SELECT 'trigger', tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
               FROM pg_trigger WHERE tgrelid::regclass::text LIKE 'ilab_memory%' AND NOT tgisinternal
             UNION ALL SELECT 'function', '', proname, pg_get_functiondef(oid) FROM pg_proc
               WHERE proname LIKE 'ilab_memory%'
             ORDER BY 1, 2, 3"""
        )
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
def test_the_live_index_statements_build_what_the_migrations_built():
    """``ilab_memory_rebuild_index`` and the SQLite repair keep their own copy of the index
    statements: they must build the very index that migrations 0002, 0008 and 0014 build."""
    search_index = import_module("ilab_memory.migrations.0002_search_index")
    pending_list = import_module("ilab_memory.migrations.0008_search_index_pending_list")
    user_first = import_module("ilab_memory.migrations.0014_user_first_indexes")
    with connection.schema_editor() as editor:
        user_first.words_only_search_index(None, editor)
        pending_list.default_pending_list(None, editor)
        search_index.uninstall(None, editor)
        assert index_schema() == {}
        search_index.install(None, editor)
        pending_list.small_pending_list(None, editor)
        user_first.user_first_search_index(None, editor)
    migrated = index_schema()
    assert migrated
    with connection.schema_editor() as editor:
        search_index.uninstall(None, editor)
    index_rebuild()
    assert index_schema() == migrated


@pytest.mark.django_db(transaction=True)
def test_migrating_to_zero_and_back_gives_the_same_schema_and_a_working_search():
    # The reference is what the migrations build, not the test database as found: on SQLite a
    # test that alters a field and back (tests/test_search.py) leaves a rebuilt table whose
    # CREATE statement Django words differently, and on parallel workers such a test may run first.
    call_command("migrate", "ilab_memory", "zero", verbosity=0)
    call_command("migrate", "ilab_memory", verbosity=0)
    before = schema()
    call_command("migrate", "ilab_memory", "zero", verbosity=0)
    assert schema() == []
    assert not index_schema()
    call_command("migrate", "ilab_memory", verbosity=0)
    assert schema() == before

    from ilab_memory import ILabMemory

    mem = ILabMemory(embedder=None)
    mem.mem_save("alice", "Migrated twice", "The index follows writes after the round trip.")
    assert [r.title for r in mem.mem_search("alice", "round trip")] == ["Migrated twice"]


def pgvector_available() -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return cursor.fetchone() is not None


@pytest.mark.django_db
def test_the_embedding_column_is_there_exactly_where_pgvector_is_available():
    """The test database was built by ``migrate`` as superuser: 0009 added the column where the
    server offers pgvector and left everything as it was elsewhere (SQLite, plain PostgreSQL)."""
    vectors.forget_pgvector_state()
    assert vectors.pgvector_ready("default") == pgvector_available()
