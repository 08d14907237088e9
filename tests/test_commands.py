"""The long management commands: a progress line on a terminal, nothing under cron or -v 0, a quiet closed pipe.

The terminal is a real pseudo-terminal (``os.openpty``) handed to the command as its stderr; the
pipe test runs ``manage.py … | head -c 100`` in a real shell on a database of its own.
"""

import json
import os
import select
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from ilab_memory.models import (
    Observation,
    Session,
)
from ilab_memory.services.document import FORMAT
from ilab_memory.services.export import user_export_json
from tests.api.test_live_http import site_env  # noqa: F401  (fixture: a database for subprocesses)
from tests.factories import SessionFactory
from tests.histories import fill, fill_scopes, scopes_of

ROOT = Path(__file__).resolve().parent.parent
EMBEDDER = {"EMBEDDER": "tests.embedders.RecordingEmbedder"}


class Terminal:
    """A pseudo-terminal: ``stream`` is what the command writes to, ``read()`` what it showed."""

    def __init__(self):
        master, slave = os.openpty()
        self.master = master
        self.stream = os.fdopen(slave, "w", encoding="utf-8")
        assert self.stream.isatty()

    def read(self) -> str:
        self.stream.flush()
        chunks = []
        while select.select([self.master], [], [], 0.05)[0]:
            chunks.append(os.read(self.master, 65536))
        return b"".join(chunks).decode()

    def close(self):
        self.stream.close()
        os.close(self.master)


@pytest.fixture
def terminal():
    tty = Terminal()
    yield tty
    tty.close()


@pytest.fixture
def history(mem, settings, tmp_path):
    """Two users' memories, an expired session, an export file: something for every command."""
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, **EMBEDDER}
    for i in range(30):
        mem.mem_save("alice", f"Note {i}", f"Content of note {i}.", topic_key=f"k{i % 20}")
    SessionFactory(user_id="bob", last_activity_at=timezone.now() - timedelta(days=3))
    document = tmp_path / "alice.json"
    document.write_text(json.dumps(mem.mem_export("alice")))
    return document


def commands(document):
    """(name, args, options, the label its progress line shows) of each long command."""
    return [
        ("ilab_memory_close_idle", [], {}, "Closing idle sessions: 1 closed"),
        ("ilab_memory_erase_expired", [], {}, "Erasing expired memories"),
        ("ilab_memory_export", ["alice"], {"output": str(document.with_name("out.json"))}, "Exporting: "),
        ("ilab_memory_forget", ["alice"], {"yes": True}, "Erasing"),
        ("ilab_memory_import", ["alice", str(document)], {}, "Checking and writing"),
        ("ilab_memory_rebuild_index", [], {}, "Rebuilding the search index"),
        ("ilab_memory_embed", [], {}, "Embedding: "),
    ]


def test_each_long_command_shows_progress_on_a_terminal(history, terminal):
    for name, args, options, label in commands(history):
        out = StringIO()
        call_command(name, *args, stdout=out, stderr=terminal.stream, **options)
        shown = terminal.read()
        assert "\r\x1b[K" in shown and label in shown, (name, shown)
        assert shown.endswith("\n"), name  # the line is ended: the next output starts clean
        # The one-line result still follows (export's on stderr: its stdout may be the document).
        assert out.getvalue() or "Exported" in shown, name


def test_export_progress_counts_every_row(history, terminal):
    call_command("ilab_memory_export", "alice", output=str(history.with_name("x.json")), stderr=terminal.stream)
    document = json.loads(history.read_text())
    rows = sum(len(document[k]) for k in ("sessions", "observations", "revisions"))
    assert f"Exporting: {rows:,} rows" in terminal.read()


def test_long_commands_print_nothing_when_stderr_is_not_a_terminal_except_their_result(history):
    for name, args, options, _ in commands(history):
        out, err = StringIO(), StringIO()
        call_command(name, *args, stdout=out, stderr=err, **options)
        assert "\r" not in err.getvalue() and "\x1b" not in err.getvalue(), name
        assert "\r" not in out.getvalue(), name


