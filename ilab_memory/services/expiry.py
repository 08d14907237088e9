"""Erasing expired memories (the sweep's second half): what passed its ``expires_at`` or its
type's ``RETENTION`` (``visibility``), with everything derived from it.

Reads stop seeing an expired memory at once; this erases it for good: the row, its history, its
vector and its search index entry (the engines' triggers and columns follow the row), and the
admin log's labels of it. In batches, each its own short transaction: a sweep killed half-way
leaves every memory either whole or gone, and the next run goes on from there. On SQLite the
erased words then leave the search index in short merge steps, and the write-ahead log is
truncated after commit (as ``erasure`` does for a user).
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import nullcontext
from functools import partial

from django.db import connections, transaction
from django.utils import timezone

from .. import metrics
from ..conf import Config, get_config
from ..models import Observation
from ..signals import observations_expired, send_on_commit
from ..visibility import expiry_clauses
from .erasure import forget_admin_log_labels
from .sqlite_scrub import checkpoint_wal, merge_search_index_step, search_index_pages, secure_delete
from .transactions import atomic_with_retry

# Rows erased per transaction: small enough that SQLite's database lock (PostgreSQL locks the
# rows alone) is held for a fraction of a second, with their history, vectors and index entries.
BATCH_SIZE = 200
# Pages of the SQLite search index merged per transaction once the batches are done.
MERGE_PAGES = 200
# SQLite: the pause between two transactions of the sweep. Another writer waiting for the lock
# retries at most 100 ms apart (SQLite's busy handler); without a pause the sweep would take the
# lock again first, batch after batch, and that writer would wait for the whole sweep.
SQLITE_PAUSE_SECONDS = 0.1


def observations_erase_expired(*, config: Config | None = None, using: str = "default",
                               batch_size: int = BATCH_SIZE, progress=None) -> int:
    """Erase every observation expired now, in batches; returns how many. Running it twice is a
    no-op. ``progress``, if given, is called with the number erased so far after each batch.
    Sends ``observations_expired`` per user and batch once it commits."""
    config = config or get_config()
    now = timezone.now()
    connection = connections[using]
    sqlite = connection.vendor == "sqlite"
    erased = 0
    with secure_delete(connection) if sqlite else nullcontext():
        for clause, column in expiry_clauses(config, now=now):
            floor = None
            while True:
                batch = partial(_erase_batch, clause, column, floor, batch_size, using=using)
                count, floor = atomic_with_retry(batch, using=using)
                erased += count
                if progress is not None and count:
                    progress(erased)
                if count < batch_size:
                    break
                if sqlite:
                    _pause(connection)
        # Every run, not only one that erased: a run killed before this left tombstones behind.
        merged = _compact_search_index(using) if sqlite else 0
    if sqlite and (erased or merged):
        # After commit: inside a caller's transaction SQLite cannot checkpoint (the table is locked).
        transaction.on_commit(lambda: checkpoint_wal(using), using=using)
    metrics.count("erased", erased)
    return erased


def _compact_search_index(using: str) -> int:
    """Drop the erased memories' words from the SQLite search index (their delete left only
    tombstones), in steps as short as the batches: user_forget's single 'optimize' would hold
    the lock for as long as the whole index takes to rewrite. Returns the steps taken."""
    connection = connections[using]

    def step() -> bool:
        return atomic_with_retry(lambda: merge_search_index_step(connection, MERGE_PAGES), using=using)

    # A first step says whether anything waits: counting the index's pages reads all of them,
    # a cost of the whole file that a sweep with nothing to merge need not pay.
    if not step():
        return 0
    # One pass over the index as it is now: enough to rewrite every segment the erased words are
    # in, and a bound while other writers keep adding segments (each would start the merge anew).
    budget = search_index_pages(connection) // MERGE_PAGES + 1
    steps = 1
    _pause(connection)
    while steps < budget and step():
        steps += 1
        _pause(connection)
    return steps


def _pause(connection) -> None:
    """Between two of the sweep's transactions on SQLite: let a waiting writer in, and copy what
    the log holds into the database without waiting for anyone (PASSIVE), so the log stays short
    and the closing TRUNCATE checkpoint, which other writers wait for, has little left to do."""
    time.sleep(SQLITE_PAUSE_SECONDS)
    if not connection.in_atomic_block:  # inside a caller's transaction nothing has committed yet
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")


def _erase_batch(clause, column: str, floor, batch_size: int, *, using: str):
    """Erase up to ``batch_size`` rows of ``clause``, oldest ``column`` first from ``floor`` on;
    returns how many and the floor of the next batch. Each batch goes on along the clause's
    index where the last one stopped, instead of walking again past the rows it kept (under a
    retention, every other type's old rows)."""
    expired = Observation.objects.using(using).filter(clause)
    if floor is not None:
        expired = expired.filter(**{f"{column}__gte": floor})
    if connections[using].vendor == "postgresql":
        # Two sweeps at once take different rows instead of waiting on each other's.
        expired = expired.select_for_update(skip_locked=True)
    rows = list(expired.order_by(column).values_list("pk", "user_id", column)[:batch_size])
    if not rows:
        return 0, floor
    ids = [pk for pk, _, _ in rows]
    forget_admin_log_labels(Observation, ids)
    # The ORM's delete collects and deletes the revisions and the vector first (CASCADE), with
    # their model signals; the search index entry goes with the row (trigger or column).
    Observation.objects.using(using).filter(pk__in=ids).delete()
    by_user: dict[str, list[str]] = defaultdict(list)
    for pk, user_id, _ in rows:
        by_user[user_id].append(str(pk))
    for user_id, observation_ids in by_user.items():
        send_on_commit(observations_expired, Observation, using=using, user_id=user_id,
                       observation_ids=observation_ids)
    return len(rows), rows[-1][2]
