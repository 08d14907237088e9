"""Search by words: the engine's best matching rows for a parsed query, and how they are ranked.

All terms first, any term when that finds nothing, in one SQL statement per engine
(``sqlite.py``, ``postgresql.py``); ``mode`` says which of the two the results are. Ranking and
the score are explained in docs/scoring.md.
"""

from __future__ import annotations

from django.db import connections

from ...models import Observation
from ...scopes import SHARED_SPACE, Reach
from ...visibility import OPEN, Window, live_sql
from . import postgresql, sqlite
from .query import ParsedQuery, any_terms

# Candidates read from the engine before recency re-ranks them and ``limit`` cuts.
CANDIDATE_EXTRA = 20

MODE_ALL, MODE_ANY = "all", "any"


def matching_rows(parsed: ParsedQuery, *, user_id: str, reach: Reach = SHARED_SPACE, type: str | None, head: int, count: int,
                  window: Window = OPEN, config=None, using: str):
    """The engine's name and its best ``count`` live observations in ``reach`` that happened in
    ``window``, all-terms matches first, each with
    ``content_head``, ``relevance``, ``all_terms`` (whether every term matched) and ``coverage``
    (the idf-weighted share of the terms it holds, 1.0 exactly when ``all_terms``); the fields the
    statement does not read are deferred. Raw: full-text search has no ORM expression here."""
    connection = connections[using]
    in_scopes, scopes = reach.sql("o.scope")
    # One filter of the rows a read sees, its parameters in the clauses' order.
    live, live_params = live_sql("o", connection, config)
    period, period_params = window.sql("o", connection)
    in_scopes, scopes = live + period + in_scopes, [*live_params, *period_params, *scopes]
    if connection.vendor == "sqlite":
        engine = "sqlite-fts5-bm25"
        statement, params = sqlite.ranked_statement(parsed, user_id=user_id, in_scopes=in_scopes, scopes=scopes,
                                                    type=type, head=head, count=count)
    elif connection.vendor == "postgresql":
        all_query, any_query = postgresql.tsqueries(parsed)
        alternatives = [postgresql.tsquery_phrase(term) for term in any_terms(parsed)]
        engine, statement = "postgresql-ts_rank", postgresql.ranked_sql(type is not None, in_scopes)
        params = [head, all_query, any_query, len(parsed.terms), alternatives, user_id, *scopes,
                  *([type] if type else []), user_id, count]
    else:
        raise NotImplementedError(f"ilab_memory search supports SQLite and PostgreSQL, not {connection.vendor}.")
    return engine, list(Observation.objects.db_manager(using).raw(statement, params))
