"""CHANGELOG.md is history for readers: one short line per user-visible change, no figures."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine_independent

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
MAX_ENTRY_CHARS = 120
# A measurement: a number with a unit, a percentage, a ratio or a before → after.
FIGURE = re.compile(r"\d\s?(ms|MB|kB|GB)\b|\d\ss\b|\d\s*[%×]|→|\d+(\.\d+)?x\b|\bp\d\d \d")


def entries() -> list[str]:
    return [line for line in CHANGELOG.read_text(encoding="utf-8").splitlines() if line.startswith("- ")]


def test_entries_are_short():
    long = [entry for entry in entries() if len(entry) > MAX_ENTRY_CHARS]
    assert entries() and not long


def test_entries_carry_no_figures():
    assert [entry for entry in entries() if FIGURE.search(entry)] == []


def test_the_figure_pattern_sees_figures():
    for text in ("p50 155 ms", "took 7 s", "1.3× faster", "17.2 → 4.5", "98 %", "85.4 MB"):
        assert FIGURE.search(text), text
