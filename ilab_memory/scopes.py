"""Scopes: the parts of one user's memory that several agents keep apart.

A scope is a short slug below the user (an agent's or a project's name). The empty scope,
``SHARED``, is the user's shared space and every call's default, so a call that names no scope
means what it meant before scopes existed.

One cleaner per contract, each raising ValidationError("scope", ...) for a bad value:

* ``clean_write_scope``: the one scope a **write** lands in.
* ``clean_read_reach``: what a **read** sees: a scope and the shared space, the scope's own
  first on equal evidence; ``ALL`` (``"*"``) or an explicit list reads exactly those scopes.
* ``clean_target_scope``: where a **write by id** (update, delete, restore) finds its row: its
  own scope only, or any of the user's with ``ALL``. An agent reads the shared space but
  changes only what it wrote itself.
* ``clean_held_scope``: what an **erasure or an export** names: ``ALL``, or any well-formed
  slug that fits the column, also one the ``SCOPES`` or ``MAX_SCOPE_CHARS`` settings no longer
  allow, so data kept from before a setting changed can always be erased or taken away.

``Reach`` is the one place a set of scopes becomes a filter: a ``Q`` for the ORM, SQL text and
parameters for raw statements (SQLite, PostgreSQL, pgvector), a mask for a numpy matrix of rows.
A write's own scope is not a reach but part of its keys (one active session, one live topic,
duplicates: each per user and scope), matched as a column beside ``user_id``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import ValidationError

if TYPE_CHECKING:
    import numpy as np
    from django.db.models import Q


# The settings object (conf.Config, which imports this module: named here by what it is).
Settings = Any

SHARED = ""
ALL = "*"
SCOPE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]*")
# The scope columns are VARCHAR(64): MAX_SCOPE_CHARS cannot exceed it.
SCOPE_COLUMN_CHARS = 64
# An explicit list names at most this many scopes (it becomes an IN list in SQL).
MAX_LISTED_SCOPES = 20

_RULE = "must be a slug of lowercase letters, digits, '_', '-' and '.', starting with a letter or digit"


@dataclass(frozen=True)
class Reach:
    """The rows a call sees: ``scopes`` (None: every scope of the user) and ``own``, the scope
    ranked first on equal evidence (None when no scope is the reader's own). Built by the
    cleaners below, or by ``exactly`` from a clean scope."""

    scopes: tuple[str, ...] | None
    own: str | None

    @classmethod
    def exactly(cls, scope: str) -> Reach:
        """The rows of ``scope`` alone (no shared space added), or of every scope for ``ALL``:
        what a write by id, an erasure and an export of one scope act on."""
        return EVERY_SCOPE if scope == ALL else cls(scopes=(scope,), own=scope)

    def q(self, prefix: str = "") -> Q:
        """The ORM filter (empty when every scope is read); ``prefix`` reaches a related row's
        scope (``"observation__"``)."""
        # Imported here: the HTTP client reads this module's constants in a process without Django.
        from django.db.models import Q

        if self.scopes is None:
            return Q()
        if len(self.scopes) == 1:  # an exact lookup: the shared space alone, the most common read
            return Q(**{f"{prefix}scope": self.scopes[0]})
        return Q(**{f"{prefix}scope__in": self.scopes})

    def sql(self, column: str) -> tuple[str, list[str]]:
        """An ``AND column IN (...)`` clause for a raw statement, and its parameters ("" when
        every scope is read)."""
        if self.scopes is None:
            return "", []
        if len(self.scopes) == 1:
            return f" AND {column} = %s", list(self.scopes)
        return f" AND {column} IN ({', '.join(['%s'] * len(self.scopes))})", list(self.scopes)

    def own_first_sql(self, column: str) -> tuple[str, list[str]]:
        """A raw statement's sort key ranking the reader's own scope first (1, else 0), and its
        parameters; a constant ``0`` when the rows come from one scope or none is the reader's."""
        if self.own is None or (self.scopes is not None and len(self.scopes) == 1):
            return "0", []
        return f"CASE WHEN {column} = %s THEN 1 ELSE 0 END", [self.own]

    def mask(self, row_scopes: np.ndarray, present: frozenset[str]) -> np.ndarray | None:
        """Which rows of a numpy matrix are in reach, given each row's scope (a numpy array) and
        the distinct scopes among them (``present``): a boolean array, or None when every row is."""
        if self.scopes is None or present <= set(self.scopes):
            return None
        import numpy as np

        return np.isin(row_scopes, list(self.scopes))

    def is_own(self, scope: str) -> bool:
        return self.own is not None and scope == self.own

    @property
    def key(self) -> str:
        """A stable text form: ``*``, or the scopes joined by ``,``."""
        return ALL if self.scopes is None else ",".join(self.scopes)


EVERY_SCOPE = Reach(scopes=None, own=None)
SHARED_SPACE = Reach(scopes=(SHARED,), own=SHARED)


def is_slug(value: Any, *, max_chars: int = SCOPE_COLUMN_CHARS) -> bool:
    """Whether ``value`` is a scope's slug of at most ``max_chars`` (the settings' own check)."""
    return isinstance(value, str) and bool(SCOPE_PATTERN.fullmatch(value)) and len(value) <= max_chars


def _check_slug(value: Any, *, config: Settings, held: bool = False) -> str:
    """A slug within the settings' rules; ``held``: within the column only (data already stored)."""
    if not isinstance(value, str):
        raise ValidationError("scope", f"must be a string, not {type(value).__name__}.", code="invalid_type")
    if value == SHARED:
        return value
    limit = SCOPE_COLUMN_CHARS if held else config.MAX_SCOPE_CHARS
    if len(value) > limit:
        raise ValidationError.too_long("scope", limit=limit, size=len(value))
    if not SCOPE_PATTERN.fullmatch(value):
        raise ValidationError("scope", f"{_RULE} (or empty for the shared space).", code="invalid_scope")
    allowed = config.SCOPES
    if not held and allowed is not None and value not in allowed:
        raise ValidationError("scope", "is not one of the allowed scopes (the SCOPES setting).",
                              code="scope_not_allowed")
    return value


def clean_write_scope(value: Any, *, config: Settings) -> str:
    """The one scope a write lands in: a slug, or ``SHARED`` (also for None)."""
    if value is None:
        return SHARED
    if value == ALL or isinstance(value, (list, tuple)):
        raise ValidationError("scope", "a write lands in one scope; '*' and lists are for reads.",
                              code="one_scope_required")
    return _check_slug(value, config=config)


def clean_target_scope(value: Any, *, config: Settings) -> str:
    """The scope a write by id finds its row in: one scope (None: ``SHARED``), or ``ALL``."""
    if value == ALL:
        return ALL
    return clean_write_scope(value, config=config)


def clean_held_scope(value: Any, *, config: Settings) -> str:
    """The data an erasure or an export names: ``ALL`` (also None: the whole user), or one
    scope of data already held, whatever the settings now allow."""
    if value is None or value == ALL:
        return ALL
    if isinstance(value, (list, tuple)):
        return clean_write_scope(value, config=config)  # refused: one scope or every one
    return _check_slug(value, config=config, held=True)


def clean_read_reach(value: Any, *, config: Settings) -> Reach:
    """What a read of ``value`` sees: a scope and the shared space (None: the shared space);
    ``ALL``: every scope; a list: exactly those. A Reach is clean already and passes as it is."""
    if isinstance(value, Reach):
        return value
    if value is None:
        value = SHARED
    if value == ALL:
        return EVERY_SCOPE
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValidationError("scope", "must name at least one scope.", code="empty")
        if len(value) > MAX_LISTED_SCOPES:
            raise ValidationError("scope", f"names {len(value)} scopes; the limit is {MAX_LISTED_SCOPES}.",
                                  code="too_many_scopes", limit=MAX_LISTED_SCOPES, size=len(value))
        scopes = tuple(dict.fromkeys(_check_slug(item, config=config) for item in value))
        return Reach(scopes=scopes, own=scopes[0] if len(scopes) == 1 else None)
    scope = _check_slug(value, config=config)
    return SHARED_SPACE if scope == SHARED else Reach(scopes=(scope, SHARED), own=scope)
