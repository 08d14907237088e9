"""PostgreSQL with pgvector: the ``vector`` extension and an ``embedding vector`` column beside
each stored vector, filled from the stored bytes, so the database ranks a user's vectors.

Where pgvector cannot be had this migration is applied and changes nothing, and searches rank
in the process (numpy) as before: on SQLite and other engines; on a PostgreSQL server that does
not offer the extension (``pg_available_extensions``); and where this role may not create it
or alter the table (the attempt runs in a savepoint, so a refusal leaves neither the extension
nor the column behind). It logs which case it was on the ``ilab_memory.migrations`` logger.

An operator who makes pgvector available later gets the column by running this migration
again: ``manage.py migrate ilab_memory 0008`` then ``manage.py migrate ilab_memory``.

Going back drops the column and keeps the extension. The column is a copy of ``vector``,
filled again going forward, so nothing is lost; the extension belongs to the database, may
serve others, and dropping it needs a privilege the site's role often lacks.

Raw SQL because Django has no expression for extensions, and the ORM has no field for
pgvector's type (the library does not depend on the ``pgvector`` package).
"""

import logging
import struct

from django.db import ProgrammingError, migrations, transaction

logger = logging.getLogger("ilab_memory.migrations")

VECTOR_TABLE = "ilab_memory_observationvector"
INSUFFICIENT_PRIVILEGE = "42501"
BATCH = 1000


def _literal(blob) -> str:
    """pgvector's text form of stored float32 little-endian bytes."""
    blob = bytes(blob)
    return "[" + ",".join(repr(x) for x in struct.unpack(f"<{len(blob) // 4}f", blob)) + "]"


def _fill(apps, cursor, alias) -> None:
    """Copy the vectors stored so far into the column, a batch of rows at a time."""
    vectors = apps.get_model("ilab_memory", "ObservationVector").objects.using(alias)
    last = 0
    while batch := list(vectors.filter(id__gt=last, vector__isnull=False).order_by("id")
                        .values_list("id", "vector")[:BATCH]):
        cursor.executemany(f"UPDATE {VECTOR_TABLE} SET embedding = CAST(%s AS vector) WHERE id = %s",
                           [(_literal(blob), pk) for pk, blob in batch])
        last = batch[-1][0]


def add_embedding_column(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        logger.info("pgvector: not PostgreSQL, no embedding column; vectors are ranked in the process.")
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = 'vector'")
        available = cursor.fetchone()
    if available is None:
        logger.info("pgvector: the server does not offer the extension, no embedding column.")
        return
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            if not available[0]:
                cursor.execute("CREATE EXTENSION vector")
            # IF NOT EXISTS: a site may have added it with the command of earlier releases.
            cursor.execute(f"ALTER TABLE {VECTOR_TABLE} ADD COLUMN IF NOT EXISTS embedding vector")
            _fill(apps, cursor, connection.alias)
    except ProgrammingError as error:
        cause = error.__cause__  # psycopg's error: sqlstate (psycopg 3) or pgcode (psycopg2)
        if (getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)) != INSUFFICIENT_PRIVILEGE:
            raise
        logger.warning("pgvector: this role may not create the extension or the column (%s); "
                       "no embedding column.", str(error).strip())


def drop_embedding_column(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {VECTOR_TABLE} DROP COLUMN IF EXISTS embedding")


class Migration(migrations.Migration):

    dependencies = [
        ("ilab_memory", "0008_search_index_pending_list"),
    ]

    operations = [
        migrations.RunPython(add_embedding_column, drop_embedding_column, elidable=False),
    ]
