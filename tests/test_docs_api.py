"""Every curl command of docs/api.md and the README runs, in the order the docs give them, against
the demo site served in a real process (gunicorn, the demo's data, its own SQLite file), with the
tokens the docs name: each answers 2xx, or the error the docs show for it, and prints what the
docs show (the keys of each documented JSON value, and its words: titles, types, actions, codes,
scopes, statuses, kinds, messages).

docs/api.md's worked example of scopes is Ana's memory (user_id "4") on a site whose adapter binds
``support-bot`` and ``coding-assistant`` to their scopes (tests/docs_site.py); everything else is
the demo's plain ``agent`` account, as the page's first lines say. An id the docs show in an answer
stands, in later commands, for the id that answer really had. ``DOCS_DUMP=answers.md`` appends
every answer to that file, to write the docs' examples from.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gunicorn_site import ROOT, gunicorn_site

pytestmark = pytest.mark.engine_independent  # the site runs on a SQLite file of its own

PAGES = [ROOT / "docs" / "api.md", ROOT / "README.md"]
WORKED_EXAMPLE = "### A worked example: one user, a support bot and a coding assistant"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# The words of an answer the docs must show as they are; ids, times and scores are the run's own.
WORDS = {"action", "code", "detail", "kind", "scope", "status", "title", "type", "summary", "is_new",
         "is_auto_generated", "may_act_for_any_user", "format", "version"}
MAKE_ACCOUNTS = """
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token
grant = Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
tokens = {}
for name in ("ana", "support-bot", "coding-assistant"):
    user = User.objects.create_user(name)
    if name != "ana":
        user.user_permissions.add(grant)
    tokens[name] = Token.objects.create(user=user).key
import json
print(json.dumps(tokens))
"""


# -- reading the docs -------------------------------------------------------------------------


def code_blocks(text: str):
    """(heading, language, body) of each fenced block, with the last ### or ## heading above it."""
    heading, language, lines, blocks = "", None, [], []
    for line in text.splitlines():
        if language is None and line.startswith("#") and not line.startswith("#!"):
            heading = line
        elif line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((heading, language, "\n".join(lines)))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def commands_of(body: str) -> list[str]:
    """The curl commands of a shell block, each with its continuation lines and quoted line breaks."""
    commands, current = [], None
    for line in body.splitlines():
        if current is None:
            if re.match(r"\s*(curl|jq .*\| curl)\b", line):
                current = line
        else:
            current += "\n" + line
        if current is not None and not current.endswith("\\") and complete(current):
            commands.append(current.strip())
            current = None
    return commands


def complete(command: str) -> bool:
    try:
        shlex.split(command, comments=True)
    except ValueError:  # a quote still open
        return False
    return True


def documented_values(body: str) -> list:
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(body) and body[at].isspace():
            at += 1
        if at >= len(body):
            return values
        value, at = decoder.raw_decode(body, at)
        values.append(value)


def examples(page: Path) -> list[tuple[str, str, object]]:
    """(heading, command, the JSON value the docs show for it or None) in the page's order."""
    blocks, found = code_blocks(page.read_text(encoding="utf-8")), []
    for i, (heading, language, body) in enumerate(blocks):
        commands = commands_of(body) if language in ("bash", "sh") else []
        if not commands and language in ("bash", "sh", "python", "") and "curl " in body:
            commands = [c for c in re.findall(r"`(curl [^`]+)`", body)]
        if not commands:
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        values = documented_values(after[2]) if after and after[1] == "json" else []
        printing = [c for c in commands if " > " not in c]
        if len(values) == len(commands):
            pairs = list(zip(commands, values))
        else:
            shown = dict(zip(printing, values))
            pairs = [(c, shown.get(c)) for c in commands]
        found += [(heading, command, value) for command, value in pairs]
    inline = re.findall(r"\(`(curl [^`]+)`\)", page.read_text(encoding="utf-8"))
    found += [("", command, None) for command in inline if all(command != c for _, c, _ in found)]
    return found


# -- comparing --------------------------------------------------------------------------------


