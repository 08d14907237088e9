"""docs/mcp.md's own snippets, read from the page, and what each client would make of them.

The tests run what a reader copies: the token command, every agent's configuration and the
Python examples, so the page cannot drift from what works. A configuration is read the way its
client reads it (Claude Code's command line, Codex's TOML, Cursor's and VS Code's JSON with
their variables), giving the URL and headers to connect with, or the command to start.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp.md"
HTTP = "### Over HTTP (a site)"
STDIO = "### Over stdio (embedded, one user)"
DEMO = "## Try it on the demo site"
TOKEN_VARIABLE = "ILAB_MEMORY_TOKEN"
# The page's placeholders for where the reader's venv and memory file are.
VENV_BIN, MEMORY_FOLDER = "/path/to/ilab_memory/.venv/bin/", "/home/alice/.memory/"


def text() -> str:
    return PAGE.read_text()


def section(heading: str) -> str:
    """The page from ``heading`` to the next heading of its level or above."""
    page = text()
    start = page.index(heading + "\n")
    level = heading.split(" ")[0]
    following = re.compile(rf"^#{{1,{len(level)}}} ", re.MULTILINE)
    match = following.search(page, start + len(heading))
    return page[start:match.start() if match else len(page)]


def block(heading: str, language: str, marker: str) -> str:
    """The one ``language`` block of the section under ``heading`` that holds ``marker``."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", section(heading), re.MULTILINE | re.DOTALL)
    found = [body for lang, body in blocks if lang == language and marker in body]
    assert len(found) == 1, (heading, language, marker, len(found))
    return found[0]


def token_command() -> list[str]:
    """The demo section's command that makes an agent's token, as argv (from the repository root)."""
    body = block(DEMO, "sh", "drf_create_token")
    lines = [line for line in body.splitlines() if "drf_create_token" in line]
    assert len(lines) == 1, lines
    return shlex.split(lines[0], comments=True)


def _shell_line(body: str) -> list[str]:
    return shlex.split(body.replace("\\\n", " "), comments=True)


def _expand(value: str, env: dict[str, str]) -> str:
    # Shell "$NAME", Cursor's "${env:NAME}"
    value = re.sub(r"\$\{env:(\w+)\}", lambda m: env[m.group(1)], value)
    return re.sub(r"\$(\w+)", lambda m: env[m.group(1)], value)


def http_configurations(token: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Each agent's HTTP configuration on the page, as (url, headers) with ``token`` in it."""
    env = {TOKEN_VARIABLE: token}
    configurations = {}

    argv = _shell_line(block(HTTP, "sh", "claude mcp add"))
    assert argv[:5] == ["claude", "mcp", "add", "--transport", "http"], argv
    rest = argv[5:]
    headers = {}
    while "--header" in rest:
        i = rest.index("--header")
        name, value = _expand(rest[i + 1], env).split(":", 1)
        headers[name.strip()] = value.strip()
        del rest[i:i + 2]
    _, url = rest
    configurations["Claude Code"] = (url, headers)

    codex = tomllib.loads(block(HTTP, "toml", "bearer_token_env_var"))["mcp_servers"]["ilab_memory"]
    bearer = env[codex["bearer_token_env_var"]]
    configurations["Codex"] = (codex["url"], {"Authorization": f"Bearer {bearer}"})

    cursor = json.loads(block(HTTP, "json", "mcpServers"))["mcpServers"]["ilab-memory"]
    configurations["Cursor"] = (cursor["url"], {k: _expand(v, env) for k, v in cursor["headers"].items()})

    vscode = json.loads(block(HTTP, "json", '"inputs"'))
    (prompt,) = vscode["inputs"]
    assert prompt["password"] is True
    server = vscode["servers"]["ilab-memory"]
    assert server["type"] == "http"
    # What the user types when VS Code asks for the input.
    headers = {k: v.replace(f"${{input:{prompt['id']}}}", token) for k, v in server["headers"].items()}
    configurations["VS Code"] = (server["url"], headers)
    return configurations


def stdio_configurations(venv_bin: Path, memory_folder: Path) -> dict[str, list[str]]:
    """Each agent's stdio configuration on the page, as the argv its client starts, with the
    page's placeholders for the venv and the memory folder replaced by real ones."""

    def real(value: str) -> str:
        return value.replace(VENV_BIN, f"{venv_bin}/").replace(MEMORY_FOLDER, f"{memory_folder}/")

    argv = _shell_line(block(STDIO, "sh", "claude mcp add"))
    assert argv[:4] == ["claude", "mcp", "add", "ilab-memory"] and argv[4] == "--", argv
    configurations = {"Claude Code": [real(a) for a in argv[5:]]}
    codex = tomllib.loads(block(STDIO, "toml", "mcp_servers"))["mcp_servers"]["ilab_memory"]
    configurations["Codex"] = [real(codex["command"]), *map(real, codex["args"])]
    cursor = json.loads(block(STDIO, "json", "mcpServers"))["mcpServers"]["ilab-memory"]
    configurations["Cursor"] = [real(cursor["command"]), *map(real, cursor["args"])]
    return configurations


def python_example(heading: str) -> str:
    return block(heading, "python", "asyncio.run(main())")


SCOPES = "## Scopes"
SITE = "https://memory.example.com"  # the page's placeholder for a site that mounts a scoped endpoint


def scoped_stdio_configurations(venv_bin: Path, memory_folder: Path) -> dict[str, list[str]]:
    """The worked example's two stdio configurations, by scope, as the argv their clients start."""

    def real(value: str) -> str:
        return value.replace(VENV_BIN, f"{venv_bin}/").replace(MEMORY_FOLDER, f"{memory_folder}/")

    configurations = {}
    for scope in ("coding", "support"):
        server = json.loads(block(SCOPES, "json", f'"--scope", "{scope}"'))["mcpServers"]["ilab-memory"]
        configurations[scope] = [real(server["command"]), *map(real, server["args"])]
    return configurations


def scoped_http_configuration(token: str) -> tuple[str, dict[str, str]]:
    """The worked example's HTTP configuration (Cursor's JSON): (url, headers) with ``token``."""
    server = json.loads(block(SCOPES, "json", '"url"'))["mcpServers"]["ilab-memory"]
    return server["url"], {k: _expand(v, {TOKEN_VARIABLE: token}) for k, v in server["headers"].items()}


def scoped_site_snippets() -> tuple[str, str]:
    """The worked example's settings line and ``asgi.py`` line, as Python source."""
    return block(SCOPES, "python", "ACCOUNT_SCOPES"), block(SCOPES, "python", "with_mcp(")
