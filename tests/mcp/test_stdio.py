"""stdio: ``python -m ilab_memory.mcp`` (embedded, its own SQLite file) and ``manage.py
ilab_memory_mcp`` (the site's database), each a real subprocess driven by the SDK's client.

stdout must carry only the protocol: the client reports any line that is not JSON-RPC to its
message handler, and the tests fail on one.
"""

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from django.db import connections
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from ilab_memory.models import Observation

ROOT = Path(__file__).resolve().parents[2]
SECRET = "p4ssw0rd-stdio"


def run(parameters: StdioServerParameters, script, tmp_path):
    """Run ``script(client)`` against the server: (its result, non-protocol stdout lines), stderr."""
    junk: list[Exception] = []

    async def on_message(message):
        if isinstance(message, Exception):
            junk.append(message)

    async def main(err):
        transport = stdio_client(parameters, errlog=err)
        async with Client(transport, mode="legacy", message_handler=on_message) as client:
            return await script(client)

    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        result = anyio.run(main, err)
    return (result, junk), errlog.read_text()


def call(session, name, **arguments):
    return session.call_tool(name, arguments)


@pytest.mark.engine_independent
def test_embedded_stdio_server_serves_one_user_and_keeps_stdout_for_the_protocol(tmp_path):
    db = tmp_path / "mem.db"
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "ilab_memory.mcp", "--db", str(db), "--user", "alice"], cwd=str(ROOT)
    )

    async def script(session):
        listed = await session.list_tools()
        started = await call(session, "mem_session_start")
        saved = await call(session, "mem_save", title="Deploy key", content=f"Key <private>{SECRET}</private>.",
                           type="config")
        found = await call(session, "mem_search", query="deploy")
        refused = await call(session, "mem_stats", user_id="bob")
        bad = await call(session, "mem_save", title="t" * 301, content="c")
        ended = await call(session, "mem_session_end", summary="Stored the deploy key.")
        return listed, started, saved, found, refused, bad, ended

    (results, junk), stderr = run(parameters, script, tmp_path)
    listed, started, saved, found, refused, bad, ended = results
    assert junk == [], f"non-protocol output on stdout: {junk}"
    assert len(listed.tools) == 11
    assert started.structured_content["is_new"] is True
    assert saved.structured_content["observation"]["user_id"] == "alice"
    assert saved.structured_content["observation"]["content"] == "Key [REDACTED]."
    assert found.structured_content["results"][0]["title"] == "Deploy key"
    assert refused.is_error and refused.structured_content["code"] == "act_for_any_user_required"
    assert bad.is_error and bad.structured_content["limit"] == 300
    assert ended.structured_content["status"] == "completed"
    assert "Traceback" not in stderr
    files = b"".join(p.read_bytes() for p in tmp_path.glob("mem.db*"))
    assert b"Deploy key" in files and SECRET.encode() not in files


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--db", "/nonexistent-folder/mem.db", "--user", "alice"], "does not exist"),
        (["--db", "{tmp}/mem.db", "--user", "   "], "user_id: must not be blank"),
    ],
)
def test_unusable_arguments_exit_with_a_message_on_stderr(tmp_path, arguments, message):
    arguments = [a.replace("{tmp}", str(tmp_path)) for a in arguments]
    done = subprocess.run([sys.executable, "-m", "ilab_memory.mcp", *arguments], cwd=ROOT, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


def site_environment() -> dict[str, str]:
    """Environment for a manage.py process on this run's test database."""
    settings = connections["default"].settings_dict
    env = {"DJANGO_SETTINGS_MODULE": "project.settings", "DJANGO_DEBUG": "0"}
    if settings["ENGINE"].endswith("sqlite3"):
        env["ILAB_MEMORY_DEMO_DB"] = settings["NAME"]
    else:
        password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
        env["DATABASE_URL"] = (f"postgres://{settings['USER']}{password}@{settings['HOST']}:"
                               f"{settings['PORT'] or 5432}/{settings['NAME']}")
    if os.environ.get("PATH"):
        env["PATH"] = os.environ["PATH"]
    return env


def test_manage_py_ilab_memory_mcp_serves_the_sites_database(tmp_path, live_db):
    parameters = StdioServerParameters(
        command=sys.executable, args=["manage.py", "ilab_memory_mcp", "--user", "site-user-7"],
        cwd=str(ROOT), env=site_environment(),
    )

    async def script(session):
        saved = await call(session, "mem_save", title="Runs on the site", content="Same rows as the API.")
        return saved, await call(session, "mem_stats")

    ((saved, stats), junk), _stderr = run(parameters, script, tmp_path)
    assert junk == [], f"non-protocol output on stdout: {junk}"
    assert not saved.is_error, saved.content[0].text
    assert stats.structured_content["observations"] == 1
    row = Observation.objects.get(id=saved.structured_content["observation"]["id"])
    assert (row.user_id, row.title) == ("site-user-7", "Runs on the site")
