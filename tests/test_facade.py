"""Embedded mode on a SQLite file, the seed's examples, and ILabMemory() in a site."""

import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from ilab_memory import ILabMemory
from ilab_memory.exceptions import ConfigurationError, ValidationError
from ilab_memory.models import Observation, ObservationRevision

from .conftest import START

ROOT = Path(__file__).resolve().parent.parent
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

SEED_START = """\
from ilab_memory import ILabMemory

mem = ILabMemory.from_path("./mem.db")
resp = mem.mem_session_start(user_id="alice")

print(resp.session_id)        # uuid string
print(resp.is_new)             # True si recién creada, False si reutilizada
print(len(resp.sessions_context))  # summaries de sesiones pasadas (hasta 5)
print(len(resp.memories))      # ObservationCompacts recientes (hasta ~10)
"""

SEED_END = """\
closed = mem.mem_session_end(
    user_id="alice",
    summary="Capturé el saludo preferido de Alice y confirmé que el agente usará 'Ali'.",
)

print(closed.id)
print(closed.ended_at)             # ISO 8601, UTC
print(closed.is_auto_generated)    # False — este es un summary humano
"""


def run_script(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with only the repository importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_seed_examples_run_as_written(tmp_path):
    result = run_script(SEED_START + "\n" + SEED_END, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(UUID, lines[0])
    assert lines[1:4] == ["True", "0", "0"]
    assert lines[4] == lines[0]  # the session it opened is the one it closed
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", lines[5])
    assert lines[6] == "False"
    assert (tmp_path / "mem.db").exists()


def test_seed_start_reuses_the_session_in_a_second_process(tmp_path):
    first = run_script(SEED_START, tmp_path)
    second = run_script(SEED_START, tmp_path)  # migrations already applied: a no-op
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.splitlines()[0] == second.stdout.splitlines()[0]
    assert second.stdout.splitlines()[1] == "False"


def test_embedded_database_uses_wal_and_the_unique_active_session_index(tmp_path):
    result = run_script('from ilab_memory import ILabMemory\nILabMemory.from_path("m.db").mem_save("a", "T", "C")',
                        tmp_path)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "m.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        sql = db.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'ilab_memory_one_active_session_per_user'"
        ).fetchone()[0]
    assert "UNIQUE" in sql.upper() and "WHERE" in sql.upper()


def test_embedded_threads_share_one_session_without_lock_errors(tmp_path):
    code = textwrap.dedent(
        """
        import threading
        from ilab_memory import ILabMemory
        from django.db import connections
        mem = ILabMemory.from_path("t.db")
        for round_ in range(10):
            barrier = threading.Barrier(8)
            ids, errors = [], []
            def work(i):
                try:
                    barrier.wait()
                    ids.append(mem.mem_session_start(f"u{round_}").session_id)
                    mem.mem_save(f"u{round_}", f"t{i}", "c")
                except Exception as exc:
                    errors.append(repr(exc))
                finally:
                    connections.close_all()
            threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
            [t.start() for t in threads]
            [t.join() for t in threads]
            assert not errors, errors
            assert len(ids) == 8 and len(set(ids)) == 1, ids
        print("ok")
        """
    )
    result = run_script(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    with sqlite3.connect(tmp_path / "t.db") as db:
        assert db.execute("SELECT COUNT(*) FROM ilab_memory_session WHERE status='active'").fetchone()[0] == 10
        assert db.execute("SELECT COUNT(*) FROM ilab_memory_observation").fetchone()[0] == 80


def test_import_works_before_django_is_configured(tmp_path):
    result = run_script(
        "from ilab_memory import ILabMemory\nfrom django.conf import settings\nprint(settings.configured)", tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_site_mode_before_setup_explains_from_path(tmp_path):
    result = run_script("from ilab_memory import ILabMemory\nILabMemory()", tmp_path)
    assert result.returncode != 0 and "from_path" in result.stderr


def test_from_path_with_missing_folder_is_a_clear_error(tmp_path):
    result = run_script('from ilab_memory import ILabMemory\nILabMemory.from_path("nope/deeper/mem.db")', tmp_path)
    assert "ConfigurationError" in result.stderr and "does not exist" in result.stderr
    assert not (tmp_path / "nope").exists()


def test_from_path_with_unwritable_folder_is_a_clear_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root)")
        result = run_script('from ilab_memory import ILabMemory\nILabMemory.from_path("locked/mem.db")', tmp_path)
        assert "ConfigurationError" in result.stderr and "not writable" in result.stderr
    finally:
        locked.chmod(0o700)


def test_from_path_on_a_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="is a folder"):
        ILabMemory.from_path(tmp_path)


def test_from_path_inside_a_configured_site_says_to_use_ilabmemory(tmp_path):
    with pytest.raises(ConfigurationError, match=r"use ILabMemory\(\)"):
        ILabMemory.from_path(tmp_path / "mem.db")


def test_overrides_are_validated_up_front(db):
    with pytest.raises(ConfigurationError):
        ILabMemory(not_a_setting=1)
    with pytest.raises(ConfigurationError):
        ILabMemory(session_timeout_hours=0)


def test_returned_timestamps_are_iso_utc_strings(mem):
    record = mem.mem_save("alice", "T", "C").observation
    for value in (record.created_at, record.updated_at, record.last_seen_at):
        assert isinstance(value, str) and value.endswith("+00:00")


# -- every argument validated, as the API does (SQLite and PostgreSQL) ---------------------

BAD_TEXT = {"nul": "a\x00b", "lone surrogate": "a\ud800b", "not a string": 5}
OBSERVATION_ID = "00000000-0000-4000-8000-000000000000"

# (method, keyword arguments of a valid call, the argument made bad)
CALLS = [
    ("mem_session_start", {"user_id": "alice"}, "user_id"),
    ("mem_session_summary", {"user_id": "alice", "summary": "s"}, "user_id"),
    ("mem_session_summary", {"user_id": "alice", "summary": "s"}, "summary"),
    ("mem_session_end", {"user_id": "alice", "summary": "s"}, "user_id"),
    ("mem_session_end", {"user_id": "alice", "summary": "s"}, "summary"),
    ("mem_get_session", {"user_id": "alice", "session_id": OBSERVATION_ID}, "user_id"),
    ("mem_list_sessions", {"user_id": "alice"}, "user_id"),
    ("mem_list_sessions", {"user_id": "alice", "status": "active"}, "status"),
    ("mem_save", {"user_id": "alice", "title": "t", "content": "c"}, "user_id"),
    ("mem_save", {"user_id": "alice", "title": "t", "content": "c"}, "title"),
    ("mem_save", {"user_id": "alice", "title": "t", "content": "c"}, "content"),
    ("mem_save", {"user_id": "alice", "title": "t", "content": "c", "type": "manual"}, "type"),
    ("mem_save", {"user_id": "alice", "title": "t", "content": "c", "topic_key": "k"}, "topic_key"),
    ("mem_get_observation", {"user_id": "alice", "observation_id": OBSERVATION_ID}, "user_id"),
    ("mem_revisions", {"user_id": "alice", "observation_id": OBSERVATION_ID}, "user_id"),
    ("mem_update", {"user_id": "alice", "observation_id": OBSERVATION_ID, "title": "t"}, "user_id"),
    ("mem_update", {"user_id": "alice", "observation_id": OBSERVATION_ID, "title": "t"}, "title"),
    ("mem_delete", {"user_id": "alice", "observation_id": OBSERVATION_ID}, "user_id"),
    ("mem_search", {"user_id": "alice", "query": "q"}, "user_id"),
    ("mem_search", {"user_id": "alice", "query": "q"}, "query"),
    ("mem_search", {"user_id": "alice", "query": "q", "type": "manual"}, "type"),
    ("mem_context", {"user_id": "alice"}, "user_id"),
    ("mem_timeline", {"user_id": "alice", "observation_id": OBSERVATION_ID}, "user_id"),
    ("mem_stats", {"user_id": "alice"}, "user_id"),
    ("mem_export", {"user_id": "alice"}, "user_id"),
    ("mem_import", {"user_id": "alice", "data": {}}, "user_id"),
    ("mem_forget_user", {"user_id": "alice"}, "user_id"),
]


@pytest.mark.parametrize("bad", BAD_TEXT.values(), ids=BAD_TEXT.keys())
@pytest.mark.parametrize(("method", "kwargs", "argument"), CALLS, ids=[f"{m}-{a}" for m, _, a in CALLS])
def test_every_text_argument_is_validated_like_the_api(mem, method, kwargs, argument, bad):
    with pytest.raises(ValidationError) as raised:
        getattr(mem, method)(**{**kwargs, argument: bad})
    assert raised.value.field == argument or raised.value.field.startswith(argument)


@pytest.mark.parametrize("status", ["bogus", "", "ACTIVE", "a\x00b", "a\udc00", 1])
def test_list_sessions_refuses_a_status_that_is_not_one(mem, status):
    mem.mem_session_start("alice")
    with pytest.raises(ValidationError) as raised:
        mem.mem_list_sessions("alice", status=status)
    assert raised.value.field == "status" and "'active' or 'completed'" in raised.value.message


def test_list_sessions_filters_by_a_valid_status(mem):
    mem.mem_session_start("alice")
    assert [s.status for s in mem.mem_list_sessions("alice", status="active")] == ["active"]
    assert mem.mem_list_sessions("alice", status="completed") == []


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [("mem_list_sessions", {"limit": -1}), ("mem_list_sessions", {"limit": "5"}), ("mem_context", {"limit": True}),
     ("mem_timeline", {"observation_id": OBSERVATION_ID, "before": 10**9}), ("mem_search", {"query": "q", "limit": 0}),
     ("mem_delete", {"observation_id": OBSERVATION_ID, "hard": "false"}), ("mem_import", {"data": []}),
     ("mem_update", {"observation_id": OBSERVATION_ID, "colour": "red"}),
     ("mem_save", {"title": "t", "content": "c", "metadata": ["not", "an", "object"]})],
)
def test_other_bad_arguments_are_validation_errors(mem, method, kwargs):
    with pytest.raises(ValidationError):
        getattr(mem, method)("alice", **kwargs)


