"""The pgvector path of vectors.py, on a PostgreSQL that has the extension.

CI runs it with the other vector tests against a PostgreSQL 16 with pgvector
(`python -m tests.pgvector_server -- pytest tests/test_pgvector.py ...`), whose test database
got the ``embedding`` column from ``migrate`` (migration 0009). Elsewhere it skips.
"""

from importlib import import_module

import numpy as np
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from ilab_memory import vectors
from ilab_memory.services import embedding
from tests.embedders import RecordingEmbedder


def pgvector_available() -> bool:
    if connection.vendor != "postgresql":
        return False
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            return cursor.fetchone() is not None
    except DatabaseError:
        return False


@pytest.fixture(autouse=True)
def recording(transactional_db, settings):
    if not pgvector_available():
        pytest.skip("needs PostgreSQL with pgvector")
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}


def migrate(target=None):
    call_command("migrate", "ilab_memory", *([target] if target else []), verbosity=0)


def test_migrate_adds_the_column_and_fills_it_from_the_vectors_stored_before(tmem):
    for text in ("Green tea in the morning.", "Black coffee at noon."):
        tmem.mem_save("alice", text[:10], text)
    embedding.embed_waiting()
    # Back to before the column (later migrations, which today's code needs, go back too): the
    # vectors stay stored as bytes only, with no column to copy them to.
    migrate("0008")
    assert not column_present() and not vectors.pgvector_ready("default")
    migrate()
    assert column_present() and vectors.pgvector_ready("default")  # post_migrate forgot the old answer
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT vector, {vectors.PGVECTOR_COLUMN}::text FROM {vectors.VECTOR_TABLE}")
        rows = cursor.fetchall()
    assert len(rows) == 2
    for stored, copied in rows:
        copy = np.array(copied.strip("[]").split(","), dtype=np.float32)
        assert np.array_equal(copy, np.frombuffer(bytes(stored), dtype="<f4"))  # the same float32s


def test_going_back_drops_the_column_and_keeps_the_extension(tmem):
    migrate("0008")
    try:
        assert not column_present()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            assert cursor.fetchone()
    finally:
        migrate()


def test_a_role_that_may_not_create_the_extension_gets_no_column_and_no_error(tmem, caplog):
    """The migration's function run as a role without the privilege: a warning, and neither the
    extension nor the column; the whole test runs in a transaction that is rolled back."""
    add_embedding_column = import_module("ilab_memory.migrations.0009_pgvector").add_embedding_column
    apps = migration_apps()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DROP EXTENSION vector CASCADE")  # the column goes with it
            cursor.execute("CREATE ROLE ilab_memory_test_no_extension")
            cursor.execute("SET LOCAL ROLE ilab_memory_test_no_extension")
        with connection.schema_editor() as editor:
            add_embedding_column(apps, editor)
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            assert cursor.fetchone() is None
        assert not column_present()
        transaction.set_rollback(True)
    assert "may not create the extension" in caplog.text
    assert column_present()  # the rollback put the extension and the column back


def migration_apps():
    from django.db.migrations.loader import MigrationLoader

    return MigrationLoader(connection).project_state(("ilab_memory", "0009_pgvector")).apps


def column_present() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = %s",
                       [vectors.VECTOR_TABLE, vectors.PGVECTOR_COLUMN])
        return cursor.fetchone() is not None


def test_pgvector_finds_what_numpy_finds_with_the_same_cosines(tmem):
    assert vectors.pgvector_ready("default")  # the column came with migrate
    for user in ("alice", "bob"):
        for k, text in enumerate(["green tea", "black coffee", "deploy on friday", "tea ceremony", "coffee beans"]):
            tmem.mem_save(user, f"{text} {k}", f"Notes about {text}.")
    embedding.embed_waiting()
    query = RecordingEmbedder().embed_query("tea")
    database = vectors.similarities(user_id="alice", model_id=RecordingEmbedder.model_id,
                                    dimensions=RecordingEmbedder.dimensions, query=query, n=3, using="default",
                                    max_bytes=1 << 30)
    in_process = vectors._numpy_similarities("alice", RecordingEmbedder.model_id, query, 3, (),
                                             dimensions=RecordingEmbedder.dimensions, using="default",
                                             max_bytes=1 << 30)
    assert database.keys() == in_process.keys()
    for pk, cosine in database.items():
        assert cosine == pytest.approx(in_process[pk], abs=1e-5)
    top = [r.title for r in tmem.mem_search("alice", "tea")]
    assert top[:2] and all(title.startswith(("green tea", "tea ceremony")) for title in top[:2])


def test_pgvector_is_scoped_by_user_before_ranking(tmem):
    assert vectors.pgvector_ready("default")  # the column came with migrate
    mine = tmem.mem_save("alice", "Weekly report", "Send it on Monday.").observation
    for k in range(30):
        tmem.mem_save("bob", f"Green tea {k}", "Green tea, green tea.")
    embedding.embed_waiting()
    found = vectors.similarities(user_id="alice", model_id=RecordingEmbedder.model_id,
                                 dimensions=RecordingEmbedder.dimensions,
                                 query=RecordingEmbedder().embed_query("green tea"), n=10, using="default",
                                 max_bytes=1 << 30)
    assert [str(pk) for pk in found] == [mine.id]
