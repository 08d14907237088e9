"""SPEC §4 at the write boundary: counts, dedupe and topics on redacted text, clean errors."""

from datetime import timedelta

import pytest
from django.test import override_settings

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation, ObservationRevision, Session
from ilab_memory.services.privacy import REDACTED

SECRET = "hunter2-secret"
H25 = timedelta(hours=25)


def assert_clean(*objects):
    for obj in objects:
        assert SECRET not in repr(obj)


# -- observations ------------------------------------------------------------------------


def test_save_redacts_every_text_field_and_counts_blocks(mem, clock):
    result = mem.mem_save(
        "alice",
        f"Deploy <private>{SECRET}</private>",
        f"Use <private>{SECRET}</private> and <PRIVATE>{SECRET}</PRIVATE>",
        topic_key=f"deploy <private>{SECRET}</private>",
        metadata={"token": f"<private>{SECRET}</private>", f"<private>{SECRET}</private>": ["<private/>"]},
    )
    stored = Observation.objects.get()
    assert stored.title == f"Deploy {REDACTED}"
    assert stored.content == f"Use {REDACTED} and {REDACTED}"
    assert stored.topic_key == "deploy-[redacted]"
    assert stored.metadata == {"token": REDACTED, REDACTED: [REDACTED]}
    assert stored.redacted_blocks == result.observation.redacted_blocks == 7
    assert_clean(result)


def test_save_without_private_blocks_counts_zero(mem, clock):
    assert mem.mem_save("alice", "Title", "Plain content").observation.redacted_blocks == 0


def test_two_saves_differing_only_inside_a_private_block_are_duplicates(mem, clock):
    first = mem.mem_save("alice", "Key", "The key is <private>abc</private>.")
    clock.shift(timedelta(minutes=5))
    second = mem.mem_save("alice", "Key", "The KEY is <private>xyz</private>.")
    assert second.action == "duplicate"
    assert second.observation.id == first.observation.id
    assert second.observation.duplicate_count == 2
    # The count is cumulative over writes: each save removed one block.
    assert second.observation.redacted_blocks == 2
    assert Observation.objects.count() == 1


def test_titles_differing_only_inside_a_private_block_are_duplicates(mem, clock):
    mem.mem_save("alice", "Token <private>one</private>", "Same content")
    second = mem.mem_save("alice", "Token <private>two</private>", "Same content")
    assert second.action == "duplicate"


def test_topic_keys_differing_only_inside_a_private_block_revise_one_observation(mem, clock):
    first = mem.mem_save("alice", "Server", "Old <private>pw1</private>", topic_key="srv <private>a</private>")
    second = mem.mem_save("alice", "Server", "New <private>pw2</private>", topic_key="srv <private>b</private>")
    assert second.action == "revised"
    assert second.observation.id == first.observation.id
    assert second.observation.topic_key == "srv-[redacted]"
    revision = ObservationRevision.objects.get()
    assert revision.content == f"Old {REDACTED}" and revision.topic_key == "srv-[redacted]"


def test_update_redacts_and_adds_to_the_count(mem, clock):
    saved = mem.mem_save("alice", "Title", "Content <private>one</private>").observation
    record = mem.mem_update(
        "alice", saved.id, content=f"New <private>{SECRET}</private>", metadata={"k": f"<private>{SECRET}"}
    )
    assert record.content == f"New {REDACTED}"
    assert record.metadata == {"k": REDACTED}
    assert record.redacted_blocks == 3
    assert Observation.objects.get().redacted_blocks == 3
    assert_clean(record, mem.mem_revisions("alice", saved.id))


@pytest.mark.parametrize("field", ["title", "content"])
@pytest.mark.parametrize("text", ["</private>", "  </private>\n", "</PRIVATE></private>"])
def test_text_that_redacts_to_blank_is_rejected(mem, clock, field, text):
    values = {"title": "Title", "content": "Content", field: text}
    with pytest.raises(ValidationError) as caught:
        mem.mem_save("alice", values["title"], values["content"])
    assert caught.value.field == field and caught.value.code == "blank"
    assert not Observation.objects.exists() and not Session.objects.exists()