@pytest.mark.parametrize(
    ("method", "kwargs", "field", "bounds", "limit"),
    [("mem_search", {"query": "q", "limit": 51}, "limit", (1, 50), 50),
     ("mem_context", {"limit": 101}, "limit", (1, 100), 100),
     ("mem_timeline", {"observation_id": OBSERVATION_ID, "after": 51}, "after", (0, 50), 50),
     ("mem_list_sessions", {"limit": 101}, "limit", (1, 100), 100),
     ("mem_list_sessions", {"limit": 0}, "limit", (1, 100), 1)],
)
def test_a_count_out_of_its_bounds_names_the_field_and_the_limit(mem, method, kwargs, field, bounds, limit):
    with pytest.raises(ValidationError) as raised:
        getattr(mem, method)("alice", **kwargs)
    assert (raised.value.field, raised.value.limit) == (field, limit)
    assert raised.value.message == "must be an integer from {} to {}.".format(*bounds)


def test_counts_left_out_take_the_settings_defaults(db):
    memory = ILabMemory(search_max_limit=3, search_default_limit=2, context_memories=1)
    for n in range(4):
        memory.mem_save("alice", f"deploy {n}", f"deploy note {n}")
    assert len(memory.mem_search("alice", "deploy")) == 2
    assert len(memory.mem_search("alice", "deploy", limit=3)) == 3
    with pytest.raises(ValidationError) as raised:
        memory.mem_search("alice", "deploy", limit=4)
    assert (raised.value.field, raised.value.code, raised.value.limit) == ("limit", "max_value", 3)
    assert len(memory.mem_context("alice")) == 1


