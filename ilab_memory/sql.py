"""The few statements the ORM cannot express, each with the capability it needs.

Django 5.2 has no ``UPDATE … RETURNING`` and no per-transaction advisory lock, and cannot rank
candidates in a subquery before joining for their text. Each function here runs one statement
on the connection ``using``, scoped by ``user_id`` (or by an id the caller already scoped).
Parameters are prepared by their model field (``Field.get_db_prep_value``) and rows come back
as model instances (``Manager.raw``), so values are what the ORM reads and writes everywhere
else. Every other write is the public ORM, and fires Django's model signals. The engines'
full-text SQL lives with search (``services/search/sqlite.py`` and ``postgresql.py``).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from functools import cache

from django.db import connections

from . import scoring
from .models import OBSERVATION_TABLE, SESSION_TABLE, Observation, Session, SessionStatus
from .scopes import SHARED, SHARED_SPACE, Reach
from .visibility import OPEN, Window, live_sql

ACTIVE = SessionStatus.ACTIVE.value
OBSERVATION_COLUMNS = ", ".join(str(field.column) for field in Observation._meta.concrete_fields)


def _param(model, field: str, value, connection):
    """``value`` as the ORM sends it for ``model.field`` on ``connection`` (a UUID as hex text
    on SQLite, a time in the connection's zone…)."""
    return model._meta.get_field(field).get_db_prep_value(value, connection)


def lock_user(user_id: str, scope: str = SHARED, *, using: str) -> None:
    """PostgreSQL: hold a lock on the user's scope until the transaction ends (other engines: nothing).

    ``SELECT … FOR UPDATE`` cannot lock a row that does not exist yet: when a user has no
    active session in a scope, every concurrent writer would open one, all but one would hit
    the one-active-session constraint, and under steady churn a writer could lose every retry.
    The advisory lock queues the openers of one (user, scope) instead. SQLite needs none: its
    IMMEDIATE transaction already holds the database's write lock.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
    # The shared space keeps the key it had before scopes, so processes of the previous
    # version and this one queue on the same lock during a rolling upgrade.
    name = f"ilab_memory.session:{user_id}" + (f"\x1f{scope}" if scope else "")
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)])


BUMP_LIVE_SESSION = f"""
    UPDATE {SESSION_TABLE} SET last_activity_at = %s
    WHERE user_id = %s AND scope = %s AND status = '{ACTIVE}' AND last_activity_at >= %s
    RETURNING id"""


def bump_live_session(user_id: str, scope: str = SHARED, *, now: datetime, live_since: datetime,
                      using: str) -> uuid.UUID | None:
    """The id of the user's active session in ``scope`` last active at or after ``live_since``,
    bumped to ``now``.

    Why raw: finding the session and keeping it alive is one ``UPDATE … RETURNING``, which also
    takes the session's row lock and so queues the user's writers on PostgreSQL (the ORM's
    ``update()`` returns a count, not the row). None: the user has no active session, or it
    expired (the caller decides).
    """
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(BUMP_LIVE_SESSION, [
            _param(Session, "last_activity_at", now, connection), user_id, scope,
            _param(Session, "last_activity_at", live_since, connection),
        ])
        row = cursor.fetchone()
    return None if row is None else Session._meta.pk.to_python(row[0])


# ``deleted_at IS NULL`` again outside the subquery: PostgreSQL re-checks it after waiting for
# a concurrent soft delete, so a deleted row is never counted. ``coalesce(topic_key, %s)``: a
# repeat naming a topic the first save lacked keeps it (no live row holds that topic, or the
# save would have revised it), so the next save of the topic revises this row. ``{live}``: the
# twin must be live (``visibility.live_sql``): an expired memory is never counted again.
COUNT_DUPLICATE = f"""
    UPDATE {OBSERVATION_TABLE} SET duplicate_count = duplicate_count + 1, redacted_blocks = redacted_blocks + %s,
        session_id = %s, last_seen_at = %s, topic_key = coalesce(topic_key, %s)
    WHERE id = (
        SELECT o.id FROM {OBSERVATION_TABLE} o
        WHERE o.user_id = %s AND o.scope = %s AND o.dedupe_hash = %s AND o.created_at >= %s{{live}}
        ORDER BY o.created_at DESC LIMIT 1
    ) AND deleted_at IS NULL
    RETURNING {OBSERVATION_COLUMNS}"""


def count_duplicate(*, user_id: str, scope: str = SHARED, digest: str, since: datetime, session_id: uuid.UUID,
                    now: datetime, blocks: int, topic_key: str | None, config=None, using: str) -> Observation | None:
    """Count a repeat on the newest live twin in the user's ``scope`` created at or after
    ``since``; None if none.

    Why raw: finding the twin, counting it atomically, moving it to the session and reading it
    back is one ``UPDATE … RETURNING``. Like ``QuerySet.update()``, it sends no model signal.
    """
    connection = connections[using]
    live, live_params = live_sql("o", connection, config, now=now)
    params = [
        blocks, _param(Observation, "session", session_id, connection),
        _param(Observation, "last_seen_at", now, connection), topic_key, user_id, scope, digest,
        _param(Observation, "created_at", since, connection), *live_params,
    ]
    statement = COUNT_DUPLICATE.replace("{live}", live)
    counted = list(Observation.objects.db_manager(using).raw(statement, params))  # the twin, or none
    return counted[0] if counted else None


# The user's rows in an order only the user's own index (ilab_mem_obs_user_updated) gives, so
# the planner cannot walk the all-users (updated_at, id) index and skip other users' newer rows
# one by one (unbounded as others write more). On PostgreSQL ``= ANY(ARRAY[x])`` is the same
# test as ``= x`` without letting the planner fold user_id into a constant and drop it from
# the ORDER BY. tests/test_sql.py checks the plan with a heavy and a light user.
OWN_ROWS = {"sqlite": "user_id = %s", "postgresql": "user_id = ANY(ARRAY[%s]::text[])"}


@cache
def ranked_context_sql(vendor: str, weighted_types: int, candidates: int, limit: int, in_scopes: str = "",
                       own_first: str = "0", live: str = " AND deleted_at IS NULL") -> str:
    # Limits are validated integer settings, written into the text (not parameters) so the
    # planner sees them. Rank, cut to the winners, and only then join for their text: a join
    # before the cut fetched every candidate's row on both engines. ``in_scopes`` and
    # ``own_first`` (the reader's own scope ranked first among equal scores) are ``Reach``'s;
    # ``live`` is ``visibility.live_sql`` and a ``Window``'s clause over the table itself.
    return f"""
    SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at, o.happened_at, o.scope,
           substr(o.content, 1, %s) AS content_head, w.hours, w.type_weight, w.recency, w.reinforcement, w.score
    FROM (
        SELECT id, updated_at, own, hours, type_weight, {scoring.SCORE_COLUMNS}
        FROM (
            SELECT id, updated_at, {own_first} AS own, {scoring.factor_columns(vendor, weighted_types)}
            FROM {OBSERVATION_TABLE}
            WHERE {OWN_ROWS[vendor]}{live}{in_scopes}
            ORDER BY user_id, updated_at DESC, id DESC
            LIMIT {int(candidates)}
        ) c
        ORDER BY score DESC, own DESC, updated_at DESC, id DESC
        LIMIT {int(limit)}
    ) w JOIN {OBSERVATION_TABLE} o ON o.id = w.id
    ORDER BY w.score DESC, w.own DESC, w.updated_at DESC, w.id DESC"""


def ranked_context(user_id: str, reach: Reach = SHARED_SPACE, *, now: datetime, type_weights: dict[str, float],
                   head_chars: int, candidates: int, limit: int, window: Window = OPEN, config=None,
                   using: str) -> list[Observation]:
    """The ``limit`` best by ContextScore of the user's newest ``candidates`` live observations
    in ``reach`` that happened in ``window``.

    Why raw: the database scores the candidates in a subquery and joins only the winners for
    their text, in an order only the user's own index gives (the ORM would join, or fetch every
    candidate to score it). Each instance carries ``content_head`` and the score's factors
    (see ``scoring``) and defers the rest; the order is score, then the reader's own scope,
    then newest update, then id.
    """
    connection = connections[using]
    in_scopes, scope_params = reach.sql("scope")
    own_first, own_params = reach.own_first_sql("scope")
    table = connection.ops.quote_name(OBSERVATION_TABLE)
    live, live_params = live_sql(table, connection, config, now=now)
    period, period_params = window.sql(table, connection)
    sql = ranked_context_sql(connection.vendor, len(type_weights), candidates, limit, in_scopes, own_first,
                             live + period)
    now_param = _param(Observation, "updated_at", now, connection)
    params = [
        head_chars, *own_params,
        *scoring.factor_params(now_param=now_param, type_weights=type_weights), user_id, *live_params,
        *period_params, *scope_params,
    ]
    return list(Observation.objects.db_manager(using).raw(sql, params))
