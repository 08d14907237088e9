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
from .query import ParsedQuery

# Candidates read from the engine before recency re-ranks them and ``limit`` cuts.
CANDIDATE_EXTRA = 20

MODE_ALL, MODE_ANY = "all", "any"


# One engine object per database vendor: its name (the score's ``engine``) and its ranked statement.
ENGINES = {"sqlite": sqlite.ENGINE, "postgresql": postgresql.ENGINE}


def engine_for(using: str):
    """The engine of the database ``using``."""
    vendor = connections[using].vendor
    if vendor not in ENGINES:
        raise NotImplementedError(f"ilab_memory search supports SQLite and PostgreSQL, not {vendor}.")
    return ENGINES[vendor]


def matching_rows(parsed: ParsedQuery, *, user_id: str, reach: Reach = SHARED_SPACE, type: str | None, head: int,
                  count: int, window: Window = OPEN, config=None, using: str):
    """The engine's name and its best ``count`` live observations in ``reach`` that happened in
    ``window``, all-terms matches first, each with
    ``content_head``, ``relevance``, ``all_terms`` (whether every term matched) and ``coverage``
    (the idf-weighted share of the terms it holds, 1.0 exactly when ``all_terms``); the fields the
    statement does not read are deferred. Raw: full-text search has no ORM expression here."""
    engine = engine_for(using)
    connection = connections[using]
    in_scopes, scopes = reach.sql("o.scope")
    # One filter of the rows a read sees, its parameters in the clauses' order.
    live, live_params = live_sql("o", connection, config)
    period, period_params = window.sql("o", connection)
    in_scopes, scopes = live + period + in_scopes, [*live_params, *period_params, *scopes]
    statement, params = engine.ranked(parsed, user_id=user_id, in_scopes=in_scopes, scopes=scopes, type=type,
                                      head=head, count=count)
    return engine.name, list(Observation.objects.db_manager(using).raw(statement, params))
