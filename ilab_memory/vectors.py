"""Stored embeddings: their byte format, and a user's nearest ones to a query vector.

Vectors are float32 little-endian bytes in ``ObservationVector.vector``, on every engine; a
memory embedded in pieces also keeps its pieces' vectors (``ObservationVector.pieces``) and its
cosine to a query is its best piece's: a long conversation is as near as the part of it that
answers, not as its average. The lookup is exact and scoped by ``user_id`` and the reader's
``Reach`` before anything is ranked:

* **PostgreSQL with pgvector** (the ``embedding`` column that migration 0009 adds where the
  extension is available, see ``pgvector_ready``): the database scans the user's rows through
  the (user_id, model_id) index and orders by cosine distance. No approximate index: an ANN
  index would rank across all users and filter afterwards, which can miss a user's best rows.
  The column holds each memory's one vector, so the nearest are found by it; the cosines of
  those with pieces are then their best piece's (one read of their pieces).
* **SQLite, and PostgreSQL without pgvector**: the user's vectors are read once into a numpy
  matrix kept in this process (``VECTOR_CACHE_MB`` in all, least recently used out first) and
  scored with one matrix-vector product. Each search reads the user's ``VectorStamp`` (one
  primary-key read; every store of vectors writes a new one) and reloads when it changed, then
  checks that the rows it found are still stored as loaded (one read of those few rows): a row
  requeued or deleted since makes it reload. So a search always sees the vectors committed
  before it, at a cost that does not grow with the user's history.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

from django.db import connections

from .models import VECTOR_TABLE, ObservationVector, VectorStamp, first_or_none
from .scopes import EVERY_SCOPE, Reach

if TYPE_CHECKING:
    import numpy

PGVECTOR_COLUMN = "embedding"


def pack(vector) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def unpack(blob, dimensions: int):
    """The rows ``pack`` wrote: a ``(rows, dimensions)`` float32 array (no rows for no bytes)."""
    import numpy as np

    return np.frombuffer(bytes(blob), dtype="<f4").reshape(-1, dimensions)


def pgvector_literal(vector) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# -- pgvector ----------------------------------------------------------------------------------

_pgvector_ready: dict[str, bool] = {}


def pgvector_ready(using: str) -> bool:
    """Whether ``using`` is PostgreSQL with the pgvector ``embedding`` column (cached per alias)."""
    if using not in _pgvector_ready:
        connection = connections[using]
        ready = False
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = %s",
                    [VECTOR_TABLE, PGVECTOR_COLUMN],
                )
                ready = cursor.fetchone() is not None
        _pgvector_ready[using] = ready
    return _pgvector_ready[using]


def forget_pgvector_state(**kwargs) -> None:
    """Read the column's presence again; a ``post_migrate`` receiver, as migration 0009 adds
    the column and reversing it drops it."""
    _pgvector_ready.clear()


def store_pgvector(pk: int, vector, *, using: str) -> None:
    """Copy a stored vector into the pgvector column (the ORM has no field for its type)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"UPDATE {VECTOR_TABLE} SET {PGVECTOR_COLUMN} = CAST(%s AS vector) WHERE id = %s",
            [pgvector_literal(vector), pk],
        )


@cache
def _pg_nearest_sql(in_scopes: str) -> str:
    """Exact and user-scoped: the (user_id, model_id) index finds the user's rows, the sort ranks
    them. The second branch adds the cosines of other candidates (found by words) the caller
    asks for. Both keep to the reader's scopes (``in_scopes``, from ``Reach.sql``)."""
    return f"""
    (SELECT observation_id, 1 - ({PGVECTOR_COLUMN} <=> CAST(%s AS vector)) AS cosine
     FROM {VECTOR_TABLE} WHERE user_id = %s AND model_id = %s AND {PGVECTOR_COLUMN} IS NOT NULL{in_scopes}
     ORDER BY {PGVECTOR_COLUMN} <=> CAST(%s AS vector) LIMIT %s)
    UNION
    (SELECT observation_id, 1 - ({PGVECTOR_COLUMN} <=> CAST(%s AS vector))
     FROM {VECTOR_TABLE} WHERE user_id = %s AND model_id = %s AND {PGVECTOR_COLUMN} IS NOT NULL{in_scopes}
       AND observation_id = ANY(%s))"""


