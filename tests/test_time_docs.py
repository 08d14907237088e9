"""The worked example of docs/observations.md's "Time" section, run as written (its prints say in
their comments what they print, as in tests/test_scopes_docs.py)."""

from pathlib import Path

import pytest

from tests.test_facade import run_script
from tests.test_scopes_docs import example, expected

pytestmark = pytest.mark.engine_independent  # an embedded SQLite file whatever DATABASE_URL names


def test_the_time_example_prints_what_its_comments_say(tmp_path):
    code = example("observations.md", "One user, two clocks and a note that expires:")
    # No background embedder: the example is about time, and a thread would load the model.
    code = code.replace('ILabMemory.from_path("./mem.db")', 'ILabMemory.from_path("./mem.db", embedding_runner=None)')
    assert "embedding_runner=None" in code
    done = run_script(code, Path(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    printed, said = done.stdout.splitlines(), expected(code)
    assert len(printed) == len(said), (printed, said)
    for output, comment in zip(printed, said):
        assert comment == output or comment.startswith((output + ":", output + " ")), (output, comment)