def test_verbosity_zero_prints_nothing_even_on_a_terminal(history, terminal):
    for name, args, options, _ in commands(history):
        out = StringIO()
        call_command(name, *args, verbosity=0, stdout=out, stderr=terminal.stream, **options)
        assert out.getvalue() == "" and terminal.read() == "", name


def test_the_sweep_under_cron_prints_nothing_at_all(site_env):  # noqa: F811
    """A real process as cron runs it (no terminal, -v 0), system checks included."""
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=site_env, check=True)
    for sweep in ("ilab_memory_close_idle", "ilab_memory_erase_expired", "ilab_memory_close_expired"):
        result = subprocess.run([*manage, sweep, "-v", "0"], cwd=ROOT, env=site_env,
                                capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        assert result.returncode == 0 and (result.stdout, result.stderr) == ("", ""), sweep


def test_export_into_a_pipe_that_closes_ends_quietly(site_env):  # noqa: F811
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=site_env, check=True)
    fill = ("from ilab_memory import ILabMemory\nm = ILabMemory(embedder=None)\n"
            "for i in range(300): m.mem_save('alice', f'Note {i}', 'x' * 2000)")
    subprocess.run([*manage, "shell", "--no-imports", "-c", fill], cwd=ROOT, env=site_env, check=True)
    # 600 KB of export into a pipe buffer of 64 KB: the writer is still writing when head exits.
    script = (f"{sys.executable} manage.py ilab_memory_export alice | head -c 100; "
              "echo \"status=${PIPESTATUS[0]}\" >&2")
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, env=site_env, capture_output=True, check=False)
    assert len(result.stdout) == 100 and result.stdout.startswith(b'{"format": "ilab_memory.export"')
    assert result.stderr.decode() == "status=1\n"  # no traceback, no "Exception ignored"


def test_export_to_stdout_writes_the_whole_document(history, capsys):
    call_command("ilab_memory_export", "alice")
    written, expected = json.loads(capsys.readouterr().out), json.loads(history.read_text())
    assert {**written, "exported_at": None} == {**expected, "exported_at": None}


def test_the_demo_command_belongs_to_the_demo_site_not_the_app():
    from django.core.management import get_commands

    assert get_commands()["ilab_memory_demo"] == "project"
    assert not (ROOT / "ilab_memory" / "management" / "commands" / "ilab_memory_demo.py").exists()


def test_the_embed_command_changes_no_schema_migrate_adds_the_pgvector_column():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unrecognized arguments: --pgvector"):
        call_command("ilab_memory_embed", "--pgvector")


def test_the_sweep_still_closes_what_went_idle(history):
    call_command("ilab_memory_close_idle", verbosity=0)
    assert Session.objects.get(user_id="bob").status == "completed"


# -- export: streamed, memory flat with the rows, consistent ---------------------------------


def _observations(n: int, user_id: str):
    from ilab_memory.models import Observation
    from tests.factories import ObservationFactory

    session = SessionFactory(user_id=user_id)
    Observation.objects.bulk_create(ObservationFactory.build_batch(n, session=session, user_id=user_id),
                                    batch_size=1000)


def _export_peak_bytes(user_id: str) -> int:
    import tracemalloc


    tracemalloc.start()
    try:
        for _ in user_export_json(user_id=user_id):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_export_memory_does_not_grow_with_the_number_of_rows(db):
    _observations(1_000, "small")
    _observations(6_000, "large")
    _export_peak_bytes("small")  # warm: imports, compiled queries
    growth = _export_peak_bytes("large") - _export_peak_bytes("small")
    # A per-row structure of even 60 bytes would add 300 kB over 5,000 more rows.
    assert growth < 300_000, growth


def test_an_observation_saved_and_revised_while_the_export_runs_is_left_out_with_its_history(mem):
    from ilab_memory.conf import get_config
    from ilab_memory.services.document import clean_document

    mem.mem_save("alice", "Editor", "vim", topic_key="editor")
    mem.mem_save("alice", "Editor", "emacs", topic_key="editor")
    pieces = user_export_json(user_id="alice")
    head = [next(pieces), next(pieces), next(pieces)]  # the header, the section, the first observation
    mem.mem_save("alice", "Shell", "bash", topic_key="shell")
    mem.mem_save("alice", "Shell", "zsh", topic_key="shell")  # a revision of a row the export did not read
    document = json.loads("".join(head + list(pieces)))
    assert [o["title"] for o in document["observations"]] == ["Editor"]
    assert [r["content"] for r in document["revisions"]] == ["vim"]
    clean_document(document, config=get_config())  # import would accept it: every reference resolves


