"""Scopes: sessions, observations and their vectors carry a scope.

Every existing row lands in the shared space (the empty scope, the column's default), so data
of the previous version means what it meant. The one-active-session rule, the one-live-topic
rule and the dedupe index become per (user, scope), under the names they had.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ilab_memory', '0009_pgvector'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='observation',
            name='ilab_memory_one_live_topic_per_user',
        ),
        migrations.RemoveConstraint(
            model_name='session',
            name='ilab_memory_one_active_session_per_user',
        ),
        migrations.RemoveIndex(
            model_name='observation',
            name='ilab_mem_obs_dedupe',
        ),
        migrations.AddField(
            model_name='observation',
            name='scope',
            field=models.CharField(blank=True, default='', max_length=64, verbose_name='scope'),
        ),
        migrations.AddField(
            model_name='observationvector',
            name='scope',
            field=models.CharField(blank=True, default='', max_length=64, verbose_name='scope'),
        ),
        migrations.AddField(
            model_name='session',
            name='scope',
            field=models.CharField(blank=True, default='', max_length=64, verbose_name='scope'),
        ),
        migrations.AddIndex(
            model_name='observation',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True)), fields=['user_id', 'scope', 'dedupe_hash', '-created_at'], name='ilab_mem_obs_dedupe'),
        ),
        migrations.AddConstraint(
            model_name='observation',
            constraint=models.UniqueConstraint(condition=models.Q(('deleted_at__isnull', True), ('topic_key__isnull', False)), fields=('user_id', 'scope', 'topic_key'), name='ilab_memory_one_live_topic_per_user'),
        ),
        migrations.AddConstraint(
            model_name='session',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'active')), fields=('user_id', 'scope'), name='ilab_memory_one_active_session_per_user'),
        ),
    ]