def _pg_similarities(user_id: str, model_id: str, query, n: int, also, using: str, reach: Reach) -> dict:
    import numpy as np

    literal = pgvector_literal(query)
    in_scopes, scopes = reach.sql("scope")
    with connections[using].cursor() as cursor:
        cursor.execute(_pg_nearest_sql(in_scopes), [literal, user_id, model_id, *scopes, literal, n,
                                                   literal, user_id, model_id, *scopes, list(also)])
        found = {observation_id: float(cosine) for observation_id, cosine in cursor.fetchall()}
    with_pieces = ObservationVector.objects.using(using).filter(
        observation_id__in=found, model_id=model_id, pieces__isnull=False).values_list("observation_id", "pieces")
    query = np.asarray(query, dtype=np.float32)
    for observation_id, blob in with_pieces:
        found[observation_id] = float((unpack(blob, len(query)) @ query).max())
    return found


# -- numpy ------------------------------------------------------------------------------------


class _Matrix:
    """A user's vectors: one row per memory, or one per piece of a memory embedded in pieces,
    each memory's rows together in the order of ``observation_ids``."""

    __slots__ = ("counts", "derived", "distinct_scopes", "generations", "index", "observation_ids", "rows", "scopes",
                 "stamp", "starts")

    def __init__(self, stamp, observation_ids, generations, scopes, rows, counts):
        import numpy as np

        self.stamp = stamp
        self.observation_ids = observation_ids
        self.generations = generations
        self.scopes = scopes  # each memory's scope, as a numpy array of str
        self.distinct_scopes = frozenset(scopes.tolist())
        self.rows = rows
        # Each memory's number of rows and where they start; None when every memory has one.
        self.counts = None if len(rows) == len(observation_ids) else counts
        self.starts = None if self.counts is None else np.cumsum(counts) - counts
        self.index = {pk: i for i, pk in enumerate(observation_ids)}
        self.derived = {}  # what callers compute from these rows (a search's null), kept with them

    def cosines(self, query):
        """Each memory's cosine to ``query``: its best row's."""
        import numpy as np

        scores = self.rows @ query
        return scores if self.starts is None else np.maximum.reduceat(scores, self.starts)

    def rows_in(self, reach: Reach):
        """The rows of the memories in ``reach``."""
        import numpy as np

        in_reach = reach.mask(self.scopes, self.distinct_scopes)
        if in_reach is None:
            return self.rows
        return self.rows[in_reach if self.counts is None else np.repeat(in_reach, self.counts)]


class MatrixCache:
    """A process's user matrices, bounded in bytes, least recently used out first."""

    def __init__(self):
        self._entries: OrderedDict[tuple, _Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, stamp) -> _Matrix | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.stamp != stamp:
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key, entry: _Matrix, *, max_bytes: int) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            total = sum(e.rows.nbytes for e in self._entries.values())
            while total > max_bytes and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                total -= dropped.rows.nbytes

    def discard(self, key) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


matrices = MatrixCache()


def _user_vectors(user_id: str, model_id: str, using: str):
    return ObservationVector.objects.using(using).filter(user_id=user_id, model_id=model_id)


