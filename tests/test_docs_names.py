"""The docs cite names that exist: every file, module, attribute and setting they put in code type.

A rename or a removal that leaves a page naming the old thing fails here, so the docs describe
the code as it is. What is checked, in every page of ``docs/`` and the README:

- a path (``services/search/fusion.py``, ``benchmarks/perf.py``): a file of the repository ends so;
- a dotted name whose head is one of the library's modules (``ilab_memory.background.runner``,
  ``sql.ranked_context_sql``, ``validation.Count.clean``): it imports and each part is an attribute;
- an upper-case name (``SEARCH_EMBED_BUDGET``): a setting of ``conf.DEFAULTS``, a Django setting,
  or a name the project's code (not its tests) defines or uses.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from django.conf import global_settings

import ilab_memory
from ilab_memory import conf

pytestmark = pytest.mark.engine_independent

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./-]+\.(py|md|txt|json|npz|toml|ts)$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
CHECK_ID = re.compile(r"^ilab_memory\.[EWI]\d+$|^ilab_memory\.[EWI]00x$")
# Example folders of a host site in the install and deploy pages, not ours.
HOST_FOLDERS = {"myproj", "mysite", "myproject", "proj", ".cursor", ".vscode"}
# Upper-case names from outside the project that the pages cite: a Django database option, a
# socket option, a browser error.
OUTSIDE_NAMES = {"ATOMIC_REQUESTS", "TCP_NODELAY", "ERR_CERT_DATE_INVALID"}
UPPER = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$")


@cache
def repository_files() -> tuple[str, ...]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    return tuple(listed.split())


@cache
def library_modules() -> dict[str, list[str]]:
    """Each module's last name → its dotted names (``sql`` → ``ilab_memory.sql``)."""
    modules: dict[str, list[str]] = {"ilab_memory": ["ilab_memory"]}
    for info in pkgutil.walk_packages(ilab_memory.__path__, "ilab_memory."):
        modules.setdefault(info.name.rsplit(".", 1)[1], []).append(info.name)
    return modules


@cache
def permissions() -> set[str]:
    from ilab_memory import models

    return {f"ilab_memory.{codename}" for model in (models.Session, models.Observation)
            for codename, _ in model._meta.permissions}


@cache
def project_source() -> str:
    return "\n".join((ROOT / name).read_text(encoding="utf-8") for name in repository_files()
                     if name.endswith(".py") and not name.startswith("tests/"))


def resolves(dotted: str) -> bool | None:
    """Whether a dotted name whose head is a library module resolves (None: not the library's)."""
    head, *rest = dotted.split(".")
    if head == "ilab_memory" and rest:
        for cut in range(len(rest), 0, -1):
            try:
                value = importlib.import_module(".".join([head, *rest[:cut]]))
            except ImportError:
                continue
            return attributes_exist(value, rest[cut:])
        return attributes_exist(ilab_memory, rest)
    candidates = library_modules().get(head)
    if not candidates:
        return None
    return any(attributes_exist(importlib.import_module(name), rest) for name in candidates)


def attributes_exist(value, names) -> bool:
    for name in names:
        if not hasattr(value, name):
            # a submodule not imported by its package yet
            try:
                value = importlib.import_module(f"{value.__name__}.{name}")
                continue
            except (ImportError, AttributeError, TypeError):
                return False
        value = getattr(value, name)
    return True


def cited(page: Path) -> list[str]:
    spans = []
    for span in CODE_SPAN.findall(page.read_text(encoding="utf-8")):
        span = re.sub(r"\(.*\)$", "", span.strip()).rstrip(".,:;")  # `f(x=1)` names f
        spans.append(span)
    return spans


def missing_names(page: Path) -> list[str]:
    missing = []
    for span in cited(page):
        if PATH.match(span) and ("/" in span or span.endswith(".py")):
            if span.split("/")[0] in HOST_FOLDERS:
                continue
            if not any(name == span or name.endswith("/" + span) for name in repository_files()):
                missing.append(span)
        elif CHECK_ID.match(span) or span in permissions():
            continue
        elif DOTTED.match(span):
            # a logger's or a task's name is a string the code spells out
            if resolves(span) is False and f'"{span}"' not in project_source():
                missing.append(span)
        elif UPPER.match(span):
            known = (span in conf.DEFAULTS or span in OUTSIDE_NAMES or hasattr(global_settings, span)
                     or re.search(rf"\b{span}\b", project_source()))
            if not known:
                missing.append(span)
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_name_a_page_cites_exists(page):
    assert missing_names(page) == []


def test_a_removed_name_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("`sql.fetch_rows`, `services/statements.py`, `NO_SUCH_SETTING`, "
                    "`ilab_memory.vectors.no_such_thing`; but `sql.ranked_context_sql` exists.")
    assert missing_names(page) == ["sql.fetch_rows", "services/statements.py", "NO_SUCH_SETTING",
                                   "ilab_memory.vectors.no_such_thing"]
