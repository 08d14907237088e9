"""The worked examples of the "Time" sections of docs/observations.md and docs/search.md, run as
written (their prints say in their comments what they print, as in tests/test_scopes_docs.py)."""

from pathlib import Path

import pytest

from tests.test_facade import run_script
from tests.test_scopes_docs import example, expected

pytestmark = pytest.mark.engine_independent  # an embedded SQLite file whatever DATABASE_URL names

EXAMPLES = [
    ("observations.md", "One user, two clocks and a note that expires:"),
    ("search.md", "A worked example, words only, run as written by a test:"),
]


@pytest.mark.parametrize("page, heading", EXAMPLES)
def test_the_time_examples_print_what_their_comments_say(tmp_path, page, heading):
    code = example(page, heading)
    # No background embedder: the examples are about time, and a thread would load the model.
    code = code.replace('ILabMemory.from_path("./mem.db")', 'ILabMemory.from_path("./mem.db", embedding_runner=None)')
    done = run_script(code, Path(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    printed, said = done.stdout.splitlines(), expected(code)
    assert len(printed) == len(said), (printed, said)
    for output, comment in zip(printed, said):
        assert comment == output or comment.startswith((output + ":", output + " ")), (output, comment)
