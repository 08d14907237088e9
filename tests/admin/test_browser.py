"""A real browser (Debian's Chromium via Playwright) against the demo site, as an operator uses it.

The demo runs in a subprocess on its own temporary SQLite file, one site and one browser for the
module. Each test opens a fresh context at a laptop (1366×768) or a phone (390×844) viewport.
Screenshots land in ``var/artifacts/`` for CI to keep; ``docs/admin.md`` uses copies of them.
"""

import contextlib
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
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
SESSIONS = "/admin/ilab_memory/session/"
OBSERVATIONS = "/admin/ilab_memory/observation/"
OVERVIEW = "/admin/ilab_memory/session/overview/"

# How wide the page and the changelist's table box are against what they show.
OVERFLOW = """() => {
  const page = document.documentElement, box = document.querySelector('#changelist .results');
  return {page: [page.scrollWidth, page.clientWidth], results: box ? [box.scrollWidth, box.clientWidth] : null};
}"""


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


@contextlib.contextmanager
def serve_demo(folder: Path, *, shell: str | None = None):
    """The demo site (migrated, demo data, operator/operator, then ``shell``'s Python run by
    ``manage.py shell`` if given) served on a free port; yields its base URL."""
    require_browser()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["ILAB_MEMORY_DEMO_DB"] = str(folder / "demo.sqlite3")
    env["DJANGO_DEBUG"] = "1"  # runserver serves the admin's static files only in debug
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "ilab_memory_demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    if shell is not None:
        subprocess.run([*manage, "shell", "-c", shell], cwd=ROOT, env=env, check=True, capture_output=True)
    port = free_port()
    log = open(folder / "server.log", "wb")  # noqa: SIM115 -- the server writes it until teardown closes it
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


@contextlib.contextmanager
def chromium_browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    with serve_demo(tmp_path_factory.mktemp("demo")) as base:
        yield base


@pytest.fixture(scope="module")
def browser(demo_site):
    with chromium_browser() as chromium:
        yield chromium