def test_the_readme_first_script_prints_what_its_comments_say(tmp_path):
    """The README's first script, run as written: each print matches the comment beside it."""
    readme = (ROOT / "README.md").read_text()
    script = re.search(r"## A first script.*?```python\n(.*?)```", readme, flags=re.DOTALL).group(1)
    result = run_script(script, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(UUID, lines[0]) and lines[1:4] == ["True", "0", "0"]
    assert lines[4] == "created"  # what mem_save returns: the action and the stored record
    assert lines[5] == "Prefers 'Ali' 1"
    title, value = lines[6].rsplit(" ", 1)  # found by meaning, its value on the absolute scale
    assert title == "Prefers 'Ali'" and 0 < float(value) < 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", lines[7]) and lines[8] == "False"


def test_the_file_the_readme_script_creates_is_ignored_by_git():
    """``./mem.db`` (and SQLite's -wal/-shm beside it) never shows up as a change to commit."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for name in ("mem.db", "mem.db-wal", "mem.db-shm", "mem.db-migrations.lock"):
        assert subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT).returncode == 0, name


# -- The docs' worked examples, run as written -----------------------------------------------------

SCOPE_EXAMPLES = [
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


@pytest.mark.parametrize("page, heading", SCOPE_EXAMPLES)
def test_the_worked_example_prints_what_its_comments_say(tmp_path, page, heading):
    assert_prints_what_its_comments_say(page, heading, Path(tmp_path))


# -- The Time sections' worked examples (docs/observations.md, docs/search.md) ---------------------

TIME_EXAMPLES = [
    ("observations.md", "One user, two clocks and a note that expires:"),
    ("search.md", "A worked example, words only, run as written by a test:"),
]


@pytest.mark.engine_independent  # an embedded SQLite file whatever DATABASE_URL names
@pytest.mark.parametrize("page, heading", TIME_EXAMPLES)
def test_the_time_examples_print_what_their_comments_say(tmp_path, page, heading):
    assert_prints_what_its_comments_say(page, heading, Path(tmp_path))


# -- The second clock: happened_at, and reads kept to a period (since inclusive, until exclusive) --

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
APRIL = datetime(2025, 4, 1, tzinfo=UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_happened_at_defaults_to_the_save_time(mem, clock):
    saved = mem.mem_save("alice", "Standup moved", "The standup is at 10 now.").observation
    assert utc(saved.happened_at) == START == utc(saved.created_at)
    assert mem.mem_list_observations("alice")[0].happened_at == saved.happened_at


@pytest.mark.parametrize("given, stored", [
    (datetime(2025, 3, 9, 14, 30, tzinfo=timezone(timedelta(hours=1))), datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
    (date(2025, 3, 9), datetime(2025, 3, 9, tzinfo=UTC)),
    ("2025-03-09", datetime(2025, 3, 9, tzinfo=UTC)),
    ("2025-03-09T14:30:00+01:00", datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
    ("2025-03-09T13:30:00Z", datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
])
def test_happened_at_given_is_stored_in_utc(mem, clock, given, stored):
    saved = mem.mem_save("alice", "Moved to Berlin", "Alice moved to Berlin.", happened_at=given).observation
    assert utc(saved.happened_at) == stored
    assert Observation.objects.get(pk=saved.id).happened_at == stored
    assert utc(mem.mem_get_observation("alice", saved.id).happened_at) == stored
    assert utc(saved.created_at) == START  # the other clock is untouched


@pytest.mark.parametrize("given, code", [
    (datetime(2025, 3, 9, 14, 30), "naive_datetime"),
    ("2025-03-09T14:30:00", "naive_datetime"),
    ("the ninth of March", "invalid_datetime"),
    (1741525800, "invalid_type"),
])
def test_a_moment_without_an_offset_or_unreadable_is_refused_and_nothing_stored(mem, given, code):
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", "Moved to Berlin", "Alice moved to Berlin.", happened_at=given)
    assert error.value.field == "happened_at" and error.value.code == code
    assert not Observation.objects.exists()


def test_an_update_of_happened_at_keeps_the_old_value_in_the_revision(mem, clock):
    saved = mem.mem_save("alice", "Moved", "Alice moved to Berlin.", happened_at="2025-03-09").observation
    clock.shift(timedelta(hours=1))
    updated = mem.mem_update("alice", saved.id, happened_at="2025-02-20T08:00:00Z")
    assert utc(updated.happened_at) == datetime(2025, 2, 20, 8, tzinfo=UTC)
    [revision] = mem.mem_revisions("alice", saved.id)
    assert utc(revision.happened_at) == datetime(2025, 3, 9, tzinfo=UTC)
    assert ObservationRevision.objects.get().happened_at == datetime(2025, 3, 9, tzinfo=UTC)
    with pytest.raises(ValidationError) as error:
        mem.mem_update("alice", saved.id, happened_at=None)
    assert error.value.field == "happened_at"


@pytest.fixture
def dated(mem, clock):
    """Alice's memories at the edges of March 2025, one in another scope, and Bob's in March."""
    moments = {
        "last of February": MARCH - timedelta(microseconds=1),
        "first of March": MARCH,
        "mid March": datetime(2025, 3, 15, 12, tzinfo=UTC),
        "last of March": APRIL - timedelta(microseconds=1),
        "first of April": APRIL,
    }
    ids = {name: mem.mem_save("alice", f"Lisbon trip {name}", f"Lisbon trip note, {name}.",
                              happened_at=moment).observation.id
           for name, moment in moments.items()}
    ids["coder's March"] = mem.mem_save("alice", "Lisbon trip coder", "Lisbon trip note from the coder.",
                                        happened_at=datetime(2025, 3, 20, tzinfo=UTC), scope="coder").observation.id
    ids["bob's March"] = mem.mem_save("bob", "Lisbon trip bob", "Lisbon trip note of Bob.",
                                      happened_at=datetime(2025, 3, 20, tzinfo=UTC)).observation.id
    return ids


READS = {
    "search": lambda mem, user, **kw: mem.mem_search(user, "Lisbon trip", limit=50, **kw),
    "list": lambda mem, user, **kw: mem.mem_list_observations(user, **kw),
    "context": lambda mem, user, **kw: mem.mem_context(user, limit=50, **kw),
}


@pytest.mark.parametrize("read", READS)
def test_since_is_inclusive_and_until_exclusive_on_every_read(mem, dated, read):
    march = {dated[n] for n in ("first of March", "mid March", "last of March")}
    found = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL)}
    assert found == march
    assert {r.id for r in READS[read](mem, "alice", since=MARCH)} == march | {dated["first of April"]}
    assert {r.id for r in READS[read](mem, "alice", until=MARCH)} == {dated["last of February"]}
    # The same period written as dates and as text with another offset.
    assert {r.id for r in READS[read](mem, "alice", since=date(2025, 3, 1), until="2025-04-01T02:00:00+02:00")} == march


@pytest.mark.parametrize("read", READS)
def test_a_period_keeps_to_the_scopes_read_and_to_the_user(mem, dated, read):
    coder = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL, scope="coder")}
    assert dated["coder's March"] in coder and dated["mid March"] in coder  # the shared space is read too
    assert dated["coder's March"] not in {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL)}
    assert {r.id for r in READS[read](mem, "bob", since=MARCH, until=APRIL)} == {dated["bob's March"]}
    everything = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL, scope="*")}
    assert dated["bob's March"] not in everything and dated["coder's March"] in everything


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("since, until, field, code", [
    (APRIL, MARCH, "until", "empty_period"),
    (MARCH, MARCH, "until", "empty_period"),
    (datetime(2025, 3, 1), None, "since", "naive_datetime"),
    (None, "next week", "until", "invalid_datetime"),
])
def test_a_bad_period_is_refused_naming_the_field(mem, dated, read, since, until, field, code):
    with pytest.raises(ValidationError) as error:
        READS[read](mem, "alice", since=since, until=until)
    assert error.value.field == field and error.value.code == code


def test_a_revision_moves_a_memory_out_of_the_period_at_once(mem, dated):
    mem.mem_update("alice", dated["mid March"], happened_at="2024-12-24")
    found = {r.id for r in mem.mem_list_observations("alice", since=MARCH, until=APRIL)}
    assert dated["mid March"] not in found
    assert dated["mid March"] in {r.id for r in mem.mem_search("alice", "Lisbon", until=MARCH, limit=50)}
