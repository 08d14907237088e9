"""Private blocks: the redaction function itself (pure Python, no database), then its use at the write
boundary: counts, dedupe and topics on redacted text, clean errors."""

import signal
import threading
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation, ObservationRevision, Session
from ilab_memory.services.privacy import REDACTED, Redacted, redact, redact_json

MB = 1 << 20


def test_text_without_tags_is_returned_unchanged():
    assert redact("plain text, a < b and c > d") == Redacted("plain text, a < b and c > d", 0)


def test_plain_block_is_replaced_and_counted():
    assert redact("before <private>secret</private> after") == Redacted(f"before {REDACTED} after", 1)


def test_each_of_several_blocks_is_replaced_and_counted():
    result = redact("a <private>s1</private> b <private>s2</private> c <private>s3</private> d")
    assert result == Redacted(f"a {REDACTED} b {REDACTED} c {REDACTED} d", 3)


def test_nested_blocks_are_depth_counted_and_count_once():
    result = redact("a <private>s1 <private>s2</private> s3</private> b")
    assert result == Redacted(f"a {REDACTED} b", 1)


def test_inner_closer_does_not_end_the_outer_block():
    result = redact("<private><private><private>s1</private>s2</private>s3</private>tail")
    assert result == Redacted(f"{REDACTED}tail", 1)


def test_unclosed_opener_redacts_through_the_end():
    assert redact("keep <private>secret and everything after") == Redacted(f"keep {REDACTED}", 1)


def test_nested_opener_left_open_redacts_through_the_end():
    result = redact("keep <private>s1 <private>s2</private> s3 still private")
    assert result == Redacted(f"keep {REDACTED}", 1)


def test_stray_closer_is_dropped():
    assert redact("a </private> b") == Redacted("a  b", 0)


def test_stray_closer_cannot_pair_with_a_later_opener():
    result = redact("x </private> y <private>secret</private> z")
    assert result == Redacted(f"x  y {REDACTED} z", 1)


@pytest.mark.parametrize(
    "text",
    [
        "<PRIVATE>secret</PRIVATE>",
        "<Private>secret</pRiVaTe>",
        "<private>secret</PRIVATE>",
        "< private >secret< / private >",
    ],
)
def test_tag_names_are_case_insensitive_and_may_carry_spaces(text):
    assert redact(f"a {text} b") == Redacted(f"a {REDACTED} b", 1)


@pytest.mark.parametrize(
    "opener",
    [
        '<private class="x">',
        "<private reason='api key' level=3>",
        "<private\ndata-kind=\"token\"\n>",
        '<PRIVATE id="a>b">',  # a ">" inside a quoted value ends the tag early: still redacted
    ],
)
def test_openers_may_carry_attributes(opener):
    result = redact(f"a {opener}secret</private> b")
    assert result.blocks == 1
    assert "secret" not in result.text
    assert result.text.startswith("a ") and result.text.endswith(" b")


def test_closer_with_attributes_still_closes():
    assert redact("<private>secret</private junk> after") == Redacted(f"{REDACTED} after", 1)


@pytest.mark.parametrize("tag", ["<private/>", "<private />", '<PRIVATE reason="x"/>'])
def test_self_closing_tag_is_an_empty_block(tag):
    assert redact(f"a {tag} b") == Redacted(f"a {REDACTED} b", 1)


def test_self_closing_tag_inside_a_block_does_not_change_depth():
    assert redact("<private>s1 <private/> s2</private> b") == Redacted(f"{REDACTED} b", 1)


def test_block_spanning_lines_is_redacted_whole():
    text = "line 1\n<private>\nsecret line 2\r\nsecret line 3\n</private>\nline 4"
    assert redact(text) == Redacted(f"line 1\n{REDACTED}\nline 4", 1)


def test_adjacent_blocks_are_two_blocks():
    result = redact("<private>s1</private><private>s2</private>")
    assert result == Redacted(REDACTED * 2, 2)


def test_blocks_inside_markdown_code_fences_are_still_redacted():
    # The grammar knows no Markdown: a tag is a tag wherever it is written (fail closed).
    text = "Example:\n```python\ntoken = '<private>s3cr3t</private>'\n```\nand `<private>inline</private>`"
    result = redact(text)
    assert "s3cr3t" not in result.text and "inline" not in result.text
    assert result.blocks == 2


@pytest.mark.parametrize(
    "text",
    ["<privateer> sails", "ssh -i <private-key> host", "<private_notes>", "<privacy>", "</privately>", "a<b>c"],
)
def test_other_tag_names_are_not_private_tags(text):
    assert redact(text) == Redacted(text, 0)


