"""The scopes' worked examples in docs/sessions.md and docs/observations.md, run as written.

Each ``print`` at the top level says in its comment what it prints (the comment starts with the
output); one inside a block prints the literal it names.
"""

import re
from pathlib import Path

import pytest

from tests.test_facade import ROOT, run_script

EXAMPLES = [
    ("sessions.md", "### A worked example: one user, two agents"),
    ("observations.md", "One user, a support bot and a coding assistant:"),
]


def example(page: str, heading: str) -> str:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text[text.index(heading):], re.DOTALL).group(1)


def expected(code: str) -> list[str]:
    """What each print says it prints: a top-level one's comment, an indented one's literal."""
    said = []
    for line in code.splitlines():
        if line.startswith("print("):
            said.append(line.split("#", 1)[1].strip())
        elif line.lstrip().startswith("print("):
            said.append(re.search(r'print\("(.*)"\)', line).group(1))
    return said


def assert_prints_what_its_comments_say(page: str, heading: str, cwd: Path) -> None:
    """Run the example under ``heading`` of docs/``page`` (with no background embedder: a
    thread would load the model) and check each print against its comment."""
    code = example(page, heading).replace('ILabMemory.from_path("./mem.db")',
                                          'ILabMemory.from_path("./mem.db", embedding_runner=None)')
    done = run_script(code, cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    printed, said = done.stdout.splitlines(), expected(code)
    assert len(printed) == len(said), (printed, said)
    for output, comment in zip(printed, said):
        assert comment == output or comment.startswith((output + ":", output + " ")), (output, comment)


@pytest.mark.parametrize("page, heading", EXAMPLES)
def test_the_worked_example_prints_what_its_comments_say(tmp_path, page, heading):
    assert_prints_what_its_comments_say(page, heading, Path(tmp_path))
