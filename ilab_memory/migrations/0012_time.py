"""Time: when a memory happened (``happened_at``, on observations and their revisions) and
when it expires (``expires_at``).

Existing rows happened when they were saved: an observation's ``happened_at`` is its
``created_at``, a revision's its ``written_at``. The columns are added nullable, filled, then
made NOT NULL, so no row is ever without one. Two partial indexes: a user's live rows by
``happened_at`` (reads with since / until) and the rows that expire (the sweep).
"""

import django.utils.timezone
from django.db import migrations, models


def fill_happened_at(apps, schema_editor):
    using = schema_editor.connection.alias
    apps.get_model("ilab_memory", "Observation").objects.using(using).update(happened_at=models.F("created_at"))
    apps.get_model("ilab_memory", "ObservationRevision").objects.using(using).update(
        happened_at=models.F("written_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('ilab_memory', '0011_embedder_calibration'),
    ]

    operations = [
        migrations.AddField(
            model_name='observation',
            name='happened_at',
            field=models.DateTimeField(null=True, verbose_name='happened at'),
        ),
        migrations.AddField(
            model_name='observationrevision',
            name='happened_at',
            field=models.DateTimeField(null=True, verbose_name='happened at'),
        ),
        migrations.RunPython(fill_happened_at, migrations.RunPython.noop, elidable=False),
        migrations.AlterField(
            model_name='observation',
            name='happened_at',
            field=models.DateTimeField(default=django.utils.timezone.now, verbose_name='happened at'),
        ),
        migrations.AlterField(
            model_name='observationrevision',
            name='happened_at',
            field=models.DateTimeField(default=django.utils.timezone.now, verbose_name='happened at'),
        ),
        migrations.AddField(
            model_name='observation',
            name='expires_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='expires at'),
        ),
        migrations.AddIndex(
            model_name='observation',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True)), fields=['user_id', '-happened_at', '-id'], name='ilab_mem_obs_user_happened'),
        ),
        migrations.AddIndex(
            model_name='observation',
            index=models.Index(condition=models.Q(('expires_at__isnull', False)), fields=['expires_at'], name='ilab_mem_obs_expires'),
        ),
    ]
