"""ilab_memory.services.search.lexical: the engine of a database, and its matching rows."""

from django.db import connection

from ilab_memory.services.search import parse_query
from ilab_memory.services.search.lexical import ENGINES, engine_for, matching_rows


def test_the_engine_is_the_one_of_the_databases_vendor(db):
    assert engine_for("default") is ENGINES[connection.vendor]


def test_matching_rows_are_the_users_live_rows_all_terms_first(mem, clock):
    both = mem.mem_save("alice", "Celery retry policy", "Tasks retry three times.").observation
    one = mem.mem_save("alice", "Celery workers", "Restart them after a deploy.").observation
    mem.mem_save("bob", "Celery retry policy", "Tasks retry three times.")
    gone = mem.mem_save("alice", "Celery retry notes", "Old notes on retries.").observation
    mem.mem_delete("alice", gone.id)
    name, rows = matching_rows(parse_query("celery retry"), user_id="alice", type=None, head=100, count=10,
                               using="default")
    assert name == engine_for("default").name
    assert [str(row.id) for row in rows] == [both.id, one.id]
    assert [bool(row.all_terms) for row in rows] == [True, False]
    assert float(rows[0].coverage) == 1.0 > float(rows[1].coverage)
