"""``python3 -m project demo`` on a fresh SQLite file: uvicorn serving project.asgi:application,
the admin with its static files, the API's docs page, and the MCP endpoint at /mcp/; and
docs/mcp.md against it, read from the page: its token command makes a plain account's token,
with which every HTTP configuration and the Python example connect, and another user's memory
is refused."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.mcp import page
from tests.mcp.conftest import free_port, mcp_client

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="the demo runs on its own SQLite file; the SQLite run covers it"
)


def test_the_demo_serves_the_site_and_mcp(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(ILAB_MEMORY_DEMO_DB=str(tmp_path / "demo.sqlite3"), DJANGO_SETTINGS_MODULE="project.settings")
    port = free_port()
    log = (tmp_path / "demo.log").open("w")
    demo = subprocess.Popen([sys.executable, "-m", "project", "demo", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # migrations, demo data, then the server
        while True:
            try:
                if httpx2.get(base + "/admin/login/", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if demo.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the demo did not start:\n" + (tmp_path / "demo.log").read_text()[-3000:])
            time.sleep(0.2)
        assert httpx2.get(base + "/static/admin/css/base.css", timeout=10).status_code == 200
        assert httpx2.get(base + "/api/memory/docs/", timeout=10).status_code == 200
        # MCP is mounted and asks for a token; what it serves with one is tests/mcp/test_http.py's
        # business, against this same ASGI application.
        mcp = httpx2.post(base + "/mcp/", json={}, timeout=10)
        assert mcp.status_code == 401 and mcp.headers["www-authenticate"] == "Bearer"
        the_pages_configurations_connect(base, env, tmp_path)
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=30)
        log.close()
    assert "Traceback" not in (tmp_path / "demo.log").read_text()


PAGE_URL = "http://127.0.0.1:8000/mcp/"


def the_pages_configurations_connect(base: str, env: dict[str, str], tmp_path: Path) -> None:
    assert "drf_create_token operator" not in page.text()  # an agent never gets the operator's token
    argv = page.token_command()
    assert argv[-1] == "agent", argv
    made = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    token = re.search(r"Generated token (\w+) for user agent", made.stdout).group(1)

    configurations = page.http_configurations(token)
    assert set(configurations) == {"Claude Code", "Codex", "Cursor", "VS Code"}
    for client, (url, headers) in configurations.items():
        assert url == PAGE_URL, client
        with mcp_client(url.replace("http://127.0.0.1:8000", base), headers=headers) as agent:
            started = agent.ok("mem_session_start")
            assert started["session_id"], client
            # A plain account: its own memory, nobody else's.
            assert agent.error("mem_stats", user_id="alice")["code"] == "act_for_any_user_required", client

    example = tmp_path / "example.py"
    example.write_text(page.python_example(page.HTTP).replace("http://127.0.0.1:8000", base))
    done = subprocess.run([sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True,
                          env={**env, page.TOKEN_VARIABLE: token}, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.match(r"(NEW|CONTINUING) session ", done.stdout)
    assert done.stdout.splitlines()[-1] == "Prefers tabs"

    # The demo also mounts an endpoint bound to the "coding" scope: the same token's session
    # there is another one, and what it saves is not found through the shared space's endpoint.
    headers = configurations["Claude Code"][1]
    with (
        mcp_client(base + "/mcp/coding/", headers=headers) as coder,
        mcp_client(base + "/mcp/", headers=headers) as shared,
    ):
        assert coder.ok("mem_session_start")["session_id"] != shared.ok("mem_session_start")["session_id"]
        coder.ok("mem_save", title="Branch refund-fix", content="The coding agent works on branch refund-fix.")
        assert [r["title"] for r in coder.ok("mem_search", query="refund-fix")["results"]][:1] == ["Branch refund-fix"]
        # The shared space's endpoint never sees it (a weak neighbour by meaning of its own may come back).
        assert "Branch refund-fix" not in [r["title"] for r in shared.ok("mem_search", query="refund-fix")["results"]]
