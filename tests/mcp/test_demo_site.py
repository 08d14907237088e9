"""``python3 -m project demo`` on a fresh SQLite file: uvicorn serving project.asgi:application,
the admin with its static files, the API's docs page, and the MCP endpoint at /mcp/."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.mcp.conftest import free_port

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
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=30)
        log.close()
    assert "Traceback" not in (tmp_path / "demo.log").read_text()
