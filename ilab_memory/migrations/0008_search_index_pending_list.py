"""PostgreSQL: a small pending list for the full-text GIN index (``services/search.py`` says
why and holds the statement, as for 0002). Other engines: nothing."""

from django.db import migrations


def small_pending_list(apps, schema_editor):
    from ilab_memory.services.search import PG_INDEX_OPTIONS

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_INDEX_OPTIONS)


def default_pending_list(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER INDEX ilab_mem_obs_search RESET (gin_pending_list_limit)")


class Migration(migrations.Migration):

    dependencies = [
        ("ilab_memory", "0007_observation_user_deleted_index"),
    ]

    operations = [
        migrations.RunPython(small_pending_list, default_pending_list, elidable=False),
    ]
