"""A real browser (Debian's Chromium via Playwright) against the demo site, as an operator uses it.

The demo runs in a subprocess on its own temporary SQLite file. Screenshots land in
``var/artifacts/`` for CI to keep; ``docs/admin.md`` uses copies of them.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "var" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_browser():
    """Skip where there is no Chromium, but fail on CI, where a skip would hide a gap."""
    missing = None
    if not os.access(CHROMIUM, os.X_OK):
        missing = f"{CHROMIUM} is not installed (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "Python Playwright is not installed"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test cannot run on CI: {missing}")
        pytest.skip(missing)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, *, attempts: int = 150) -> None:
    for _ in range(attempts):
        if server.poll() is not None:
            raise RuntimeError(f"demo server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"demo server did not answer at {url}")


@pytest.fixture
def demo_site(tmp_path):
    """The demo site (migrated, demo data, operator/operator) served on a free port."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["ILAB_MEMORY_DEMO_DB"] = str(tmp_path / "demo.sqlite3")
    env["DJANGO_DEBUG"] = "1"  # runserver serves the admin's static files only in debug
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "ilab_memory_demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT, env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/admin/login/", server)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture
def page():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1600, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def test_operator_finds_auto_closed_sessions_and_opens_one(page, demo_site):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{demo_site}/admin/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "operator")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{demo_site}/admin/ilab_memory/session/")
    page.click("#toggle-nav-sidebar")  # more room for the columns (the admin remembers it)
    assert page.locator("#result_list tbody tr").count() == 7  # every demo session
    page.locator("#changelist-filter").get_by_role("link", name="Auto-generated").click()
    page.wait_for_url("**summary_kind=auto**")

    rows = page.locator("#result_list tbody tr")
    # The demo closes two sessions itself: alice's idle second one and bob's empty one.
    assert rows.count() == 2
    assert page.locator("#result_list .ilab-badge--auto").count() == 2
    assert page.locator("#result_list .ilab-badge--human, #result_list .ilab-badge--none").count() == 0
    assert sorted(rows.locator("th a").all_inner_texts()) == ["alice", "bob"]
    page.screenshot(path=str(ARTIFACTS / "admin-sessions-auto.png"), full_page=True)

    rows.locator("th a", has_text="alice").click()
    page.wait_for_selector("#session_form")
    body = page.locator("#content").inner_text()
    assert "Memorias registradas: [learning] Reads release notes on Fridays, [config] Editor uses 4-space indents" in body
    assert page.locator("#session_form .ilab-badge--auto").count() == 1
    # A synthetic summary is read-only, and nothing else on the page is editable.
    assert page.locator("textarea[name=summary]").count() == 0
    assert page.locator("input[name=_save]").count() == 0
    links = page.locator("table.ilab-observations a")
    assert sorted(links.all_inner_texts()) == ["Editor uses 4-space indents", "Reads release notes on Fridays"]
    assert "abc123" not in page.content()  # alice's private token never reaches the admin
    page.screenshot(path=str(ARTIFACTS / "admin-session-detail.png"), full_page=True)

    links.first.click()
    page.wait_for_selector("#observation_form")
    assert page.locator("input[name=_save]").count() == 1
