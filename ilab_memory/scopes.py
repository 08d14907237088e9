"""Scopes: the parts of one user's memory that several agents keep apart (SPEC §14).

A scope is a short slug below the user (an agent's or a project's name). The empty scope,
``SHARED``, is the user's shared space and every call's default, so a call that names no scope
means what it meant before scopes existed.

* A **write** lands in exactly one scope (``clean_scope``).
* A **read** in a scope sees that scope and the shared space, the scope's own first on equal
  evidence; ``ALL`` (``"*"``) or an explicit list reads exactly those scopes (``clean_reach``).
* A write **by id** (update, delete, restore) finds the row in its own scope only, or in any of
  the user's scopes with ``ALL`` (``clean_target``): an agent reads the shared space but
  changes only what it wrote itself.
* **Erasure and export** name data already held (``clean_held``): ``ALL`` or any well-formed
  slug that fits the column, also one the ``SCOPES`` or ``MAX_SCOPE_CHARS`` settings no longer
  allow, so data kept from before a setting changed can always be erased or taken away.

Pure Python, no database; the filters are built by ``Reach.filter`` and ``Reach.sql``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .exceptions import ValidationError

SHARED = ""
ALL = "*"
SCOPE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]*")
# The scope columns are VARCHAR(64): MAX_SCOPE_CHARS cannot exceed it.
SCOPE_COLUMN_CHARS = 64
# An explicit list names at most this many scopes (it becomes an IN list in SQL).
MAX_LISTED_SCOPES = 20

_RULE = "must be a slug of lowercase letters, digits, '_', '-' and '.', starting with a letter or digit"


def _check_slug(value: Any, *, config, held: bool = False) -> str:
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


def clean_scope(value: Any, *, config) -> str:
    """The one scope a write lands in: a slug, or ``SHARED``. ``ALL`` and lists are reads only."""
    if value is None:
        return SHARED
    if value == ALL or isinstance(value, (list, tuple)):
        raise ValidationError("scope", "a write lands in one scope; '*' and lists are for reads.",
                              code="one_scope_required")
    return _check_slug(value, config=config)


def clean_target(value: Any, *, config) -> str:
    """The scope a write by id looks in: one scope, or ``ALL`` (any of the user's)."""
    if value == ALL:
        return ALL
    return clean_scope(value, config=config)


def clean_held(value: Any, *, config) -> str:
    """The scope of data already held that an erasure or an export names: ``ALL`` (the whole
    user), or one scope, whatever the settings now allow."""
    if value is None or value == ALL:
        return ALL
    if isinstance(value, (list, tuple)):
        return clean_scope(value, config=config)  # refused: one scope or every one
    return _check_slug(value, config=config, held=True)


@dataclass(frozen=True)
class Reach:
    """What a read sees: ``scopes`` (None: every scope of the user) and ``own``, the scope ranked
    first on equal evidence (None when no scope is the reader's own)."""

    scopes: tuple[str, ...] | None
    own: str | None

    def filter(self, prefix: str = "") -> dict:
        """Keyword arguments for ``QuerySet.filter`` (empty when every scope is read)."""
        if self.scopes is None:
            return {}
        if len(self.scopes) == 1:  # an exact lookup: the shared space alone, the most common read
            return {f"{prefix}scope": self.scopes[0]}
        return {f"{prefix}scope__in": self.scopes}

    def sql(self, column: str) -> tuple[str, list]:
        """An ``AND column IN (...)`` clause and its parameters ("" when every scope is read)."""
        if self.scopes is None:
            return "", []
        if len(self.scopes) == 1:
            return f" AND {column} = %s", list(self.scopes)
        return f" AND {column} IN ({', '.join(['%s'] * len(self.scopes))})", list(self.scopes)

    def is_own(self, scope: str) -> bool:
        return self.own is not None and scope == self.own

    @property
    def key(self) -> str:
        """A stable text form: ``*``, or the scopes joined by ``,``."""
        return ALL if self.scopes is None else ",".join(self.scopes)


EVERY_SCOPE = Reach(scopes=None, own=None)
SHARED_SPACE = Reach(scopes=(SHARED,), own=SHARED)


def clean_reach(value: Any, *, config) -> Reach:
    """What a read of ``value`` sees: a scope and the shared space; ``ALL``; or exactly a list."""
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
    return read_of(_check_slug(value, config=config))


def read_of(scope: str) -> Reach:
    """What a read in ``scope``, already clean (a write's), sees: it and the shared space."""
    return SHARED_SPACE if scope == SHARED else Reach(scopes=(scope, SHARED), own=scope)
