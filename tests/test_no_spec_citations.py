"""The library states its rules itself: no citation of a document that is not in the repository."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.engine_independent

LIBRARY = Path(__file__).resolve().parent.parent / "ilab_memory"


def test_no_module_cites_the_spec():
    citing = [str(path.relative_to(LIBRARY)) for path in LIBRARY.rglob("*.py")
              if "SPEC §" in path.read_text(encoding="utf-8")]
    assert citing == []
