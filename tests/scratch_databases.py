"""A throwaway PostgreSQL database on the server of DATABASE_URL, for tests that start processes."""

import contextlib
import urllib.parse
import uuid


@contextlib.contextmanager
def scratch_postgres(url: str, *, prefix: str):
    """Create a database named ``<prefix>_<random>`` next to ``url``'s; yield ``url`` pointing at
    it (a ``urllib.parse.SplitResult``); drop it afterwards, closing what still uses it."""
    import psycopg

    parsed = urllib.parse.urlsplit(url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin_url = urllib.parse.urlunsplit(parsed._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield parsed._replace(path=f"/{name}")
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
