"""The docs cite names that exist: every file, module, attribute and setting they put in code type.

A rename or a removal that leaves a page naming the old thing fails here, so the docs describe
the code as it is. What is checked, in every page of ``docs/`` and the README:

- a path (``services/search/fusion.py``, ``benchmarks/perf.py``): a file of the repository ends so;
- a dotted name whose head is one of the library's modules (``ilab_memory.background.runner``,
  ``sql.ranked_context_sql``, ``validation.Count.clean``): it imports and each part is an attribute;
- an upper-case name (``SEARCH_EMBED_BUDGET``): a setting of ``conf.DEFAULTS``, a Django setting,
  or a name the project's code (not its tests) defines or uses.

``docs/architecture.md`` describes the code itself, so there every other name in code type is
checked too (``Reach.sql``, ``clean_read_reach``, ``.live``, ``reason``): a name the library
defines (a module, a module's or a class's attribute, a model's field or index, a key or keyword
the code spells), or a word of Django, Python or SQL listed below.
"""

from __future__ import annotations

import ast
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


ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Words of Django, Python and SQL the architecture page names beside the library's own.
FRAMEWORK_WORDS = {"save", "update", "update_fields", "bulk_create", "objects.create", "select_for_update",
                   "QuerySet.update", "QuerySet.delete", "Manager.raw", "_meta", "migrate", "pre_save",
                   "post_save", "pre_delete", "post_delete", "django.utils.timezone.now", "now", "None",
                   "TypeError", "BEGIN", "UPDATE", "RETURNING", "ORDER BY", "FOR UPDATE", "UPDATE … RETURNING",
                   "transaction_mode", "pk", "get", "objects", "embedding vector", "Q", "transaction.on_commit"}
IDENTIFIER = re.compile(r"^\.?[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
CALL = re.compile(r"^([\w.]+)\((?:[^()]|\([^()]*\))*\)((?:\.\w+)*)$")  # `f(x).attr`: f, then .attr
KEYWORD = re.compile(r"^(\w+)=")  # `update_fields=["deleted_at"]`
INDEX = re.compile(r"^\(([^()]*)\)( WHERE .*)?$")  # an index's columns, and what its WHERE keeps
COMPARISON = re.compile(r"^(\w+) (?:=|IN\b|IS\b)")  # `user_id = x`, `deleted_at IS NULL`


@cache
def library_names() -> frozenset[str]:
    """Every name the library's own source defines or spells: modules, functions, classes,
    assignments (``self.x`` too), parameters, keywords of calls and identifier-like strings."""
    names: set[str] = set()
    for name in repository_files():
        if not (name.startswith("ilab_memory/") and name.endswith(".py")) or "/migrations/" in name:
            continue
        path = Path(name)
        names.update(part for part in (*path.parent.parts, path.stem) if part != "__init__")
        for node in ast.walk(ast.parse((ROOT / name).read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
    return frozenset(names)


@cache
def library_objects() -> dict[str, object]:
    """The library's modules and the classes and functions it defines, by name (what a dotted
    span like ``Reach.sql`` starts with)."""
    modules = [ilab_memory] + [importlib.import_module(info.name)
                               for info in pkgutil.walk_packages(ilab_memory.__path__, "ilab_memory.")
                               if ".migrations" not in info.name]
    objects: dict[str, object] = {}
    for module in modules:
        objects.setdefault(module.__name__.rsplit(".", 1)[-1], module)
        for name, value in vars(module).items():
            if getattr(value, "__module__", "").startswith("ilab_memory"):
                objects[name] = value
    return objects


@cache
def model_columns() -> frozenset[str]:
    from django.apps import apps

    models = list(apps.get_app_config("ilab_memory").get_models())
    return frozenset({field.name for model in models for field in model._meta.get_fields()}
                     | {field.column for model in models for field in model._meta.concrete_fields}
                     | {index.name for model in models for index in model._meta.indexes}
                     | {constraint.name for model in models for constraint in model._meta.constraints}
                     | {model._meta.db_table for model in models})


def _known_name(span: str) -> bool:
    """Whether a name, dotted or not, is the library's: ``.method`` of a manager or queryset,
    ``Object.attr…`` of a library object, or a bare name its source defines or spells."""
    from django.apps import apps

    if span in FRAMEWORK_WORDS:
        return True
    if DOTTED.match(span) and (resolved := resolves(span)) is not None:
        return resolved
    head, *rest = span.lstrip(".").split(".")
    if span.startswith("."):
        return any(hasattr(model.objects, head) for model in apps.get_app_config("ilab_memory").get_models())
    if head in library_objects():
        return attributes_exist(library_objects()[head], rest)
    return not rest and (head in library_names() or head in model_columns())


def unknown_to_the_library(page: Path) -> list[str]:
    """The names in code type of ``page`` that the library does not define: each span is a
    command, a folder, a file, a call (its callee and the attributes read from its result), a
    keyword, an index's column list, a comparison, or a name."""
    unknown = []
    for span in dict.fromkeys(CODE_SPAN.findall(page.read_text(encoding="utf-8"))):
        span = span.strip().rstrip(".,:;")
        if not span or span in FRAMEWORK_WORDS or UPPER.match(span) or span in ('""', "''"):
            continue
        if span.startswith("manage.py "):
            command = span.split()[1]
            known = any(name.endswith(f"/management/commands/{command}.py") for name in repository_files())
        elif span.endswith("/"):
            known = (ROOT / "ilab_memory" / span).is_dir()
        elif PATH.match(span):
            continue  # a file: checked by missing_names
        elif match := INDEX.match(span):
            columns = [column.split()[0] for column in match.group(1).split(",")]
            known = all(column in model_columns() for column in columns)
        elif match := CALL.match(span.replace("/", ".")):
            callee, after = match.groups()
            known = _known_name(callee) and all(name in library_names() or name in model_columns()
                                                for name in after.split(".")[1:])
        elif match := KEYWORD.match(span) or COMPARISON.match(span):
            known = _known_name(match.group(1)) or match.group(1) in model_columns()
        elif IDENTIFIER.match(span.replace("/", ".")):
            known = _known_name(span.replace("/", "."))
        else:
            known = False  # a span of another shape: name it in FRAMEWORK_WORDS or reword the page
        if not known:
            unknown.append(span)
    return unknown


def test_the_architecture_page_names_only_what_the_code_defines():
    assert missing_names(ARCHITECTURE) == [] and unknown_to_the_library(ARCHITECTURE) == []


def test_a_name_the_library_does_not_define_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "`Reach.sql`, `clean_read_reach`, `.live`, `reason`, `Session.objects.get(pk=session_id).scope`, "
        "`(user_id, scope, dedupe_hash, created_at DESC) WHERE live` and `update_fields=[\"x\"]` exist; "
        "`Reach.no_such_method`, `clean_everything`, `.no_such_queryset`, `no_such_keyword`, `ope`, "
        "`manage.py ilab_memory_nothing`, `nowhere/`, `services/nowhere.f`, `Reach.q(x).no_such_attribute`, "
        "`(user_id, no_such_column DESC)`, `no_such_keyword=1` and `two words` do not.")
    assert unknown_to_the_library(page) == [
        "Reach.no_such_method", "clean_everything", ".no_such_queryset", "no_such_keyword", "ope",
        "manage.py ilab_memory_nothing", "nowhere/", "services/nowhere.f", "Reach.q(x).no_such_attribute",
        "(user_id, no_such_column DESC)", "no_such_keyword=1", "two words"]
