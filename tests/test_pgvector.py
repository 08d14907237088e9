"""The pgvector path of vectors.py, on a PostgreSQL that has the extension.

CI runs this file first, then the other vector tests, against a PostgreSQL 16 with pgvector
(`python -m tests.pgvector_server -- pytest tests/test_pgvector.py ...`). Elsewhere it skips.
"""

import pytest
from django.db import DatabaseError, connection

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
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_MODE": "inline"}


def test_the_command_installs_pgvector_and_fills_vectors_stored_before(tmem):
    from django.core.management import call_command

    tmem.mem_save("alice", "Green tea", "Green tea in the morning.")
    embedding.embed_waiting()  # stored before the column exists
    call_command("ilab_memory_embed", "--pgvector", verbosity=0)
    assert vectors.pgvector_ready("default")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {vectors.VECTOR_TABLE} WHERE {vectors.PGVECTOR_COLUMN} IS NULL")
        assert cursor.fetchone()[0] == 0


def test_pgvector_finds_what_numpy_finds_with_the_same_cosines(tmem):
    assert vectors.install_pgvector(connection)
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
    assert vectors.install_pgvector(connection)
    mine = tmem.mem_save("alice", "Weekly report", "Send it on Monday.").observation
    for k in range(30):
        tmem.mem_save("bob", f"Green tea {k}", "Green tea, green tea.")
    embedding.embed_waiting()
    found = vectors.similarities(user_id="alice", model_id=RecordingEmbedder.model_id,
                                 dimensions=RecordingEmbedder.dimensions,
                                 query=RecordingEmbedder().embed_query("green tea"), n=10, using="default",
                                 max_bytes=1 << 30)
    assert [str(pk) for pk in found] == [mine.id]
