"""services/erasure.py: a user, or one scope of a user, erased with everything derived from it
(revisions, vectors, index entries, the admin log's titles), and the signal it sends."""


import pytest
from django.db import connection

from ilab_memory import signals
from ilab_memory.exceptions import ValidationError
from ilab_memory.models import (
    Observation,
    ObservationRevision,
    ObservationVector,
    Session,
    VectorStamp,
)
from ilab_memory.services.embedding import embed_waiting
from tests.histories import fill, fill_scopes, nothing_of, postgresql_dump, two_histories


def test_forget_erases_every_row_of_the_user_and_returns_counts(mem, clock):
    fill(mem, "alice")
    fill(mem, "bob")
    embed_waiting()
    assert VectorStamp.objects.filter(user_id="alice").exists()
    counts = mem.mem_forget_user("alice")
    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    assert not VectorStamp.objects.filter(user_id="alice").exists()
    assert VectorStamp.objects.filter(user_id="bob").exists()
    assert not Session.objects.filter(user_id="alice").exists()
    assert not Observation.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()
    assert Observation.objects.filter(user_id="bob").count() == 4


def test_forget_of_an_unknown_user_erases_nothing(mem):
    assert mem.mem_forget_user("nobody") == {"sessions": 0, "observations": 0, "revisions": 0, "vectors": 0}


def test_forget_rejects_a_bad_user_id(mem):
    with pytest.raises(ValidationError, match="user_id"):
        mem.mem_forget_user("  ")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="dumps PostgreSQL tables")
def test_forgotten_user_is_in_no_row_of_any_postgresql_table(tmem):
    alice, alice_marker, bob, bob_marker = two_histories(tmem)

    assert alice_marker in postgresql_dump()  # the check can see it
    counts = tmem.mem_forget_user(alice)
    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    after = postgresql_dump()
    for trace in (alice_marker, alice_marker.lower(), alice):
        assert trace not in after
    assert bob_marker in after
    assert Observation.objects.filter(user_id=bob).count() == 4
    assert ObservationRevision.objects.filter(user_id=bob).count() == 1
    assert Session.objects.filter(user_id=bob).count() == 2
    assert tmem.mem_search(bob, bob_marker)


def test_forget_leaves_no_search_index_entry(mem):
    mem.mem_save("alice", "needle in alice", "haystack")
    mem.mem_save("bob", "needle in bob", "haystack")
    mem.mem_forget_user("alice")
    assert [m.title for m in mem.mem_search("bob", "needle")] == ["needle in bob"]
    assert mem.mem_search("alice", "needle") == []
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT COUNT(*) FROM ilab_memory_search WHERE ilab_memory_search MATCH 'alice'")
            assert cursor.fetchone() == (0,)


def test_forget_leaves_no_title_in_the_admin_log(mem):
    """Whichever face erases, the host's admin log keeps the erased rows' entries by id only."""
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    operator = get_user_model().objects.create_user("operator-for-log")
    mine = mem.mem_save("alice", "Alice's secret garden", "roses").observation
    other = mem.mem_save("bob", "Bob's shed", "tools").observation
    for observation in (mine, other):
        LogEntry.objects.create(
            user=operator, content_type=ContentType.objects.get_for_model(Observation), object_id=observation.id,
            object_repr=observation.title, action_flag=CHANGE, change_message="edited",
        )
    mem.mem_forget_user("alice")
    assert LogEntry.objects.get(object_id=mine.id).object_repr == mine.id
    assert LogEntry.objects.get(object_id=other.id).object_repr == "Bob's shed"