def test_update_to_text_that_redacts_to_blank_is_rejected(mem, clock):
    saved = mem.mem_save("alice", "Title", "Content").observation
    with pytest.raises(ValidationError):
        mem.mem_update("alice", saved.id, title="</private>")
    assert Observation.objects.get().title == "Title"


def test_fully_private_title_is_stored_as_the_marker(mem, clock):
    assert mem.mem_save("alice", f"<private>{SECRET}</private>", "c").observation.title == REDACTED


# -- summaries ---------------------------------------------------------------------------


def test_narrative_summary_is_redacted_and_counted(mem, clock):
    record = mem.mem_session_summary("alice", f"Did <private>{SECRET}</private> and <private>x</private>")
    session = Session.objects.get()
    assert session.summary == record.summary == f"Did {REDACTED} and {REDACTED}"
    assert session.redacted_blocks == 2 and session.is_auto_generated is False
    assert_clean(record)


def test_end_summary_is_redacted_and_counted(mem, clock):
    mem.mem_session_start("alice")
    record = mem.mem_session_end("alice", summary=f"Closed <private>{SECRET}")
    session = Session.objects.get()
    assert session.summary == record.summary == f"Closed {REDACTED}"
    assert session.redacted_blocks == 1
    assert_clean(record)


def test_session_count_adds_up_over_summaries_and_never_goes_down(mem, clock):
    mem.mem_session_summary("alice", "First <private>a</private> <private>b</private>")
    mem.mem_session_summary("alice", "Second <private>c</private>")
    assert Session.objects.get().redacted_blocks == 3
    mem.mem_session_summary("alice", "Third, nothing private")
    record = mem.mem_session_end("alice", summary="Last <private>d</private>")
    assert record.summary == f"Last {REDACTED}"
    assert Session.objects.get().redacted_blocks == 4


def test_end_summary_that_redacts_to_blank_keeps_the_stored_narrative(mem, clock):
    mem.mem_session_summary("alice", "Narrative <private>x</private>")
    record = mem.mem_session_end("alice", summary="</private>")
    assert record.summary == f"Narrative {REDACTED}" and record.is_auto_generated is False
    assert Session.objects.get().redacted_blocks == 1


def test_summary_that_redacts_to_blank_is_rejected(mem, clock):
    with pytest.raises(ValidationError) as caught:
        mem.mem_session_summary("alice", "</private>")
    assert caught.value.field == "summary" and caught.value.code == "blank"
    assert not Session.objects.exists()


def test_synthetic_summary_on_end_uses_redacted_titles_and_counts_zero(mem, clock):
    mem.mem_save("alice", f"Login <private>{SECRET}</private>", "c", type="config")
    record = mem.mem_session_end("alice")
    assert record.summary == f"Memorias registradas: [config] Login {REDACTED}"
    assert record.is_auto_generated is True
    assert Session.objects.get().redacted_blocks == 0


def test_synthetic_summary_on_auto_close_uses_redacted_titles(mem, clock):
    mem.mem_save("alice", f"Login <private>{SECRET}</private>", "c")
    clock.shift(H25)
    assert mem.mem_close_expired()
    session = Session.objects.get()
    assert session.summary == f"Memorias registradas: [manual] Login {REDACTED}"
    assert session.is_auto_generated is True and session.redacted_blocks == 0


def test_auto_close_keeps_a_redacted_narrative_and_its_count(mem, clock):
    mem.mem_session_summary("alice", f"Narrative <private>{SECRET}</private>")
    clock.shift(H25)
    response = mem.mem_session_start("alice")
    assert response.is_new is True
    closed = Session.objects.get(status="completed")
    assert closed.summary == f"Narrative {REDACTED}" and closed.redacted_blocks == 1
    assert_clean(response)


