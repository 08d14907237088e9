"""The demo site in a real process: gunicorn on a free port of 127.0.0.1, for the tests that drive
it over HTTP (the live API, the docs' curl commands, health without a database, racing writers)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def gunicorn_site(env: dict, *, workers: int = 1, threads: int = 1, log: Path | None = None,
                  timeout: float = 60) -> Iterator[str]:
    """Serve ``project.wsgi`` with ``env`` until the block ends; yields the site's root URL once
    its health endpoint answers (any status: a site without a database answers 503). The
    server's stderr goes to ``log`` when given, and is shown if it never starts."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "project.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", str(workers), "--threads", str(threads), "--timeout", "120"]
    stderr = log.open("w") if log is not None else subprocess.PIPE
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(root + "/api/memory/health/", timeout=5)
                break
            except urllib.error.HTTPError:
                break  # answering
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    said = log.read_text() if log is not None else server.stderr.read().decode()
                    raise RuntimeError(f"the demo site did not start: {said[-2000:]}") from None
                time.sleep(0.2)
        yield root
    finally:
        server.terminate()
        server.wait(timeout=30)
        if log is not None:
            stderr.close()
