"""The full-text search index: an FTS5 table and triggers on SQLite, a tsvector column, its
trigger and a GIN index on PostgreSQL. The SQL lives in ``ilab_memory.services.search`` so the
migration, the self-repair and ``ilab_memory_rebuild_index`` can never disagree."""

from django.db import migrations


def install(apps, schema_editor):
    from ilab_memory.services.search import index_install

    index_install(schema_editor.connection)


def uninstall(apps, schema_editor):
    from ilab_memory.services.search import index_uninstall

    index_uninstall(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ("ilab_memory", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(install, uninstall, elidable=False),
    ]
