"""The code, tests and docs state their rules themselves: no citation of a document that is not
in the repository."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.engine_independent

ROOT = Path(__file__).resolve().parent.parent
CITATION = "SPEC " + "§"  # built, so this file does not cite it either
SEARCHED = ["ilab_memory/**/*.py", "tests/**/*.py", "benchmarks/**/*.py", "project/**/*.py", "docs/*.md",
            "README.md", "CHANGELOG.md", "clients/typescript/README.md", "clients/typescript/src/**/*.ts",
            "clients/typescript/test/**/*.ts"]


def test_nothing_cites_the_spec():
    files = {path for pattern in SEARCHED for path in ROOT.glob(pattern)}
    assert len(files) > 100  # the patterns still find the tree
    citing = sorted(str(path.relative_to(ROOT)) for path in files if CITATION in path.read_text(encoding="utf-8"))
    assert citing == []
