"""PostgreSQL: a small pending list for the full-text GIN index. Other engines: nothing.

The GIN index keeps new entries in a pending list that every search scans until it is merged
(at ``gin_pending_list_limit``, by default 4 MB, or by VACUUM). A small list keeps searches
cheap on a site that writes all day, for little cost to saves.

Raw SQL because Django has no expression for an index's storage parameters; a ``RunPython``
that checks the vendor because the index exists only on PostgreSQL.
"""

from django.db import migrations

SMALL_PENDING_LIST = "ALTER INDEX ilab_mem_obs_search SET (gin_pending_list_limit = 128)"
DEFAULT_PENDING_LIST = "ALTER INDEX ilab_mem_obs_search RESET (gin_pending_list_limit)"


def small_pending_list(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SMALL_PENDING_LIST)


def default_pending_list(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DEFAULT_PENDING_LIST)


class Migration(migrations.Migration):

    dependencies = [
        ("ilab_memory", "0007_observation_user_deleted_index"),
    ]

    operations = [
        migrations.RunPython(small_pending_list, default_pending_list, elidable=False),
    ]
