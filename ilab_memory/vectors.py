"""Stored embeddings: their byte format, and a user's nearest ones to a query vector.

Vectors are float32 little-endian bytes in ``ObservationVector.vector``, on every engine. The
lookup is exact and scoped by ``user_id`` before anything is ranked:

* **PostgreSQL with pgvector** (the extension present and the ``embedding`` column added, see
  ``pgvector_ready``): the database scans the user's rows through the (user_id, model_id)
  index and orders by cosine distance. No approximate index: an ANN index would rank across
  all users and filter afterwards, which can miss a user's best rows.
* **SQLite, and PostgreSQL without pgvector**: the user's vectors are read once into a numpy
  matrix kept in this process (``VECTOR_CACHE_MB`` in all, least recently used out first) and
  scored with one matrix-vector product. Each search checks a fingerprint of the user's rows
  (count, sum of generations, highest id: one index-only read) and reloads when it changed,
  so a search always sees the vectors committed before it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from django.db import connections
from django.db.models import Count, Max, Sum

from .models import ObservationVector

if TYPE_CHECKING:
    import numpy

VECTOR_TABLE = ObservationVector._meta.db_table
PGVECTOR_COLUMN = "embedding"


def pack(vector) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


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


def forget_pgvector_state() -> None:
    """Read the column's presence again (after the migration or ``ilab_memory_embed --pgvector``)."""
    _pgvector_ready.clear()


def install_pgvector(connection) -> bool:
    """Create the extension (when the role may) and the ``embedding`` column, and fill it for
    vectors stored before; True if the column is there afterwards.

    A failure (no extension on the server, no privilege) leaves the numpy path in place.
    """
    if connection.vendor != "postgresql":
        return False
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor.execute(f"ALTER TABLE {VECTOR_TABLE} ADD COLUMN IF NOT EXISTS {PGVECTOR_COLUMN} vector")
    except DatabaseError:
        return False
    finally:
        forget_pgvector_state()
    import numpy as np

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, vector FROM {VECTOR_TABLE} WHERE vector IS NOT NULL AND {PGVECTOR_COLUMN} IS NULL")
        for pk, blob in cursor.fetchall():
            literal = pgvector_literal(np.frombuffer(bytes(blob), dtype="<f4"))
            cursor.execute(f"UPDATE {VECTOR_TABLE} SET {PGVECTOR_COLUMN} = CAST(%s AS vector) WHERE id = %s", [literal, pk])
    return True


def store_pgvector(pk: int, vector, *, using: str) -> None:
    """Copy a stored vector into the pgvector column (the ORM has no field for its type)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"UPDATE {VECTOR_TABLE} SET {PGVECTOR_COLUMN} = CAST(%s AS vector) WHERE id = %s",
            [pgvector_literal(vector), pk],
        )


# Exact and user-scoped: the (user_id, model_id) index finds the user's rows, the sort ranks
# them. The second branch adds the cosines of other candidates (found by words) the caller asks for.
PG_NEAREST = f"""
    (SELECT observation_id, 1 - ({PGVECTOR_COLUMN} <=> CAST(%s AS vector)) AS cosine
     FROM {VECTOR_TABLE} WHERE user_id = %s AND model_id = %s AND {PGVECTOR_COLUMN} IS NOT NULL
     ORDER BY {PGVECTOR_COLUMN} <=> CAST(%s AS vector) LIMIT %s)
    UNION
    (SELECT observation_id, 1 - ({PGVECTOR_COLUMN} <=> CAST(%s AS vector))
     FROM {VECTOR_TABLE} WHERE user_id = %s AND model_id = %s AND {PGVECTOR_COLUMN} IS NOT NULL
       AND observation_id = ANY(%s))"""


def _pg_similarities(user_id: str, model_id: str, query, n: int, also, using: str) -> dict:
    literal = pgvector_literal(query)
    with connections[using].cursor() as cursor:
        cursor.execute(PG_NEAREST, [literal, user_id, model_id, literal, n, literal, user_id, model_id, list(also)])
        return {observation_id: float(cosine) for observation_id, cosine in cursor.fetchall()}


# -- numpy ------------------------------------------------------------------------------------


class _Matrix:
    __slots__ = ("fingerprint", "observation_ids", "rows", "index")

    def __init__(self, fingerprint, observation_ids, rows):
        self.fingerprint = fingerprint
        self.observation_ids = observation_ids
        self.rows = rows
        self.index = {pk: i for i, pk in enumerate(observation_ids)}


class MatrixCache:
    """A process's user matrices, bounded in bytes, least recently used out first."""

    def __init__(self):
        self._entries: OrderedDict[tuple, _Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, fingerprint) -> _Matrix | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.fingerprint != fingerprint:
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

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


matrices = MatrixCache()


def _user_vectors(user_id: str, model_id: str, using: str):
    return ObservationVector.objects.using(using).filter(user_id=user_id, model_id=model_id)


def _matrix(user_id: str, model_id: str, dimensions: int, *, using: str, max_bytes: int) -> _Matrix:
    import numpy as np

    rows = _user_vectors(user_id, model_id, using)
    fingerprint = tuple(rows.aggregate(n=Count("id"), g=Sum("generation"), top=Max("id")).values())
    key = (using, user_id, model_id)
    entry = matrices.get(key, fingerprint)
    if entry is None:
        ids, blobs = [], []
        for observation_id, blob in rows.values_list("observation_id", "vector").iterator(chunk_size=2000):
            ids.append(observation_id)
            blobs.append(bytes(blob))
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dimensions) if ids else (
            np.zeros((0, dimensions), dtype=np.float32))
        entry = _Matrix(fingerprint, ids, matrix)
        # Only committed rows are worth keeping: rows read inside a transaction may be rolled
        # back, and SQLite then hands their ids out again, so a later state could show the same
        # fingerprint with other vectors.
        if not connections[using].in_atomic_block:
            matrices.put(key, entry, max_bytes=max_bytes)
    return entry


def _numpy_similarities(user_id: str, model_id: str, query, n: int, also, *, dimensions: int, using: str,
                        max_bytes: int) -> dict:
    import numpy as np

    entry = _matrix(user_id, model_id, dimensions, using=using, max_bytes=max_bytes)
    if not entry.observation_ids:
        return {}
    cosines = entry.rows @ np.asarray(query, dtype=np.float32)
    n = min(n, len(cosines))
    top = np.argpartition(-cosines, n - 1)[:n] if n else []
    found = {entry.observation_ids[i]: float(cosines[i]) for i in top}
    for pk in also:
        i = entry.index.get(pk)
        if i is not None:
            found[pk] = float(cosines[i])
    return found


def similarities(*, user_id: str, model_id: str, dimensions: int, query: numpy.ndarray, n: int, also=(),
                 using: str, max_bytes: int) -> dict:
    """{observation id: cosine} of the user's ``n`` nearest vectors of ``model_id``, plus those of
    the observations in ``also`` that have one."""
    if pgvector_ready(using):
        return _pg_similarities(user_id, model_id, query, n, also, using)
    return _numpy_similarities(user_id, model_id, query, n, also, dimensions=dimensions, using=using,
                               max_bytes=max_bytes)
