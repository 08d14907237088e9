"""The demo site in a real process (gunicorn on 127.0.0.1), driven over HTTP with urllib.

It runs on its own database so it never touches the suite's: a temporary SQLite file, or, when
DATABASE_URL points at PostgreSQL, a throwaway database created on that server and dropped after.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.gunicorn_site import ROOT, gunicorn_site
from tests.scratch_databases import scratch_postgres

MAKE_ACCOUNT = (
    "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
    "u = User.objects.create_user('live-user'); print(Token.objects.create(user=u).key)"
)


@pytest.fixture
def site_env(tmp_path):
    """Environment for the demo site's processes, pointing at a database of its own."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "DJANGO_DEBUG": "0"}
    url = os.environ.get("DATABASE_URL")
    if not url:
        env["ILAB_MEMORY_DEMO_DB"] = str(tmp_path / "live.sqlite3")
        yield env
        return
    with scratch_postgres(url, prefix="ilab_memory_live") as database:
        env["DATABASE_URL"] = urllib.parse.urlunsplit(database)
        yield env


@pytest.fixture
def live_site(site_env):
    """(base URL, API token) of a running demo site."""
    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=site_env, check=True, capture_output=True, text=True
        ).stdout

    manage("migrate", "--no-input", "-v", "0")
    token = manage("shell", "--no-imports", "-c", MAKE_ACCOUNT).strip().splitlines()[-1]
    with gunicorn_site(site_env) as root:
        yield root + "/api/memory/", token


def request(base, token, method, path, body=None):
    """(status, JSON body) of one request."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_full_session_lifecycle_over_real_http(live_site):
    base, token = live_site
    assert request(base, None, "POST", "sessions/start/", {})[0] == 401

    status, started = request(base, token, "POST", "sessions/start/", {})
    assert status == 201 and started["is_new"] is True
    assert request(base, token, "POST", "sessions/start/", {})[0] == 200

    status, saved = request(
        base, token, "POST", "observations/",
        {"title": "Deploy with gunicorn", "content": "Workers behind nginx. <private>10.0.0.7</private>",
         "type": "decision"},
    )
    assert status == 201 and saved["action"] == "created"
    assert "10.0.0.7" not in json.dumps(saved)

    status, found = request(base, token, "GET", "observations/search/?q=gunicorn")
    assert status == 200 and [r["id"] for r in found] == [saved["observation"]["id"]]
    assert all(r["score"]["breakdown"]["relevance"] is None  # no word matched the private address
               for r in request(base, token, "GET", "observations/search/?q=10.0.0.7")[1])

    status, summarized = request(base, token, "POST", "sessions/summary/", {"summary": "Picked the deploy stack."})
    assert status == 200 and summarized["status"] == "active"

    status, ended = request(base, token, "POST", "sessions/end/", {})
    assert status == 200 and ended["summary"] == "Picked the deploy stack." and ended["is_auto_generated"] is False
    status, error = request(base, token, "POST", "sessions/end/", {})
    assert status == 404 and error["code"] == "no_active_session"

    status, again = request(base, token, "POST", "sessions/start/", {})
    assert status == 201 and again["session_id"] != started["session_id"]
    assert [c["summary"] for c in again["sessions_context"]] == ["Picked the deploy stack."]
    assert [m["title"] for m in again["memories"]] == ["Deploy with gunicorn"]

    status, bad = request(base, token, "POST", "observations/", {"title": "x" * 301, "content": "c"})
    assert status == 400 and bad["code"] == "max_length" and bad["limit"] == 300


def test_prometheus_scrapes_the_demo_site_over_real_http(live_site):
    """What a Prometheus server reads: the demo site's metrics/, in its text format, after a save
    and a search through the API (the search embedded the saved memory: the suite's settings
    start no runner)."""
    base, token = live_site
    assert request(base, token, "POST", "observations/", {"title": "Likes tea", "content": "Green."})[0] == 201
    assert request(base, token, "GET", "observations/search/?q=tea")[0] == 200
    with urllib.request.urlopen(base + "metrics/", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = response.read().decode()
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert samples['ilab_memory_operation_seconds_count{face="api",operation="save"}'] == "1.0"
    assert samples['ilab_memory_operation_seconds_count{face="api",operation="search"}'] == "1.0"
    assert samples["ilab_memory_vectors_stored_total"] == "1.0"
    assert samples["ilab_memory_embedding_backlog"] == "0.0"
    assert samples["ilab_memory_embedding_backlog_oldest_seconds"] == "0.0"
    assert samples["ilab_memory_sweep_sessions_closed_total"] == "0.0"
    assert "tea" not in text.lower() and "live-user" not in text
