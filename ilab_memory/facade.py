"""``ILabMemory``: the Python face. Embedded on a SQLite file, or inside a configured site.

Nothing here imports Django models at module level, so ``from ilab_memory import ILabMemory``
works before Django is configured.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from typing import Any

from .exceptions import ConfigurationError

_bootstrap_lock = threading.Lock()
_embedded_path: str | None = None  # the file this process configured Django on, if any

SQLITE_BUSY_TIMEOUT_SECONDS = 30


def embedded_settings(path: str) -> dict[str, Any]:
    """The minimal Django settings of embedded mode, on the SQLite file at ``path``."""
    return {
        "INSTALLED_APPS": ["ilab_memory"],
        "DATABASES": {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": path,
                "OPTIONS": {
                    # IMMEDIATE: a writer takes the lock when it begins, so two writers wait
                    # for each other (busy timeout) instead of failing with "database is locked".
                    "transaction_mode": "IMMEDIATE",
                    "timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
                    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                },
            }
        },
        "USE_TZ": True,
        "TIME_ZONE": "UTC",
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "LOGGING_CONFIG": None,
        # A script has no worker to run: a thread of its own embeds what it saves.
        "ILAB_MEMORY": {"EMBEDDING_RUNNER": "ilab_memory.runners.thread.runner"},
    }


def _check_path(path: str) -> str:
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise ConfigurationError(f"Cannot open the memory file: the folder {parent!r} does not exist.")
    if os.path.isdir(path):
        raise ConfigurationError(f"Cannot open the memory file: {path!r} is a folder.")
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        raise ConfigurationError(f"Cannot open the memory file: {path!r} is not readable and writable.")
    # SQLite writes its WAL and shared-memory files next to the database.
    if not os.access(parent, os.W_OK):
        raise ConfigurationError(f"Cannot open the memory file: the folder {parent!r} is not writable.")
    return path


class ILabMemory:
    """Durable per-user memory. Every method is scoped by ``user_id``, and takes ``scope=``: a
    slug below the user (an agent's or a project's), ``""`` (the default) the user's shared
    space. A write lands in its scope; a read sees its scope and the shared space, or with
    ``"*"`` (or a list) exactly those scopes (docs/sessions.md, "Scopes").

    ``ILabMemory(using="default", **overrides)`` inside a Django site; ``ILabMemory.from_path``
    in a plain script. ``overrides`` are ``ILAB_MEMORY`` keys in any case
    (``session_timeout_hours=2``) applied to this instance only.
    """

    def __init__(self, using: str = "default", **overrides: Any):
        from django.apps import apps
        from django.conf import settings

        if not settings.configured or not apps.ready:
            raise ConfigurationError(
                "Django is not set up. In a plain script use ILabMemory.from_path('memory.db'); "
                "in a site, create ILabMemory() after Django has started."
            )
        if not apps.is_installed("ilab_memory"):
            raise ConfigurationError("Add 'ilab_memory' to INSTALLED_APPS to use ILabMemory() in a site.")

        self.using = using
        self._overrides = dict(overrides)
        self._base_config = None  # the site's Config that self._effective_config derives from
        self._config()  # fail now on a bad override, not on the first call

    @classmethod
    def from_path(cls, path, **overrides: Any) -> ILabMemory:
        """Embedded mode: configure Django on the SQLite file at ``path`` and migrate it; the
        thread runner embeds what is saved, and starts now if memories wait for a vector there.

        Raises ConfigurationError when the folder is missing, the file is not writable, or
        Django is already configured by a site (use ``ILabMemory()`` there).
        """
        global _embedded_path
        path = _check_path(path)
        with _bootstrap_lock:
            from django.conf import settings

            if _embedded_path is None:
                if settings.configured:
                    raise ConfigurationError(
                        "Django is already configured by this process's site; "
                        "use ILabMemory() (optionally with using=...) instead of from_path()."
                    )
                import django

                settings.configure(**embedded_settings(path))
                django.setup()
                _migrate(path)
                _embedded_path = path
            elif _embedded_path != path:
                raise ConfigurationError(
                    f"This process already uses the memory file {_embedded_path!r}; "
                    "one process embeds one file."
                )
        memory = cls(**overrides)
        from .services.embedding import resume_waiting

        # Memories another process queued and left (it exited or was killed before embedding
        # them) are embedded here, without waiting for this process's first save.
        resume_waiting(config=memory._config(), using=memory.using)
        return memory

    # -- helpers -------------------------------------------------------------------------

    def _config(self):
        """The site's settings with this instance's overrides, derived again only when the
        site's settings change (validating the overrides on every call cost more than some
        of the calls)."""
        from .conf import get_config

        base = get_config()
        if base is not self._base_config:
            self._effective_config = base.with_overrides(self._overrides)
            self._base_config = base
        return self._effective_config

    def _kwargs(self) -> dict[str, Any]:
        return {"config": self._config(), "using": self.using}

    # -- sessions ------------------------------------------------------------------------

    def mem_session_start(self, user_id: str, *, scope: str = ""):
        """Reuse the scope's live session or open one; returns SessionStartResponse with context."""
        from .services.sessions import session_start

        return session_start(user_id=user_id, scope=scope, **self._kwargs())

    def mem_session_summary(self, user_id: str, summary: str, *, scope: str = ""):
        """Store a narrative summary on the scope's active session without closing it."""
        from .services.sessions import session_summary

        return session_summary(user_id=user_id, summary=summary, scope=scope, **self._kwargs())

    def mem_session_end(self, user_id: str, summary: str | None = None, *, scope: str = ""):
        """Close the scope's active session now; raises NoActiveSession (a LookupError) when none."""
        from .services.sessions import session_end

        return session_end(user_id=user_id, summary=summary, scope=scope, **self._kwargs())

    def mem_get_session(self, user_id: str, session_id: str, *, scope=""):
        from . import selectors

        return selectors.session_get(user_id=user_id, session_id=session_id, scope=scope, **self._kwargs())

    def mem_list_sessions(self, user_id: str, *, status: str | None = None, limit: int = 50, scope=""):
        from . import selectors

        return selectors.sessions_list(user_id=user_id, status=status, limit=limit, scope=scope, **self._kwargs())

    def mem_close_idle(self) -> list[str]:
        """The sweep's first half: auto-close every idle active session; returns their ids."""
        from .services.sessions import sessions_close_idle

        return sessions_close_idle(**self._kwargs())

    def mem_close_expired(self) -> list[str]:
        """Deprecated name of ``mem_close_idle`` (sessions close; memories expire)."""
        warnings.warn("mem_close_expired is deprecated: call mem_close_idle", DeprecationWarning, stacklevel=2)
        return self.mem_close_idle()

    def mem_erase_expired(self) -> int:
        """The sweep's other half: erase every expired memory (and its index entry, vector and
        history), in batches; returns how many."""
        from .services.expiry import observations_erase_expired

        return observations_erase_expired(**self._kwargs())

    # -- observations --------------------------------------------------------------------

    def mem_save(self, user_id: str, title: str, content: str, *, type: str = "manual",
                 topic_key: str | None = None, metadata: dict | None = None, scope: str = "",
                 happened_at=None, expires_at=None, ttl=None):
        """Create, revise (same topic_key in the scope) or count a duplicate; returns SaveResult.
        ``happened_at``: when what it says happened (default: now); ``expires_at`` or ``ttl``
        (a timedelta or seconds): when it expires (default: never, or its type's RETENTION)."""
        from . import metrics
        from .services.observations import observation_save

        with metrics.timed("save"):
            return observation_save(
                user_id=user_id, title=title, content=content, type=type, topic_key=topic_key,
                metadata=metadata, scope=scope, happened_at=happened_at, expires_at=expires_at, ttl=ttl,
                **self._kwargs(),
            )

    def mem_get_observation(self, user_id: str, observation_id: str, *, scope=""):
        from . import selectors, types

        observation = selectors.observation_get(
            user_id=user_id, observation_id=observation_id, scope=scope, **self._kwargs()
        )
        return types.observation_record(observation)

    def mem_list_observations(self, user_id: str, *, type: str | None = None, topic_key: str | None = None,
                              limit: int = 50, scope="", since=None, until=None):
        """Live observations in what ``scope`` reads, newest update first (ObservationCompact),
        optionally of one ``type`` or ``topic_key`` (normalized as on save), or that happened
        from ``since`` to before ``until``."""
        from . import selectors

        return selectors.observations_list(
            user_id=user_id, type=type, topic_key=topic_key, limit=limit, scope=scope, since=since, until=until,
            **self._kwargs()
        )

    def mem_revisions(self, user_id: str, observation_id: str, *, scope=""):
        """The observation's earlier versions, newest first."""
        from . import selectors

        return selectors.observation_revisions(
            user_id=user_id, observation_id=observation_id, scope=scope, **self._kwargs()
        )

    def mem_update(self, user_id: str, observation_id: str, *, scope: str = "", **fields):
        """Replace title/content/type/topic_key/metadata/happened_at, keeping the old version in
        history, or change when it expires (expires_at, None: never; or ttl). The observation
        must be in ``scope`` (``"*"``: any of the user's)."""
        from .services.observations import observation_update
        from .validation import check_updatable

        check_updatable(fields)
        return observation_update(
            user_id=user_id, observation_id=observation_id, scope=scope, **fields, **self._kwargs()
        )

    def mem_delete(self, user_id: str, observation_id: str, *, hard: bool = False, scope: str = ""):
        """Soft (or ``hard``) delete; the observation must be in ``scope`` (``"*"``: any of the user's)."""
        from .services.observations import observation_delete

        return observation_delete(
            user_id=user_id, observation_id=observation_id, hard=hard, scope=scope, **self._kwargs()
        )

    def mem_search(self, user_id: str, query: str, *, type: str | None = None, limit: int | None = None,
                   min_score: float | None = None, scope="", since=None, until=None, time_zone=None, now=None):
        """Full-text search of the user's live observations in what ``scope`` reads, best first
        (SearchScore); ``limit`` defaults to the SEARCH_DEFAULT_LIMIT setting. ``since`` /
        ``until`` keep to what happened in that period; a date phrase in the query ("last
        week") favours what happened then, read at ``now`` (default: the current time) in
        ``time_zone`` (an IANA name; default: Django's current time zone). ``min_score`` (a number,
        at least 0) leaves out the results scoring below it (docs/search.md#min_score)."""
        from . import metrics
        from .services.search import observation_search

        with metrics.timed("search"):
            return observation_search(
                user_id=user_id, query=query, type=type, limit=limit, min_score=min_score, scope=scope, since=since,
                until=until, time_zone=time_zone, now=now, **self._kwargs()
            )

    def mem_context(self, user_id: str, *, limit: int | None = None, scope="", since=None, until=None):
        """The start-of-session ranking (ContextScore), read-only; ``limit`` defaults to the
        CONTEXT_MEMORIES setting, as at session start; ``since`` / ``until`` keep to what
        happened in that period."""
        from . import selectors

        limit = self._config().CONTEXT_MEMORIES if limit is None else limit
        return selectors.context_memories(user_id=user_id, limit=limit, scope=scope, since=since, until=until,
                                          **self._kwargs())

    def mem_timeline(self, user_id: str, observation_id: str, *, before: int = 5, after: int = 5, scope=""):
        from . import selectors

        return selectors.observation_timeline(
            user_id=user_id, observation_id=observation_id, before=before, after=after, scope=scope,
            **self._kwargs(),
        )

    def mem_stats(self, user_id: str, *, scope=""):
        """Counts of what ``scope`` reads (``"*"``: all of the user's), with live memories per scope."""
        from . import selectors

        return selectors.stats(user_id=user_id, scope=scope, **self._kwargs())

    # -- the user's data -----------------------------------------------------------------

    def mem_export(self, user_id: str, *, scope="*") -> dict:
        """The user's rows (sessions, observations, revisions) in ``scope`` (default: every
        scope) as a versioned dict; each record names its scope."""
        from .services.export import user_export

        return user_export(user_id=user_id, scope=scope, **self._kwargs())

    def mem_import(self, user_id: str, data: dict, *, scope: str | None = None) -> dict:
        """Add an export's rows the user lacks, each into its record's scope (an export without
        scopes: the shared space), or all into ``scope`` when given; idempotent;
        ValidationError, nothing written, on a bad one."""
        from .services.imports import user_import

        return user_import(user_id=user_id, data=data, scope=scope, **self._kwargs())

    def mem_forget_user(self, user_id: str, *, scope: str = "*") -> dict[str, int]:
        """Erase every row of the user (or only of one ``scope``) in one transaction; returns
        the counts per kind."""
        from .services.erasure import user_forget

        return user_forget(user_id=user_id, scope=scope, **self._kwargs())


MIGRATION_LOCK_SUFFIX = "-migrations.lock"  # beside the file, as SQLite's own -wal and -shm


@contextlib.contextmanager
def _migration_lock(path: str):
    """Hold an exclusive lock, across processes, on migrating the file at ``path``.

    Django plans a migrate before it takes any lock and never looks again: a process that lost
    the race to a new file would apply a migration the winner had already applied, and on SQLite
    a table rebuilt from its older model state drops the columns a later migration added. Under
    this lock each process plans after the one before it has finished.
    """
    with open(path + MIGRATION_LOCK_SUFFIX, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            while True:  # LK_LOCK gives up after 10 attempts; waiting is what is wanted here
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _migrate(path: str) -> None:
    from django.core.management import call_command

    with _migration_lock(path):
        call_command("migrate", verbosity=0, interactive=False)