def operator_page(browser, demo_site, viewport):
    """A logged-in operator's page in a new context of ``viewport``."""
    context = browser.new_context(viewport=viewport, base_url=demo_site)
    page = context.new_page()
    page.goto("/admin/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "operator")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    return page


@pytest.fixture
def laptop(browser, demo_site):
    page = operator_page(browser, demo_site, LAPTOP)
    yield page
    page.context.close()


@pytest.fixture
def phone(browser, demo_site):
    page = operator_page(browser, demo_site, PHONE)
    yield page
    page.context.close()


def shot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def assert_no_overflow(page, where):
    sizes = page.evaluate(OVERFLOW)
    assert sizes["page"][0] <= sizes["page"][1], (where, sizes)
    assert sizes["results"] is None or sizes["results"][0] <= sizes["results"][1], (where, sizes)


def tab_to(page, selector, *, presses=120):
    """Press Tab until ``selector`` has the focus; fail if the keyboard never gets there."""
    target = page.locator(selector).first
    for _ in range(presses):
        page.keyboard.press("Tab")
        if target.evaluate("node => node === document.activeElement"):
            return
    pytest.fail(f"{selector} cannot be reached with the Tab key")


@pytest.mark.parametrize("viewport", ["laptop", "phone"])
def test_changelists_and_console_pages_fit_without_a_sideways_scroll(request, viewport):
    page = request.getfixturevalue(viewport)
    for path in (SESSIONS, OBSERVATIONS, OVERVIEW, "/admin/ilab_memory/session/user/alice/?q=editor"):
        page.goto(path)
        assert_no_overflow(page, (viewport, path))
        # Healthy rows never show Django's red cross (the old boolean "deleted" column).
        assert page.locator("#result_list img[src*='icon-no']").count() == 0
    page.goto(OBSERVATIONS)
    if viewport == "laptop":
        # Every column is there on a laptop, beside the navigation and the filters.
        headers = page.locator("#result_list thead th").all_inner_texts()
        assert [h.strip().lower() for h in headers[1:]] == [
            "title", "type", "user id", "scope", "session", "revised", "repeated", "happened", "state"
        ]
    else:
        shot(page, "admin-observations-phone")


def test_operator_finds_auto_closed_sessions_and_opens_one(laptop):
    page = laptop
    page.goto(SESSIONS)
    assert page.locator("#result_list tbody tr").count() == 8  # every demo session, the agent's too
    page.locator("#changelist-filter").get_by_role("link", name="Auto-generated").click()
    page.wait_for_url("**summary_kind=auto**")

    rows = page.locator("#result_list tbody tr")
    # The demo closes two sessions itself: alice's idle second one and bob's empty one.
    assert rows.count() == 2
    assert page.locator("#result_list .ilab-badge--auto").count() == 2
    assert page.locator("#result_list .ilab-badge--human, #result_list .ilab-badge--none").count() == 0
    assert sorted(rows.locator(".field-user a").all_inner_texts()) == ["alice", "bob"]
    # Long text is cut to one line; the whole of it is on hover.
    clip = rows.locator(".field-summary_preview .ilab-clip").first
    assert clip.get_attribute("title").startswith("Memories:")
    shot(page, "admin-sessions-auto")

    rows.filter(has_text="alice").locator("th a").click()
    page.wait_for_selector("#session_form")
    body = page.locator("#content").inner_text()
    assert "Memories: [learning] Reads release notes on Fridays, [config] Editor uses 4-space indents" in body
    assert page.locator("#session_form .ilab-badge--auto").count() == 1
    # A synthetic summary is read-only, and nothing else on the page is editable.
    assert page.locator("textarea[name=summary]").count() == 0
    assert page.locator("input[name=_save]").count() == 0
    links = page.locator("table.ilab-observations a")
    assert sorted(links.all_inner_texts()) == ["Editor uses 4-space indents", "Reads release notes on Fridays"]
    assert "abc123" not in page.content()  # alice's private token never reaches the admin
    shot(page, "admin-session-detail")

    links.first.click()
    page.wait_for_selector("#observation_form")
    assert page.locator("input[name=_save]").count() == 1
    # The edit says what it is: a correction unless the operator chooses a write of the user.
    assert page.locator("input[name=edit_kind][value=correction]").is_checked()
    assert page.locator("label", has_text="Title").count() >= 1
    shot(page, "admin-observation-edit")


def test_overview_draws_its_charts_and_links_to_users(laptop):
    page = laptop
    page.goto(OVERVIEW)
    days = page.locator("svg.ilab-chart--days")
    assert days.count() == 1 and days.bounding_box()["height"] > 100
    # One column per day; the demo's sessions are drawn, auto ones in their own colour.
    assert page.locator("svg.ilab-chart--days > g").count() == 30
    assert page.locator("svg.ilab-chart--days rect.ilab-fill--auto").count() >= 1
    assert page.locator("svg.ilab-chart--days rect.ilab-fill--human").count() >= 1
    assert page.locator("#ilab-types .ilab-bars tr").count() >= 5
    assert page.locator("#ilab-users a", has_text="alice").count() == 1
    shot(page, "admin-overview")
    page.locator("#ilab-users a", has_text="alice").click()
    page.wait_for_selector("#ilab-user-stats")
    page.fill("#ilab-q", "editor")
    page.keyboard.press("Enter")
    page.wait_for_selector(".ilab-results")
    assert "Editor uses 4-space indents" in page.locator(".ilab-results").inner_text()
    assert page.locator(".ilab-results .ilab-breakdown").first.inner_text().count("engine") == 1
    assert "Build cache" not in page.content()  # bob's memory is not on alice's page
    shot(page, "admin-user")


def test_actions_work_from_the_keyboard_and_leave_audit_entries(laptop):
    page = laptop
    page.goto(OBSERVATIONS + "?q=timezone")
    title = "Fixed timezone drift in reports"
    assert page.locator("#result_list tbody tr").count() == 1
    tab_to(page, "#result_list tbody input.action-select")
    page.keyboard.press("Space")
    tab_to(page, "select[name=action]")
    page.keyboard.type("Soft")  # a closed select takes the first letters of an option
    assert page.locator("select[name=action]").input_value() == "soft_delete_selected"
    tab_to(page, "button[name=index]")
    page.keyboard.press("Enter")
    page.wait_for_selector(".messagelist")
    assert "Soft-deleted 1 observation." in page.locator(".messagelist").inner_text()

    # The entry is in Recent actions and in the observation's history, with who and what.
    page.goto("/admin/")
    assert title in page.locator("#recent-actions-module").inner_text()
    page.locator("#recent-actions-module a", has_text=title).click()
    page.locator("#content a.historylink, .object-tools a", has_text="History").first.click()
    history = page.locator("#change-history").inner_text()
    assert "operator" in history and "Soft-deleted (an action on 1 observation)." in history

    # The sweep button and a user's erase link are reachable from the keyboard too.
    page.goto(SESSIONS)
    tab_to(page, ".ilab-close-idle button")
    page.goto("/admin/ilab_memory/session/user/bob/")
    tab_to(page, "a.ilab-danger")
    page.keyboard.press("Enter")
    page.wait_for_selector("body.delete-confirmation")
    crumbs = page.locator(".breadcrumbs").inner_text()
    assert "iLab memory" in crumbs or "Ilab" in crumbs.title()