def _load(user_id: str, model_id: str, dimensions: int, stamp, *, using: str) -> _Matrix:
    import numpy as np

    ids, generations, scopes, blobs = [], [], [], []
    rows = _user_vectors(user_id, model_id, using).values_list("observation_id", "generation", "scope", "vector",
                                                               "pieces")
    for observation_id, generation, scope, vector, pieces in rows.iterator(chunk_size=2000):
        ids.append(observation_id)
        generations.append(generation)
        scopes.append(scope)
        blobs.append(bytes(vector if pieces is None else pieces))
    row_bytes = 4 * dimensions
    counts = np.array([len(blob) // row_bytes for blob in blobs], dtype=np.intp)
    matrix = unpack(b"".join(blobs), dimensions)
    return _Matrix(stamp, ids, generations, np.array(scopes, dtype=object), matrix, counts)


def _nearest(entry: _Matrix, reach: Reach, query, n: int, also) -> dict:
    """The ``n`` nearest rows in ``reach``, and ``also``'s rows in it."""
    import numpy as np

    if not entry.observation_ids:
        return {}
    cosines = entry.cosines(np.asarray(query, dtype=np.float32))
    in_reach = reach.mask(entry.scopes, entry.distinct_scopes)
    if in_reach is not None:
        # Rows outside the reader's scopes can never be found: below every cosine.
        cosines = np.where(in_reach, cosines, -np.inf)
    n = min(n, len(cosines))
    top: Iterable[int] = np.argpartition(-cosines, n - 1)[:n] if n else []
    found = {entry.observation_ids[i]: float(cosines[i]) for i in top if cosines[i] != -np.inf}
    for pk in also:
        i = entry.index.get(pk)
        if i is not None and cosines[i] != -np.inf:
            found[pk] = float(cosines[i])
    return found


def _all_current(entry: _Matrix, found: dict, *, model_id: str, using: str) -> bool:
    """Whether every found row is still stored as it was loaded (not requeued, not deleted)."""
    if not found:
        return True
    # By the observations' unique index alone: with user_id in the filter, SQLite walks the
    # user's (user_id, model_id, …) index instead, every row of the user (the ids are the
    # user's own: they came from the user's matrix).
    current = set(ObservationVector.objects.using(using).filter(observation_id__in=found, model_id=model_id)
                  .values_list("observation_id", "generation"))
    return all((pk, entry.generations[entry.index[pk]]) in current for pk in found)


def _numpy_similarities(user_id: str, model_id: str, query, n: int, also, *, dimensions: int, using: str,
                        max_bytes: int, reach: Reach = EVERY_SCOPE) -> dict:
    key = (using, user_id, model_id)
    stamp = first_or_none(VectorStamp.objects.using(using).filter(user_id=user_id).values_list("stamp", flat=True))
    entry = matrices.get(key, stamp) if stamp is not None else None
    if entry is not None:
        found = _nearest(entry, reach, query, n, also)
        if _all_current(entry, found, model_id=model_id, using=using):
            return found
        matrices.discard(key)  # a row left since the load: read them all again
    entry = _load(user_id, model_id, dimensions, stamp, using=using)
    # Only committed rows are worth keeping: rows read inside a transaction may be rolled back.
    if stamp is not None and not connections[using].in_atomic_block:
        matrices.put(key, entry, max_bytes=max_bytes)
    return _nearest(entry, reach, query, n, also)


def derived_from_rows(*, user_id: str, reach: Reach = EVERY_SCOPE, model_id: str, dimensions: int,
                      using: str, max_bytes: int, key, compute):
    """``compute(rows)`` over the user's vectors of ``model_id`` in ``reach``, kept with the
    process's matrix of them under ``key`` until a new vector of the user is stored (its stamp).
    Read from the same matrix as the numpy lookup, with or without pgvector."""
    stamp = first_or_none(VectorStamp.objects.using(using).filter(user_id=user_id).values_list("stamp", flat=True))
    cache_key = (using, user_id, model_id)
    entry = matrices.get(cache_key, stamp) if stamp is not None else None
    if entry is None:
        entry = _load(user_id, model_id, dimensions, stamp, using=using)
        if stamp is not None and not connections[using].in_atomic_block:
            matrices.put(cache_key, entry, max_bytes=max_bytes)
    key = (key, reach.key)
    if key not in entry.derived:
        entry.derived[key] = compute(entry.rows_in(reach))
    return entry.derived[key]


def nearest_rows(*, model_id: str, dimensions: int, observation_ids, query, using: str):
    """For each of ``observation_ids`` that has a vector of ``model_id``, its row nearest to
    ``query``: its vector, or its best piece's (a ``(found, dimensions)`` array, in no order)."""
    import numpy as np

    query = np.asarray(query, dtype=np.float32)
    found = []
    stored = ObservationVector.objects.using(using).filter(observation_id__in=list(observation_ids), model_id=model_id)
    for vector, pieces in stored.values_list("vector", "pieces"):
        rows = unpack(vector if pieces is None else pieces, dimensions)
        found.append(rows[int(np.argmax(rows @ query))])
    return np.stack(found) if found else np.zeros((0, dimensions), dtype=np.float32)


def similarities(*, user_id: str, reach: Reach = EVERY_SCOPE, model_id: str, dimensions: int,
                 query: numpy.ndarray, n: int, also=(), using: str, max_bytes: int) -> dict:
    """{observation id: cosine} of the user's ``n`` nearest vectors of ``model_id`` in ``reach``,
    plus those of the observations in ``also`` that have one there."""
    if pgvector_ready(using):
        return _pg_similarities(user_id, model_id, query, n, also, using, reach)
    return _numpy_similarities(user_id, model_id, query, n, also, dimensions=dimensions, using=using,
                               max_bytes=max_bytes, reach=reach)
