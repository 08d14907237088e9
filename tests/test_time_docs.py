"""The worked examples of the "Time" sections of docs/observations.md and docs/search.md, run as
written (their prints say in their comments what they print, as in tests/test_scopes_docs.py)."""

from pathlib import Path

import pytest

from tests.test_scopes_docs import assert_prints_what_its_comments_say

pytestmark = pytest.mark.engine_independent  # an embedded SQLite file whatever DATABASE_URL names

EXAMPLES = [
    ("observations.md", "One user, two clocks and a note that expires:"),
    ("search.md", "A worked example, words only, run as written by a test:"),
]


@pytest.mark.parametrize("page, heading", EXAMPLES)
def test_the_time_examples_print_what_their_comments_say(tmp_path, page, heading):
    assert_prints_what_its_comments_say(page, heading, Path(tmp_path))