# -- errors never echo input -------------------------------------------------------------

LIMITS = {
    "MAX_TITLE_CHARS": 20,
    "MAX_CONTENT_CHARS": 40,
    "MAX_TOPIC_KEY_CHARS": 20,
    "MAX_SUMMARY_CHARS": 30,
    "MAX_METADATA_BYTES": 40,
}
PUBLIC = "visible-words-outside-the-tags-" * 3  # over every limit above on its own


def private_and_public():
    return f"{PUBLIC}<private>{SECRET}</private>"


def assert_error_is_clean(error: ValidationError, field: str):
    for text in (str(error), repr(error), error.message, repr(error.args), repr(vars(error))):
        assert SECRET not in text and PUBLIC[:20] not in text
    assert error.field == field


@override_settings(ILAB_MEMORY=LIMITS)
@pytest.mark.parametrize(
    "field, call",
    [
        ("title", lambda m: m.mem_save("alice", private_and_public(), "c")),
        ("content", lambda m: m.mem_save("alice", "t", private_and_public())),
        ("topic_key", lambda m: m.mem_save("alice", "t", "c", topic_key=private_and_public())),
        ("metadata", lambda m: m.mem_save("alice", "t", "c", metadata={"k": private_and_public()})),
        ("summary", lambda m: m.mem_session_summary("alice", private_and_public())),
        ("summary", lambda m: m.mem_session_end("alice", summary=private_and_public())),
    ],
)
def test_over_limit_error_names_field_and_limit_but_never_the_value(mem, clock, field, call):
    with pytest.raises(ValidationError) as caught:
        call(mem)
    assert_error_is_clean(caught.value, field)
    assert caught.value.code == "max_length" and caught.value.limit is not None
    assert not Observation.objects.exists() and not Session.objects.exists()


@override_settings(ILAB_MEMORY={"MAX_TITLE_CHARS": 20})
def test_over_limit_size_is_the_redacted_size_so_the_private_length_does_not_leak(mem, clock):
    title = "x" * 25 + f"<private>{SECRET * 50}</private>"
    with pytest.raises(ValidationError) as caught:
        mem.mem_save("alice", title, "c")
    assert caught.value.size == 25 + len(REDACTED)


@override_settings(ILAB_MEMORY={"MAX_TITLE_CHARS": 20})
def test_private_text_does_not_count_against_the_limit(mem, clock):
    record = mem.mem_save("alice", f"short <private>{SECRET * 100}</private>", "c").observation
    assert record.title == f"short {REDACTED}"


@pytest.mark.parametrize(
    "field, kwargs",
    [
        ("type", {"type": f"<private>{SECRET}</private>"}),
        ("content", {"content": f"nul\x00 <private>{SECRET}</private>"}),
        ("metadata", {"metadata": [f"<private>{SECRET}</private>"]}),
        ("metadata", {"metadata": {"k": f"\x00<private>{SECRET}</private>"}}),
        ("metadata", {"metadata": {"k": {f"<private>{SECRET}</private>"}}}),
    ],
)
def test_shape_errors_never_echo_the_value(mem, clock, field, kwargs):
    values = {"title": "t", "content": "c", **kwargs}
    with pytest.raises(ValidationError) as caught:
        mem.mem_save("alice", **values)
    assert SECRET not in str(caught.value) and SECRET not in repr(vars(caught.value))
    assert caught.value.field == field


@pytest.mark.parametrize("where", ["document", "observation"])
def test_import_error_for_an_unknown_key_never_echoes_a_private_block(mem, clock, where):
    mem.mem_save("alice", "Title", "Content")
    document = mem.mem_export("alice")
    key = f"<private>{SECRET}</private>"
    (document if where == "document" else document["observations"][0])[key] = 1
    with pytest.raises(ValidationError) as caught:
        mem.mem_import("alice", document)
    assert caught.value.code == "unknown_field"
    assert SECRET not in repr(vars(caught.value)) and SECRET not in str(caught.value)
