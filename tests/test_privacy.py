"""SPEC §4: the redaction function itself. Pure Python, no database."""

import signal
import threading
from contextlib import contextmanager
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