def test_an_export_with_a_bad_scope_leaves_an_existing_file_as_it_was(db, tmp_path):
    from django.core.management.base import CommandError

    kept = tmp_path / "existing.json"
    kept.write_text("PRECIOUS")
    with pytest.raises(CommandError):
        call_command("ilab_memory_export", "alice", "--scope", "Bad Scope", "-o", str(kept))
    assert kept.read_text() == "PRECIOUS"


# -- export, import and forget from the command line -------------------------------------------

def test_export_command_writes_the_document(mem, clock, tmp_path):
    document = fill(mem)
    target = tmp_path / "alice.json"
    call_command("ilab_memory_export", "alice", output=str(target))
    written = json.loads(target.read_text())
    assert written["observations"] == document["observations"]


def test_import_command_reads_a_file_and_is_idempotent(mem, clock, tmp_path):
    document = fill(mem)
    mem.mem_forget_user("alice")
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(document))
    out = StringIO()
    call_command("ilab_memory_import", "alice", str(path), stdout=out)
    assert "observations_created: 4" in out.getvalue()
    call_command("ilab_memory_import", "alice", str(path), stdout=out)
    assert Observation.objects.count() == 4


def test_import_command_reports_a_bad_document(mem, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("ilab_memory_import", "alice", str(path))
    path.write_text(json.dumps({"format": FORMAT, "version": 99}))
    with pytest.raises(CommandError, match="Nothing imported"):
        call_command("ilab_memory_import", "alice", str(path))


def test_forget_command_requires_confirmation(mem, clock):
    fill(mem)
    with pytest.raises(CommandError, match="--yes"):
        call_command("ilab_memory_forget", "alice", interactive=False)
    assert Observation.objects.filter(user_id="alice").exists()
    out = StringIO()
    call_command("ilab_memory_forget", "alice", yes=True, stdout=out)
    assert "Erased 2 session(s), 4 observation(s), 1 revision(s)." in out.getvalue()
    assert not Observation.objects.filter(user_id="alice").exists()


def test_export_command_writes_one_scope(mem, clock, tmp_path):
    fill_scopes(mem, clock=clock)
    target = tmp_path / "coder.json"
    call_command("ilab_memory_export", "alice", "--scope", "coder", output=str(target))
    written = json.loads(target.read_text())
    assert written["observations"] == mem.mem_export("alice", scope="coder")["observations"]
    call_command("ilab_memory_export", "alice", "--scope", "", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == [""]
    call_command("ilab_memory_export", "alice", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == ["", "coder", "writer"]


def test_import_command_puts_a_document_into_a_scope(mem, clock, tmp_path):
    fill_scopes(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice")))
    mem.mem_forget_user("alice")
    out = StringIO()
    call_command("ilab_memory_import", "alice", str(path), "--scope", "archive", stdout=out)
    assert "observations_created: 12" in out.getvalue()
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"archive"}


def test_forget_command_erases_one_scope(mem, clock):
    fill_scopes(mem, clock=clock)
    out = StringIO()
    call_command("ilab_memory_forget", "alice", "--scope", "coder", yes=True, stdout=out)
    assert "Erased 2 session(s), 4 observation(s), 1 revision(s) of scope 'coder'." in out.getvalue()
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("ilab_memory_export", ["alice", "--scope", "Bad Scope"]),
        ("ilab_memory_import", ["alice", "{path}", "--scope", "*"]),
        ("ilab_memory_forget", ["alice", "--scope", "Bad Scope", "--yes"]),
    ],
)
def test_a_command_given_a_bad_scope_names_it_and_changes_nothing(mem, clock, tmp_path, command, args):
    fill_scopes(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice", scope="coder")))
    mem.mem_forget_user("alice", scope="coder")
    before = Observation.objects.count()
    with pytest.raises(CommandError, match="scope: "):
        call_command(command, *[a.replace("{path}", str(path)) for a in args], stdout=StringIO())
    assert Observation.objects.count() == before
