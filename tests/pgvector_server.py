"""A throwaway PostgreSQL 16 with pgvector, run from a temporary folder, for tests.

The server binaries (PostgreSQL 16.2, pgvector 0.6.2) come from the ``pgserver`` wheel on PyPI
(``pip install pgserver==0.1.4``); only its files are used, not its Python API, so the server's
life is ours: own temp dir, TCP on 127.0.0.1 at a free port (plus a Unix socket in the same short
dir), durability off (fsync, full_page_writes, synchronous_commit), stopped and deleted on exit.

PostgreSQL refuses to run as root. As root (CI here) the server runs as an unprivileged system
user, ``pgserver`` by default (``PGVECTOR_SERVER_OS_USER`` overrides), created with ``useradd``
when missing: the same user the pgserver package itself would create.

Run a command against it (the main use: Django's settings switch to PostgreSQL on DATABASE_URL)::

    .venv/bin/python -m tests.pgvector_server -- pytest tests/test_sessions.py -q

It starts the server, exports ``DATABASE_URL=postgres://postgres@127.0.0.1:PORT/postgres`` (and
``PGVECTOR_SERVER_URL``, the same), runs the command (a leading ``pytest`` becomes
``sys.executable -m pytest``), stops and deletes the server, and exits with the command's code.
With no command it prints the URL and waits for Ctrl-C.

From Python::

    with pgvector_server() as pg:       # PgServer: host, port, user, dbname, url, socket_dir ...
        psycopg.connect(pg.url)

In pytest, ``pgvector_pg`` (session-scoped) gives a PgServer: the one the runner above started
when ``PGVECTOR_SERVER_URL`` is set, else a fresh one for the session. Make it visible with
``from tests.pgvector_server import pgvector_pg  # noqa: F401`` in a conftest, or ``-p
tests.pgvector_server``. It cannot re-point Django's DATABASES (settings are read before any
fixture runs): for Django tests use the runner.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

DEFAULT_OS_USER = "pgserver"
SUPERUSER = "postgres"
DBNAME = "postgres"
URL_ENV = "PGVECTOR_SERVER_URL"
# Durability is pointless for a server deleted on exit; these make start, DDL and stop faster.
DEFAULT_SETTINGS: Mapping[str, str] = {
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "max_connections": "100",
}
_SUN_PATH_MAX = 100  # sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS


@dataclasses.dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    dbname: str
    socket_dir: Path | None  # None when the temp dir's path is too long for a Unix socket
    data_dir: Path
    bin_dir: Path
    pid: int
    os_user: str
    versions: Mapping[str, str]  # "postgres": "16.2", "vector": default version of the extension

    @property
    def url(self) -> str:
        return self.url_for(self.dbname)

    def url_for(self, dbname: str) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{dbname}"

    def connect_kwargs(self, dbname: str | None = None) -> dict:
        """Keyword arguments for ``psycopg.connect``."""
        return {"host": self.host, "port": self.port, "user": self.user, "dbname": dbname or self.dbname}


def find_bin_dir() -> Path:
    """pgserver's bundled ``pginstall/bin``, found without importing pgserver (its import warns)."""
    override = os.environ.get("PGVECTOR_SERVER_BIN")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pgserver is not installed: pip install pgserver==0.1.4")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise RuntimeError(f"pgserver has no PostgreSQL binaries for this platform at {bin_dir}")
    return bin_dir


