"""PostgreSQL: rare-term search while saves keep arriving, for three settings of the GIN index.

    DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.gin_pending [--rounds 30]

PostgreSQL's GIN index puts new entries in a pending list that every search scans until it is
merged into the index (when it reaches ``gin_pending_list_limit``, 4 MB by default, or at
VACUUM). Three scratch databases, migrated as shipped and then set to: the server's default
list, ``gin_pending_list_limit = 128`` (kB, what ilab_memory sets), and ``fastupdate = off`` (no
list). Each holds a reader with 1,000 memories (each rare term in 4 of them), vacuumed. Then,
round by round and the databases in turns (A B C, C B A, …), 200 saves by another user and 50
rare-term searches by the reader. Reported: the p50 of the saves and the p50 and p90 of the
searches, per setting. Words only (``EMBEDDER = None``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from urllib.parse import urlsplit, urlunsplit

SETTINGS = {
    "default": "ALTER INDEX ilab_mem_obs_search RESET (gin_pending_list_limit)",
    "limit_128kB": "ALTER INDEX ilab_mem_obs_search SET (gin_pending_list_limit = 128)",
    "fastupdate_off": "ALTER INDEX ilab_mem_obs_search SET (fastupdate = off)",
}
READER_MEMORIES = 1_000
SAVES, SEARCHES = 200, 50


def _database_url(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        parser.error("set DATABASE_URL to a PostgreSQL server")

    import dj_database_url
    import django
    import psycopg
    from django.conf import settings

    names = {alias: f"ilab_gin_{alias.lower()}_{os.getpid()}" for alias in SETTINGS}
    with psycopg.connect(url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f'CREATE DATABASE "{name}"')
    databases = {alias: dj_database_url.parse(_database_url(url, name), conn_max_age=None) for alias, name in names.items()}
    settings.configure(
        INSTALLED_APPS=["ilab_memory"], DATABASES=databases, USE_TZ=True, TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField", ILAB_MEMORY={"EMBEDDER": None}, LOGGING_CONFIG=None,
    )
    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from ilab_memory import ILabMemory

    try:
        memories = {}
        for alias, statement in SETTINGS.items():
            call_command("migrate", database=alias, verbosity=0)
            memory = memories[alias] = ILabMemory(using=alias)
            with connections[alias].cursor() as cursor:
                cursor.execute(statement)
            memory.mem_session_start("reader")
            for i in range(READER_MEMORIES):
                memory.mem_save("reader", f"note {i}", f"content {i} zr{i // 4:x} about things", type="decision")
            with connections[alias].cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        saves = {alias: [] for alias in SETTINGS}
        searches = {alias: [] for alias in SETTINGS}
        order = list(SETTINGS)
        written = 0
        for round_ in range(args.rounds):
            for alias in order if round_ % 2 == 0 else reversed(order):
                memory = memories[alias]
                for _ in range(SAVES):
                    written += 1
                    started = time.perf_counter()
                    memory.mem_save("writer", f"w {written}", f"filler text {written} with several words for the index")
                    saves[alias].append(time.perf_counter() - started)
                for i in range(SEARCHES):
                    started = time.perf_counter()
                    memory.mem_search("reader", f"zr{(i * 7) % (READER_MEMORIES // 4):x}")
                    searches[alias].append(time.perf_counter() - started)
        print(f"{args.rounds} rounds of {SAVES} saves and {SEARCHES} rare-term searches per setting\n")
        print("| GIN setting | save p50 ms | search p50 ms | search p90 ms |")
        print("|---|---:|---:|---:|")
        for alias in SETTINGS:
            cuts = statistics.quantiles(searches[alias], n=10)
            print(f"| {alias} | {statistics.median(saves[alias]) * 1000:.3f} | "
                  f"{statistics.median(searches[alias]) * 1000:.3f} | {cuts[-1] * 1000:.3f} |")
    finally:
        connections.close_all()
        with psycopg.connect(url, autocommit=True) as admin:
            for name in names.values():
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