def differences(documented, actual, ids: dict, path="") -> list[str]:
    """Where ``actual`` does not show what ``documented`` says; learns the run's ids into ``ids``."""
    if documented == "…":
        return []
    if isinstance(documented, str) and isinstance(actual, str) and UUID.match(actual):
        prefix = documented.split("…")[0]
        if UUID.fullmatch(documented):
            ids.setdefault(documented, actual)
        return [] if UUID.match(documented) or documented.endswith("…") and prefix else [f"{path}: {documented!r}"]
    if isinstance(documented, dict):
        if not isinstance(actual, dict):
            return [f"{path}: documented an object, got {type(actual).__name__}"]
        found = []
        for key, value in documented.items():
            if key == "…":
                continue
            if key not in actual:
                found.append(f"{path}.{key}: documented, not in the answer")
            elif key in WORDS and not isinstance(value, (dict, list)) and value != "…":
                if isinstance(value, str) and value.endswith("…"):
                    if not str(actual[key]).startswith(value[:-1]):
                        found.append(f"{path}.{key}: documented {value!r}, got {actual[key]!r}")
                elif value != actual[key]:
                    found.append(f"{path}.{key}: documented {value!r}, got {actual[key]!r}")
            else:
                found += differences(value, actual[key], ids, f"{path}.{key}")
        return found
    if isinstance(documented, list):
        if not isinstance(actual, list):
            return [f"{path}: documented a list, got {type(actual).__name__}"]
        if all(isinstance(item, str) and item.startswith("(") for item in documented):
            return []  # "(the same Name)": a reminder, not a value
        if documented and documented[-1] == "…":  # "and more": the first ones as shown
            documented = documented[:-1]
            actual = actual[:len(documented)]
        if len(documented) != len(actual):
            return [f"{path}: documented {len(documented)} items, got {len(actual)}"]
        return [d for one, other in zip(documented, actual) for d in differences(one, other, ids, f"{path}[]")]
    return []


# -- the site ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory):
    """(API base URL, environment of the docs' shell: API, TOKEN and the bound agents' tokens)."""
    folder = tmp_path_factory.mktemp("docs-site")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTHONPATH")}
    env.update(DJANGO_SETTINGS_MODULE="tests.docs_site", DJANGO_DEBUG="0",
               ILAB_MEMORY_DEMO_DB=str(folder / "demo.sqlite3"))

    def manage(*args):
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                              capture_output=True, text=True).stdout

    manage("migrate", "--no-input", "-v", "0")
    manage("ilab_memory_demo")  # operator, agent and agent-backend: user_ids "1" to "3"
    tokens = json.loads(manage("shell", "--no-imports", "-c", MAKE_ACCOUNTS).strip().splitlines()[-1])
    agent = re.search(r"Generated token (\w+) for user agent", manage("drf_create_token", "agent")).group(1)
    with gunicorn_site(env) as root:
        api = root + "/api/memory"
        shell = {"PATH": os.environ["PATH"], "HOME": str(folder), "API": api, "TOKEN": agent,
                 "SUPPORT_BOT_TOKEN": tokens["support-bot"], "CODING_ASSISTANT_TOKEN": tokens["coding-assistant"],
                 "ANA_TOKEN": tokens["ana"]}
        yield api, shell, folder


def run(command: str, shell_env: dict, folder: Path) -> tuple[int, str]:
    """(HTTP status, what the command prints), run by bash as the docs' reader would."""
    script = "curl() { command curl -w '%{stderr}%{http_code}\\n' \"$@\"; }\n" + command
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=shell_env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (command, done.stderr)
    # A command with a -w of its own prints the status itself (the docs say which, in a comment).
    statuses = (re.findall(r"^(\d{3})$", done.stderr, re.MULTILINE)
                or re.findall(r"^(\d{3})$", done.stdout, re.MULTILINE))
    return int(statuses[-1]), done.stdout


def test_every_curl_command_of_the_docs_answers_what_the_docs_show(docs_site):
    api, shell_env, folder = docs_site
    ids: dict[str, str] = {}
    failures, ran = [], 0
    for page in PAGES:
        assert examples(page), f"no curl command found in {page.name}"
        for heading, command, documented in examples(page):
            env = dict(shell_env)
            if heading == WORKED_EXAMPLE:
                env["TOKEN"] = shell_env["ANA_TOKEN"]
            for shown, real in ids.items():
                command = command.replace(shown, real)
            command = command.replace("http://127.0.0.1:8000/api/memory", api)
            status, printed = run(command, env, folder)
            ran += 1
            where = f"{page.name} {heading[:60]!r}: {command[:100]}"
            error = isinstance(documented, dict) and "code" in documented and "detail" in documented
            if error != (status >= 400) or status >= 500:
                shown = " (the docs show an error)" if error else ""
                failures.append(f"{where}: HTTP {status}{shown}: {printed[:300]}")
                continue
            said = re.search(r"# (\d{3})\b", command)
            if said and int(said.group(1)) != status:
                failures.append(f"{where}: HTTP {status}, the docs say {said.group(1)}")
            if documented is None:
                continue
            if " > " in command:
                printed = (folder / command.split(" > ")[1].split()[0]).read_text()
            try:
                actual = json.loads(printed)
            except json.JSONDecodeError:
                failures.append(f"{where}: printed no JSON: {printed[:200]!r}")
                continue
            failures += [f"{where}: {d}" for d in differences(documented, actual, ids)]
            if os.environ.get("DOCS_DUMP"):
                with Path(os.environ["DOCS_DUMP"]).open("a") as dump:
                    dump.write(f"\n## {where}\n{json.dumps(actual)}\n")
    assert ran >= 40
    assert not failures, "\n".join(failures)
