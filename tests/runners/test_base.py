"""runners/base.py: the contract a runner named by ``EMBEDDING_RUNNER`` is called by: with keywords,
the settings and the database alias, once the write that queued vectors has committed."""

import pytest
from django.db import transaction
from django.test import override_settings

from ilab_memory.conf import Config
from ilab_memory.models import ObservationVector
from ilab_memory.runners import base, celery, thread

CALLS: list[dict] = []


def recording_runner(*, config, using):
    CALLS.append({"config": config, "using": using, "waiting": ObservationVector.objects.filter(
        model_id__isnull=True).count()})


@pytest.fixture
def recorded():
    CALLS.clear()
    with override_settings(ILAB_MEMORY={"EMBEDDER": "tests.embedders.RecordingEmbedder",
                                        "EMBEDDING_RUNNER": "tests.runners.test_base.recording_runner"}):
        yield CALLS


def test_a_runner_is_called_with_the_settings_and_the_alias_after_the_write_commits(tmem, recorded):
    with transaction.atomic():
        tmem.mem_save("ana", "Tea", "Green tea.")
        assert recorded == []  # not before the commit: the row it would embed is not visible yet
    assert len(recorded) == 1
    (call,) = recorded
    assert isinstance(call["config"], Config) and call["using"] == "default" and call["waiting"] == 1


def test_the_shipped_runners_take_the_contracts_keywords():
    shipped: list[base.Runner] = [thread.runner, celery.runner]
    for runner in shipped:
        assert callable(runner)
        assert {"config", "using"} <= set(runner.__code__.co_varnames[:runner.__code__.co_kwonlyargcount])