def test_forget_one_scope_leaves_the_others_and_their_search(mem, clock):
    fill_scopes(mem, clock=clock)
    fill_scopes(mem, "bob", clock=clock)
    embed_waiting()
    assert [m.title for m in mem.mem_search("alice", "needle", scope="*")]  # the matrix is cached now
    stamp = VectorStamp.objects.get(user_id="alice").stamp
    kept_revisions = ObservationRevision.objects.filter(user_id="alice").exclude(observation__scope="coder").count()

    counts = mem.mem_forget_user("alice", scope="coder")

    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}
    assert set(Session.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}
    assert ObservationRevision.objects.filter(user_id="alice").count() == kept_revisions == 2
    assert not ObservationVector.objects.filter(user_id="alice", scope="coder").exists()
    assert ObservationVector.objects.filter(user_id="alice", scope="writer").count() == 3
    assert VectorStamp.objects.get(user_id="alice").stamp != stamp  # processes reload the rest
    found = [m.title for m in mem.mem_search("alice", "needle", scope="*")]
    assert "Fact of coder" not in found and {"Fact of shared", "Fact of writer"} <= set(found)
    # Read as the agent "coder": its own memories are gone, the shared space is still there.
    as_coder = mem.mem_search("alice", "needle", scope="coder")
    assert "Fact of shared" in [m.title for m in as_coder] and {m.scope for m in as_coder} == {""}
    assert Observation.objects.filter(user_id="bob").count() == 12
    assert Observation.objects.filter(user_id="bob", scope="coder").count() == 4


def test_forget_the_shared_space_leaves_the_named_scopes(mem, clock):
    fill_scopes(mem, clock=clock)
    counts = mem.mem_forget_user("alice", scope="")
    assert counts["sessions"] == 2 and counts["observations"] == 4
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"coder", "writer"}


def test_an_erased_scope_starts_afresh(mem, clock):
    fill_scopes(mem, clock=clock)
    mem.mem_forget_user("alice", scope="writer")
    started = mem.mem_session_start("alice", scope="writer")
    assert Session.objects.get(pk=started.session_id).scope == "writer"
    assert all(m.scope == "" for m in started.memories)  # it reads the shared space only now


def test_forget_every_scope_erases_the_whole_user(mem, clock):
    fill_scopes(mem, clock=clock)
    embed_waiting()
    counts = mem.mem_forget_user("alice", scope="*")
    assert counts == {"sessions": 6, "observations": 12, "revisions": 3, "vectors": 9}
    assert nothing_of("alice") and not VectorStamp.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()


@pytest.mark.parametrize("scope", [["coder"], "Coder", "x" * 65, 4])
def test_forget_refuses_a_bad_scope_and_erases_nothing(mem, clock, scope):
    fill_scopes(mem, clock=clock)
    with pytest.raises(ValidationError) as error:
        mem.mem_forget_user("alice", scope=scope)
    assert error.value.field == "scope"
    assert Observation.objects.filter(user_id="alice").count() == 12


def test_user_forgotten_is_sent_for_the_whole_user_only(tmem, clock):
    fill_scopes(tmem, clock=clock)
    got = []

    def receiver(sender, **kwargs):
        got.append(kwargs)

    signals.user_forgotten.connect(receiver)
    try:
        tmem.mem_forget_user("alice", scope="coder")
        assert got == []
        tmem.mem_forget_user("alice")
    finally:
        signals.user_forgotten.disconnect(receiver)
    assert [sorted(k) for k in got] == [["counts", "signal", "user_id", "using"]]
    assert got[0]["counts"]["observations"] == 8


def test_forget_of_a_scope_leaves_no_title_in_the_admin_log(mem):
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    operator = get_user_model().objects.create_user("operator-for-log")
    erased = mem.mem_save("alice", "Coder's secret", "x", scope="coder").observation
    kept = mem.mem_save("alice", "Writer's draft", "y", scope="writer").observation
    for observation in (erased, kept):
        LogEntry.objects.create(
            user=operator, content_type=ContentType.objects.get_for_model(Observation), object_id=observation.id,
            object_repr=observation.title, action_flag=CHANGE, change_message="edited",
        )
    mem.mem_forget_user("alice", scope="coder")
    assert LogEntry.objects.get(object_id=erased.id).object_repr == erased.id
    assert LogEntry.objects.get(object_id=kept.id).object_repr == "Writer's draft"
