"""The worked example of docs/search.md's Time section, run as written."""

from pathlib import Path

from tests.test_facade import run_script
from tests.test_scopes_docs import example, expected


def test_the_time_example_prints_what_its_comments_say(tmp_path):
    code = example("search.md", "A worked example, words only, run as written by a test:")
    done = run_script(code, Path(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    printed, said = done.stdout.splitlines(), expected(code)
    assert len(printed) == len(said), (printed, said)
    for output, comment in zip(printed, said):
        assert comment == output or comment.startswith((output + ":", output + " ")), (output, comment)
