"""A new database for one benchmark process, and Django set up on it.

SQLite (no ``DATABASE_URL``): a new file in a temporary folder. PostgreSQL (``DATABASE_URL``
set): a new database ``ilab_bench_<pid>`` on that server, dropped when the process exits; the
database named in the URL is only used to create and drop it.
"""

from __future__ import annotations

import atexit
import os
import platform
import shutil
import sys
import tempfile
from urllib.parse import urlsplit, urlunsplit


def scratch_database() -> tuple[str, str]:
    """("sqlite", file path) or ("postgresql", URL) of a new empty database for this process."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        folder = tempfile.mkdtemp(prefix="ilab_bench_")
        atexit.register(shutil.rmtree, folder, True)
        return "sqlite", os.path.join(folder, "memory.sqlite3")
    import psycopg

    name = f"ilab_bench_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop():
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    atexit.register(drop)
    return "postgresql", urlunsplit(urlsplit(url)._replace(path="/" + name))


def library(**overrides):
    """Django with only ilab_memory installed, on a new database: the facade, as a script or a
    site gets it (SQLite through ``ILabMemory.from_path``, the embedded mode)."""
    from ilab_memory import ILabMemory

    vendor, where = scratch_database()
    if vendor == "sqlite":
        return ILabMemory.from_path(where, **overrides)
    import dj_database_url
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(
        INSTALLED_APPS=["ilab_memory"],
        DATABASES={"default": dj_database_url.parse(where, conn_max_age=None)},
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        LOGGING_CONFIG=None,
    )
    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    return ILabMemory(**overrides)


def site(*, embedder: bool = True) -> None:
    """The demo site (``project.settings``, DEBUG off, embedding inline) on a new database, migrated;
    ``embedder=False``: words-only search. The settings come from the environment, so a server
    started from this process serves the same site."""
    vendor, where = scratch_database()
    os.environ["DATABASE_URL" if vendor == "postgresql" else "ILAB_MEMORY_DEMO_DB"] = where
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ["ILAB_MEMORY_EMBEDDING_RUNNER"] = ""  # no background thread while requests are timed
    if not embedder:
        os.environ["ILAB_MEMORY_EMBEDDER"] = ""  # set but empty: words only
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def versions() -> dict[str, str]:
    """What the figures depend on: the machine, Python, Django, the engine and the embedder."""
    import django
    from django.db import connection

    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embedder_for

    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        engine = cursor.fetchone()[0]
    embedder = embedder_for(get_config())
    return {
        "engine": f"{connection.vendor} {engine}",
        "python": platform.python_version(),
        "django": django.get_version(),
        "cpus": str(os.cpu_count()),
        "embedder": embedder.model_id if embedder is not None else "none",
        "load": "/".join(f"{x:.1f}" for x in os.getloadavg()),
    }