def test_opener_cut_short_still_opens_a_block():
    # Fail closed: an opener whose ">" never comes, or that a "<" interrupts, still opens.
    assert redact("a <private secret") == Redacted("a [REDACTED]", 1)
    assert redact('<private note="a<b">secret</private> tail') == Redacted("[REDACTED] tail", 1)
    assert redact("x <private<b>s</private>y") == Redacted("x [REDACTED]y", 1)


def test_closer_cut_short_closes_nothing():
    assert redact("<private>s</private x<i>more") == Redacted("[REDACTED]", 1)
    assert redact("a </private b") == Redacted("a </private b", 0)


def test_redaction_is_idempotent():
    once = redact("a <private>s</private> b <private>unclosed")
    assert redact(once.text) == Redacted(once.text, 0)


def test_redact_json_cleans_values_and_keys_recursively_and_counts():
    value = {
        "plain": "keep",
        "note": "x <private>v1</private>",
        "list": ["<private>v2</private>", 3, None, True, {"deep": "<private>v3</private>"}],
        "key <private>k1</private>": 1.5,
    }
    cleaned, blocks = redact_json(value)
    assert blocks == 4
    assert cleaned == {
        "plain": "keep",
        "note": f"x {REDACTED}",
        "list": [REDACTED, 3, None, True, {"deep": REDACTED}],
        f"key {REDACTED}": 1.5,
    }


def test_redact_json_keeps_keys_that_differ_only_inside_private_blocks_apart():
    cleaned, blocks = redact_json({"<private>a</private>": 1, "<private>b</private>": 2})
    assert blocks == 2
    assert cleaned == {REDACTED: 1, f"{REDACTED} (2)": 2}


# -- linear time ------------------------------------------------------------------------

ADVERSARIAL_UNITS = [
    "<private>",  # 1 MB of openers: depth grows, one pass
    "<private",  # openers that never close their angle bracket
    "<",
    "< ",
    "<\t/ ",
    "</private>",
    "<private/>",
    "<private ",
    "<private a=",
    "<PRIVATE>x</private>",
    "<p",
]


@contextmanager
def abort_after(seconds: int):
    """A guard, not the assertion: a quadratic scan of 1 MB would run for hours, not fail."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def fail(signum, frame):
        raise TimeoutError(f"redact did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_megabyte_of(unit: str, tail: str = "") -> str:
    return unit * (MB // len(unit)) + tail


@settings(
    # The structural claim: every 1 MB adversarial input finishes well inside a deadline that
    # a quadratic scan (about 10^12 steps for 1 MB) could never meet, however busy the machine.
    deadline=timedelta(seconds=5),
    max_examples=40,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(unit=st.sampled_from(ADVERSARIAL_UNITS), tail=st.sampled_from(["", " " * 1000, "a" * 1000, ">", "</private>"]))
def test_one_megabyte_of_adversarial_tags_is_redacted_in_linear_time(unit, tail):
    text = one_megabyte_of(unit, tail)
    with abort_after(120):
        result = redact(text)
    # Every block is at least as long as its replacement, except an unclosed "<private>".
    assert len(result.text) <= len(text) + len(REDACTED)
    assert result.blocks <= text.count("<")


@pytest.mark.parametrize("filler", [" ", "\n", "a", "/ "])
def test_one_opener_followed_by_a_megabyte_of_filler_finishes(filler):
    # "<" + whitespace is where two adjacent \s* would backtrack quadratically.
    with abort_after(60):
        assert redact("<" + filler * MB).blocks == 0
        # An opener cut short by the end of the text opens a block; "<privatea…" is no tag.
        assert redact("<private" + filler * MB).blocks == (0 if filler == "a" else 1)


def test_one_megabyte_of_openers_redacts_to_one_block():
    with abort_after(60):
        assert redact("keep " + "<private>" * (MB // 9)) == Redacted(f"keep {REDACTED}", 1)


# -- at the write boundary ----------------------------------------------------------------
# Through the facade: counts, dedupe and topics on redacted text, errors that never echo a value.

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
    assert record.summary == f"Memories: [config] Login {REDACTED}"
    assert record.is_auto_generated is True
    assert Session.objects.get().redacted_blocks == 0


def test_synthetic_summary_on_auto_close_uses_redacted_titles(mem, clock):
    mem.mem_save("alice", f"Login <private>{SECRET}</private>", "c")
    clock.shift(H25)
    assert mem.mem_close_idle()
    session = Session.objects.get()
    assert session.summary == f"Memories: [manual] Login {REDACTED}"
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
