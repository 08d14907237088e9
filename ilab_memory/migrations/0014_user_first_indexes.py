"""Indexes that read one user's rows without reading the others' (docs/scaling.md).

* ``ilab_mem_obs_user_created``: a user's observations in creation order, deleted ones
  included: what an export and an erasure read. The other user-first indexes leave deleted
  rows out, so both read the whole table before.
* PostgreSQL: the full-text index becomes ``(user_id, search_vector)`` with ``btree_gin``, a
  contrib extension of PostgreSQL, trusted since 13 (a database's owner may create it): a
  word's entries are read for the searching user only, not across every user. Where the
  extension cannot be created (not installed, or no privilege; the attempt runs in a
  savepoint) the index stays on ``search_vector`` alone, searches give the same results, and
  the ``ilab_memory.migrations`` logger says so. Going back restores the index on
  ``search_vector`` alone and keeps the extension, as 0009 keeps pgvector.

Raw SQL because Django has no expression for an index over a column the models do not declare
(``search_vector``, kept by the trigger of 0002) or for its storage parameters.
"""

import logging

from django.db import DatabaseError, migrations, models, transaction

logger = logging.getLogger("ilab_memory.migrations")

OBSERVATION_TABLE = "ilab_memory_observation"
PENDING_LIST = "WITH (gin_pending_list_limit = 128)"  # as 0008 set it
USER_FIRST = (
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    f"CREATE INDEX ilab_mem_obs_user_search ON {OBSERVATION_TABLE} USING gin (user_id, search_vector) {PENDING_LIST}",
    "DROP INDEX ilab_mem_obs_search",
)
WORDS_ONLY = (
    f"CREATE INDEX IF NOT EXISTS ilab_mem_obs_search ON {OBSERVATION_TABLE} USING gin (search_vector) {PENDING_LIST}",
    "DROP INDEX IF EXISTS ilab_mem_obs_user_search",
)


def user_first_search_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            for statement in USER_FIRST:
                schema_editor.execute(statement)
    except DatabaseError as error:
        logger.warning("btree_gin could not be created (%s): the full-text index stays on search_vector alone.",
                       str(error).splitlines()[0])


def words_only_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in WORDS_ONLY:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    # The savepoint above needs the migration's own transaction.
    atomic = True

    dependencies = [
        ("ilab_memory", "0013_vector_pieces"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="observation",
            index=models.Index(fields=["user_id", "created_at", "id"], name="ilab_mem_obs_user_created"),
        ),
        migrations.RunPython(user_first_search_index, words_only_search_index, elidable=False),
    ]