def _ensure_os_user(name: str):
    import pwd

    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    if shutil.which("useradd") or Path("/usr/sbin/useradd").exists():
        cmd = [shutil.which("useradd") or "/usr/sbin/useradd", "--system", "--user-group",
               "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name]
    elif shutil.which("adduser"):  # busybox (Alpine)
        cmd = ["adduser", "-S", "-D", "-H", name]
    else:
        raise RuntimeError(f"running as root and no way to create the OS user {name!r} for PostgreSQL")
    result = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return pwd.getpwnam(name)  # also fine when a concurrent process created it first
    except KeyError:
        raise RuntimeError(f"could not create OS user {name!r}: {result.stderr.strip()}") from None


def _traversable(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether uid can reach path (x on every directory from / down), by the mode bits alone."""
    for p in [path, *path.parents]:
        st = p.stat()
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid in gids:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


def _reachable_bin_dir(bin_dir: Path, uid: int, gids: set[int]) -> Path:
    """bin_dir, or a copy of pgserver's files under /tmp when uid cannot reach it (a venv under /root).

    The binaries find their libpq through RPATH ``$ORIGIN/../../../pgserver.libs`` (auditwheel), so
    the copy keeps the site-packages layout: ``<copy>/pgserver/pginstall`` beside ``<copy>/pgserver.libs``.
    """
    if _traversable(bin_dir, uid, gids):
        return bin_dir
    install = bin_dir.parent
    package, site = install.parent, install.parent.parent
    libs = [d for d in site.glob(package.name + "*.libs") if d.is_dir()]
    stamp = f"v2:{install}:{(bin_dir / 'postgres').stat().st_mtime_ns}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"pgvector-server-pginstall-{key}"
    copied_bin = target / package.name / install.name / bin_dir.name
    if not (copied_bin / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="pgvector-server-pginstall-", dir=target.parent))
        tree = staging / "t"
        shutil.copytree(install, tree / package.name / install.name, symlinks=True)
        for lib in libs:
            shutil.copytree(lib, tree / lib.name, symlinks=True)
        for d in (tree, tree / package.name):
            os.chmod(d, 0o755)
        try:
            os.rename(tree, target)
        except OSError:  # another process won the race
            pass
        shutil.rmtree(staging, ignore_errors=True)
    return copied_bin


def default_locale() -> str:
    """C.UTF-8 where the C library has it (Debian: C's byte-order collation, but upper()/lower()/ILIKE and
    regex classes that know non-ASCII letters, as Debian's own cluster here), else C."""
    try:
        out = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "C"
    names = {line.strip().lower().replace("-", "") for line in out.splitlines()}
    return "C.UTF-8" if "c.utf8" in names else "C"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _read_pid_file(data_dir: Path) -> list[str]:
    try:
        return (data_dir / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return []


def _version(bin_dir: Path) -> dict[str, str]:
    out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True).stdout
    versions = {"postgres": out.split()[-1] if out else "?"}
    control = bin_dir.parent / "share" / "postgresql" / "extension" / "vector.control"
    if control.exists():
        for line in control.read_text().splitlines():
            if line.startswith("default_version"):
                versions["vector"] = line.split("=", 1)[1].strip().strip("'")
    return versions


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


@contextmanager
def pgvector_server(
    base_dir: str | os.PathLike | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    settings: Mapping[str, str] | None = None,
    os_user: str | None = None,
    locale: str | None = None,
    start_timeout: float = 60.0,
    keep: bool = False,
) -> Iterator[PgServer]:
    """Start PostgreSQL 16 + pgvector in a new temp dir (inside base_dir, default /tmp); yield a
    PgServer; on exit stop it (fast shutdown, then SIGQUIT/SIGKILL if it hangs) and delete the dir.

    ``settings`` are extra ``-c name=value`` server settings over DEFAULT_SETTINGS (e.g.
    ``{"shared_buffers": "1GB"}``). Superuser ``postgres``, trust auth, database ``postgres``.
    ``locale`` defaults to default_locale() (C.UTF-8, else C); encoding is UTF8, time zone UTC.
    ``keep=True`` leaves the stopped data dir on disk (its path is ``PgServer.data_dir``).
    """
    bin_dir = find_bin_dir()
    run_as: dict = {}
    uid, gids = os.getuid(), set(os.getgroups()) | {os.getgid()}
    name = os_user or os.environ.get("PGVECTOR_SERVER_OS_USER") or DEFAULT_OS_USER
    if os.geteuid() == 0:
        entry = _ensure_os_user(name)
        uid, gids = entry.pw_uid, {entry.pw_gid}
        run_as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        bin_dir = _reachable_bin_dir(bin_dir, uid, gids)
    else:
        import getpass

        name = getpass.getuser()

    if base_dir is None:
        base_dir = "/tmp" if Path("/tmp").is_dir() else None  # short: the socket path must fit
    root = Path(tempfile.mkdtemp(prefix="pgvector-", dir=base_dir)).resolve()
    data_dir = root / "data"
    log = root / "postgres.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    locale = locale or default_locale()
    env.update(LC_ALL=locale, TZ="UTC")
    proc: subprocess.Popen | None = None
    try:
        if run_as:
            os.chown(root, uid, run_as["group"])
            if not _traversable(root, uid, gids):
                raise RuntimeError(f"OS user {name!r} cannot reach {root}: pass a base_dir it can traverse")
        initdb = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data_dir), "-U", SUPERUSER, "--auth=trust",
             "--encoding=UTF8", f"--locale={locale}", "--no-sync", "--no-instructions"],
            cwd=root, env=env, capture_output=True, text=True, **run_as,
        )
        if initdb.returncode:
            raise RuntimeError(f"initdb failed ({initdb.returncode}): {initdb.stderr or initdb.stdout}")
        socket_dir = root if len(str(root)) + len("/.s.PGSQL.65535") < _SUN_PATH_MAX else None
        conf = dict(DEFAULT_SETTINGS)
        conf["unix_socket_directories"] = str(socket_dir) if socket_dir else ""
        conf["listen_addresses"] = host
        try:  # POSIX shared memory lives in /dev/shm, 64 MB in a default Docker container
            shm_ok = shutil.disk_usage("/dev/shm").free >= 256 * 2**20
        except OSError:
            shm_ok = False
        conf["dynamic_shared_memory_type"] = "posix" if shm_ok else "mmap"
        conf.update(settings or {})

        for attempt in range(5):
            chosen = port or _free_port(host)
            args = [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(chosen)]
            for k, v in conf.items():
                args += ["-c", f"{k}={v}"]
            if sys.platform.startswith("linux") and shutil.which("setpriv"):
                # the postmaster gets SIGQUIT (immediate shutdown) if this process dies unannounced
                args = [shutil.which("setpriv"), "--pdeathsig", "QUIT", "--", *args]
            with open(log, "ab") as log_file:
                proc = subprocess.Popen(args, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                        stderr=subprocess.STDOUT, start_new_session=True, **run_as)
            deadline = time.monotonic() + start_timeout
            while time.monotonic() < deadline:
                lines = _read_pid_file(data_dir)
                if len(lines) >= 8 and lines[7].strip() == "ready":
                    break
                if proc.poll() is not None:
                    break
                time.sleep(0.02)
            else:
                raise RuntimeError(f"PostgreSQL not ready after {start_timeout}s; log:\n{_tail(log)}")
            if proc.poll() is None:
                break
            text = _tail(log)
            proc = None
            if port is None and "already in use" in text and attempt < 4:
                continue  # lost the race for the free port
            raise RuntimeError(f"PostgreSQL failed to start; log {log}:\n{text}")

        yield PgServer(host=host, port=chosen, user=SUPERUSER, dbname=DBNAME, socket_dir=socket_dir,
                       data_dir=data_dir, bin_dir=bin_dir, pid=proc.pid, os_user=name,
                       versions=_version(bin_dir))
    finally:
        if proc is not None:
            _stop(proc)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _stop(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            return
        try:
            proc.send_signal(sig)  # SIGINT = fast shutdown, SIGQUIT = immediate
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _server_from_env() -> PgServer | None:
    url = os.environ.get(URL_ENV)
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    bin_dir = find_bin_dir()
    return PgServer(host=parts.hostname or "127.0.0.1", port=parts.port or 5432,
                    user=parts.username or SUPERUSER, dbname=parts.path.lstrip("/") or DBNAME,
                    socket_dir=None, data_dir=Path(), bin_dir=bin_dir,
                    pid=0, os_user="", versions=_version(bin_dir))


try:
    import pytest
except ImportError:  # the module also works without pytest
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="session")
    def pgvector_pg() -> Iterator[PgServer]:
        """A pgvector PostgreSQL for the session: the runner's (PGVECTOR_SERVER_URL) or a new one."""
        existing = _server_from_env()
        if existing is not None:
            yield existing
            return
        with pgvector_server() as server:
            yield server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.pgvector_server",
        description="Start a throwaway PostgreSQL 16 + pgvector, run COMMAND with DATABASE_URL set to it, "
        "stop and delete it; exit with COMMAND's code.",
    )
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="extra server setting, e.g. --set shared_buffers=1GB (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the data dir after stopping")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    opts = parser.parse_args(argv)
    command = list(opts.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if command[:1] == ["pytest"]:
        command = [sys.executable, "-m", "pytest", *command[1:]]
    settings = dict(item.split("=", 1) for item in opts.set)

    # SIGTERM (a CI time-out) must still stop the server: make it unwind like Ctrl-C.
    terminated: list[int] = []

    def on_term(signum, frame):
        terminated.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    started = time.perf_counter()
    with pgvector_server(settings=settings, keep=opts.keep) as pg:
        versions = f"PostgreSQL {pg.versions.get('postgres')}, vector {pg.versions.get('vector')}"
        print(f"pgvector_server: {versions} "
              f"at {pg.url} (started in {time.perf_counter() - started:.2f}s, data {pg.data_dir}, "
              f"OS user {pg.os_user})", file=sys.stderr, flush=True)
        env = dict(os.environ, DATABASE_URL=pg.url, **{URL_ENV: pg.url})
        if not command:
            print(f"DATABASE_URL={pg.url}\npsql: {pg.bin_dir / 'psql'} {pg.url}\nCtrl-C stops it.",
                  flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
        child = subprocess.Popen(command, env=env)
        try:
            code = child.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached the child too (same process group): let it finish its teardown (the
            # test database); a SIGTERM sent to us alone is passed on.
            if terminated and child.poll() is None:
                child.send_signal(signal.SIGTERM)
            try:
                code = child.wait(60)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                child.kill()
                code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
