"""``python3 -m project demo|test``: the README's two commands, on a machine with only Python.

Standard library only. Creates ``.venv`` next to manage.py, installs requirements.txt and the
project itself (editable, so ``ilab_memory`` imports and ``ilab-memory-mcp`` runs from any folder)
into it, again whenever either file changes, then runs the demo site or the test suite with it.
"""

import hashlib
import os
import socket
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PYTHON = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / ".requirements-sha256"
USAGE = "usage: python3 -m project demo [--port N] | test [pytest arguments]"


def ensure_environment() -> None:
    requirements = ROOT / "requirements.txt"
    digest = hashlib.sha256(requirements.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        return
    if not PYTHON.exists():
        print("Creating .venv …", flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except (subprocess.CalledProcessError, OSError) as error:
            # Debian and Ubuntu ship venv/ensurepip separately from python3 itself.
            sys.exit(
                f"Could not create .venv ({error}). Install Python's venv support "
                "(on Debian/Ubuntu: apt-get install python3-venv), delete .venv and run again."
            )
    print("Installing requirements.txt and ilab_memory into .venv …", flush=True)
    pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "-r", str(requirements)], check=True, cwd=ROOT)
    # The package itself: agents start its MCP server from their own folders (docs/mcp.md).
    subprocess.run([*pip, "install", "--no-deps", "-e", str(ROOT)], check=True, cwd=ROOT)
    STAMP.write_text(digest)


def run(*args: str) -> None:
    subprocess.run([str(PYTHON), *args], check=True, cwd=ROOT)


def port_is_free(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be listened on now (uvicorn binds it the same way)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def demo(argv: list[str]) -> int:
    port = "8000"
    if argv[:1] == ["--port"] and len(argv) > 1:
        port = argv[1]
    if not port.isdigit() or not 0 < int(port) < 65536:
        print(f"--port takes a port number (1-65535), not {port!r}. {USAGE}", file=sys.stderr)
        return 2
    # Before the banner: a second demo on a busy port would print its URLs, then fail.
    if not port_is_free(int(port)):
        print(f"Port {port} on 127.0.0.1 is in use (another demo, or another server). Stop it, or "
              f"choose another port: python3 -m project demo --port {int(port) + 1}", file=sys.stderr)
        return 1
    run("manage.py", "migrate", "--no-input", "-v", "0")
    run("manage.py", "ilab_memory_demo")
    print(f"\nDemo site: http://127.0.0.1:{port}/admin/  (login: operator / operator)", flush=True)
    print(f"MCP for agents: http://127.0.0.1:{port}/mcp/  (docs/mcp.md). An agent's token, for its own "
          "memory only: .venv/bin/python manage.py drf_create_token agent; a backend serving many users: "
          "drf_create_token agent-backend (may act for any user_id).\n", flush=True)
    os.chdir(ROOT)
    # The ASGI application serves the site and the MCP endpoint (runserver would serve WSGI only).
    os.execv(str(PYTHON), [str(PYTHON), "-m", "uvicorn", "project.asgi:application",
                           "--host", "127.0.0.1", "--port", port])
    return 0  # not reached


# Options after which pytest runs no tests, or chooses its own workers.
NOT_PARALLEL = {"-n", "--numprocesses", "-p", "--version", "-V", "-h", "--help", "--co", "--collect-only",
                "--fixtures", "--markers", "--pdb", "--lf", "--last-failed"}


def parallel_options(argv: list[str]) -> list[str]:
    """pytest-xdist's options for the whole suite: a worker per core, each test module whole on
    one worker (``loadfile``: its module-scoped servers and accounts start once, and its tests
    keep their order). None when ``argv`` names tests (a module while you work starts sooner
    without workers) or chooses its own (``-n 0``: serial)."""
    names_tests = any((ROOT / arg.split("::")[0]).exists() for arg in argv if not arg.startswith("-"))
    chooses = any(arg.split("=")[0] in NOT_PARALLEL or arg.startswith("-n") for arg in argv)
    return [] if names_tests or chooses else ["-n", "auto", "--dist", "loadfile"]


def test(argv: list[str]) -> int:
    command = [str(PYTHON), "-m", "pytest", *parallel_options(argv), *argv]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


def main(argv: list[str]) -> int:
    commands = {"demo": demo, "test": test}
    if not argv or argv[0] not in commands:
        print(USAGE, file=sys.stderr)
        return 2
    ensure_environment()
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
