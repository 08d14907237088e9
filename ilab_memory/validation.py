"""Shape and limit checks for everything a caller can send. Pure Python, no database.

Messages name the field, the rule, the limit and the size, never the value: a value may hold
a private block that must not reach a log line or an error body.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
import uuid
import zoneinfo
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from .exceptions import ValidationError

# The settings object (conf.Config, which imports this module: named here by what it is).
Settings = Any

TYPE_PATTERN = re.compile(r"[a-z0-9_-]{1,40}")
_WHITESPACE = re.compile(r"\s+")


def check_text(field: str, value: Any, *, allow_blank: bool = False) -> str:
    """A str the databases can store: no NUL, no lone surrogates; blank only if allowed."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}.", code="invalid_type")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters.", code="null_character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "is not valid Unicode text.", code="invalid_unicode") from None
    if not allow_blank and not value.strip():
        raise ValidationError(field, "must not be blank.", code="blank")
    return value


def check_length(field: str, value: str, limit: int) -> str:
    if len(value) > limit:
        raise ValidationError.too_long(field, limit=limit, size=len(value))
    return value


def clean_user_id(value: Any, *, limit: int) -> str:
    """Strip and check a user_id: 1..limit characters, no control characters."""
    value = check_text("user_id", value).strip()
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValidationError("user_id", "must not contain control characters.", code="control_character")
    return check_length("user_id", value, limit)


@dataclass(frozen=True)
class Count:
    """A count argument of a read (how many rows), with its bounds. Defined once, below: the
    services and the facade check it, the API's and MCP's schemas show its bounds, and every
    face refuses a value out of bounds in the same words."""

    field: str
    minimum: int
    maximum: int | str  # a number, or the name of the setting that holds it

    def bounds(self, config: Settings | None = None) -> tuple[int, int]:
        """The lowest and highest value; ``config`` is needed only when a setting holds the maximum."""
        if isinstance(self.maximum, int):
            return self.minimum, self.maximum
        if config is None:
            raise TypeError(f"the maximum of {self.field} is the setting {self.maximum}: pass the config.")
        maximum: int = getattr(config, self.maximum)
        return self.minimum, maximum

    def clean(self, value: Any, config: Settings) -> int:
        """``value`` if it is an integer within the bounds; else ValidationError naming the field and limit."""
        low, high = self.bounds(config)
        message = f"must be an integer from {low} to {high}."
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValidationError(self.field, message, code="invalid_type")
        if not low <= value <= high:
            code, limit = ("min_value", low) if value < low else ("max_value", high)
            raise ValidationError(self.field, message, code=code, limit=limit)
        return value


SEARCH_LIMIT = Count("limit", 1, "SEARCH_MAX_LIMIT")
CONTEXT_LIMIT = Count("limit", 1, 100)
TIMELINE_BEFORE = Count("before", 0, 50)
TIMELINE_AFTER = Count("after", 0, 50)
SESSIONS_LIMIT = Count("limit", 1, 100)
OBSERVATIONS_LIMIT = Count("limit", 1, 100)

MIN_SCORE_MINIMUM = 0


def clean_min_score(value: Any) -> float | None:
    """None, or a finite number at least 0 (a search's ``min_score``: results scoring below it
    are left out); else ValidationError naming ``min_score`` and the limit."""
    if value is None:
        return None
    message = f"must be a number of at least {MIN_SCORE_MINIMUM}."
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValidationError("min_score", message, code="invalid_type")
    if value < MIN_SCORE_MINIMUM:
        raise ValidationError("min_score", message, code="min_value", limit=MIN_SCORE_MINIMUM)
    return float(value)


# -- what a caller gives a memory: declared once, every face derives its fields from here ------

# How a moment is written, as ``clean_moment`` reads it.
MOMENT = ("An ISO 8601 date-time with a UTC offset (2026-03-01T09:30:00+01:00, 2026-03-01T08:30:00Z) or a "
          "date (2026-03-01: its midnight, UTC); a date-time without an offset is refused.")
NO_DEFAULT: Any = object()  # a save without the field leaves it to the service


@dataclass(frozen=True)
class MemoryField:
    """One field a caller gives a memory, as every face takes it: the API's save and update bodies,
    the MCP tools' input schemas, the keywords of the facade and the clients (``UPDATABLE_FIELDS``).
    The rule that judges its value is the service's (``services.observations.clean_fields``); this
    is its shape, its bound and the words both faces show."""

    name: str
    kind: str  # "text", "slug", "object", "moment" (MOMENT) or "seconds"
    limit: str | None = None  # the setting that bounds its length
    required: bool = False  # on a save; an update takes any field it names
    default: Any = NO_DEFAULT  # on a save without it
    null_on_save: bool = True  # null sent on a save means its default
    null_on_update: bool = True  # null sent on an update clears it (what that means is in the words)
    on_save: str | None = None  # what it is, on a save
    on_update: str | None = None  # what changing it does

    def words(self, *, update: bool) -> str | None:
        text = self.on_update if update else self.on_save
        if text is not None and self.kind == "moment":
            return f"{text} {MOMENT}"
        return text

    def nullable(self, *, update: bool) -> bool:
        return self.null_on_update if update else self.null_on_save


_TTL = "Seconds from now until it expires (1 to a century); not with expires_at."
_EXPIRES = "When it expires, in the future; from then on no read sees it. Not with ttl."

MEMORY_FIELDS = (
    MemoryField("title", "text", limit="MAX_TITLE_CHARS", required=True, null_on_save=False, null_on_update=False),
    MemoryField("content", "text", limit="MAX_CONTENT_CHARS", required=True, null_on_save=False,
                null_on_update=False),
    MemoryField("type", "slug", default="manual", null_on_save=False, null_on_update=False),
    MemoryField("topic_key", "text", limit="MAX_TOPIC_KEY_CHARS", default=None),
    MemoryField("metadata", "object", default=None),
    MemoryField("happened_at", "moment", null_on_update=False,
                on_save="When what it says happened (null or absent: now).",
                on_update="When what it says happened; the old value goes to the history."),
    MemoryField("expires_at", "moment",
                on_save=f"{_EXPIRES} Null or absent: never (or when its type's RETENTION ends it).",
                on_update=f"{_EXPIRES} Null: never (its type's RETENTION may still end it)."),
    MemoryField("ttl", "seconds", null_on_update=False, on_save=_TTL, on_update=_TTL),
)

# What an update may name: the facade and the client refuse any other keyword in the same words.
UPDATABLE_FIELDS = tuple(field.name for field in MEMORY_FIELDS)


def check_updatable(fields: Iterable[str]) -> None:
    """Refuse an update naming a field it cannot change (ValidationError naming the first such field)."""
    unknown = set(fields) - set(UPDATABLE_FIELDS)
    if unknown:
        raise ValidationError(min(unknown), "is not a field that can be updated.", code="unknown_field")


def clean_type(value: Any, *, allowed: Collection[str] | None) -> str:
    if not isinstance(value, str) or not TYPE_PATTERN.fullmatch(value):
        raise ValidationError("type", "must be a slug of 1-40 characters from [a-z0-9_-].", code="invalid_type_slug")
    if allowed is not None and value not in allowed:
        raise ValidationError("type", "is not one of the allowed observation types.", code="type_not_allowed")
    return value


def clean_choice(field: str, value: Any, *, allowed: Collection[str]) -> str:
    """One of ``allowed`` (exact strings); anything else, NUL and surrogates included, is refused."""
    if not isinstance(value, str) or value not in allowed:
        choices = " or ".join(repr(choice) for choice in allowed)
        raise ValidationError(field, f"must be {choices}.", code="invalid_choice")
    return value


def normalize_topic_key(value: str) -> str | None:
    """Trimmed, lowercased, whitespace runs turned into ``-``; blank becomes None."""
    normalized = _WHITESPACE.sub("-", value.strip().lower())
    return normalized or None


def normalize_content(value: str) -> str:
    """The form two contents are compared in for dedupe: lowercased, whitespace collapsed."""
    return _WHITESPACE.sub(" ", value.lower()).strip()


def check_metadata_shape(value: Any, *, max_depth: int) -> dict[str, Any]:
    """A JSON object of JSON values, nested at most ``max_depth`` levels."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError("metadata", "must be a JSON object.", code="invalid_type")
    _walk_json(value, depth=1, max_depth=max_depth)
    return value


def _walk_json(value: Any, *, depth: int, max_depth: int) -> None:
    # Iterative depth check first would be nicer, but max_depth is small (default 20), so the
    # recursion is bounded by the check itself.
    if depth > max_depth:
        raise ValidationError(
            "metadata", f"is nested deeper than {max_depth} levels.", code="too_deep", limit=max_depth
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError("metadata", "keys must be strings.", code="invalid_key")
            check_text("metadata", key, allow_blank=True)
            _walk_json(item, depth=depth + 1, max_depth=max_depth)
    elif isinstance(value, list):
        for item in value:
            _walk_json(item, depth=depth + 1, max_depth=max_depth)
    elif isinstance(value, str):
        check_text("metadata", value, allow_blank=True)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError("metadata", "numbers must be finite.", code="invalid_number")
    elif isinstance(value, int) and not isinstance(value, bool):
        # JSON has no integer limit, the databases do (and json.dumps refuses > 4300 digits).
        if not -(2**63) <= value < 2**63:
            raise ValidationError("metadata", "integers must fit in 64 bits.", code="invalid_number")
    elif value is None or isinstance(value, bool):
        pass
    else:
        raise ValidationError("metadata", f"holds a {type(value).__name__}, which is not JSON.", code="invalid_type")


def check_metadata_size(value: dict[str, Any], *, limit: int) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > limit:
        raise ValidationError.too_long("metadata", limit=limit, size=size, unit="bytes")
    return value


def parse_uuid(value: object, error: type[LookupError]) -> uuid.UUID:
    """A UUID from a string or UUID; anything else is "not found" (``error``), never a crash."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise error(f"No such {error.__name__.removesuffix('NotFound').lower()}.") from None


# -- moments -------------------------------------------------------------------------------

# A ttl longer than this is a mistake (or an overflow waiting to happen), not a retention.
MAX_TTL_SECONDS = 100 * 366 * 86400


def clean_moment(field: str, value: Any) -> datetime | None:
    """A point in time: an aware ``datetime``, a ``date`` (its midnight, UTC), or ISO 8601 text
    of either (``2026-03-01``, ``2026-03-01T09:30:00+01:00``, ``…Z``). None passes as None. A
    time without a UTC offset is refused: read in some zone, it would be off by hours."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:  # the standard library's ISO 8601 reader (3.11: "Z", offsets, fractions)
            value = date.fromisoformat(text) if len(text) <= 10 else datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(field, "must be an ISO 8601 date or date-time with a UTC offset "
                                  "(2026-03-01 or 2026-03-01T09:30:00Z).", code="invalid_datetime") from None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError(field, "must carry a UTC offset (…Z or …+01:00).", code="naive_datetime")
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+01:00 is in the year 0 in UTC
            raise ValidationError(field, "is out of the range of date-times (years 1 to 9999 in UTC).",
                                  code="out_of_range") from None
    if isinstance(value, date):
        return datetime.combine(value, time(0), tzinfo=UTC)
    raise ValidationError(field, f"must be a date-time, not {type(value).__name__}.", code="invalid_type")


def clean_ttl(value: Any) -> timedelta | None:
    """A time to live: a ``timedelta`` or a number of seconds, from one second to a century.
    None passes as None."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        seconds = float(value)
    else:
        raise ValidationError("ttl", f"must be a number of seconds, not {type(value).__name__}.", code="invalid_type")
    if not 1 <= seconds <= MAX_TTL_SECONDS:  # a second at least: the API counts whole seconds
        code, limit = ("min_value", 1) if seconds < 1 else ("max_value", MAX_TTL_SECONDS)
        raise ValidationError("ttl", f"must be from 1 to {MAX_TTL_SECONDS} seconds.", code=code, limit=limit)
    return timedelta(seconds=seconds)


# The longest IANA name is 32 characters ("America/Argentina/ComodRivadavia").
MAX_TIME_ZONE_CHARS = 64


def clean_time_zone(value: Any) -> tzinfo:
    """A time zone: an IANA name (``Europe/Madrid``) or a ``tzinfo``; None: Django's current
    time zone (the site's ``TIME_ZONE`` unless a middleware activated the user's)."""
    if value is None:
        from django.utils import timezone

        return timezone.get_current_timezone()
    if isinstance(value, tzinfo):
        return value
    if not isinstance(value, str):
        raise ValidationError("time_zone", f"must be an IANA time zone name, not {type(value).__name__}.",
                              code="invalid_type")
    if len(value) > MAX_TIME_ZONE_CHARS:
        raise ValidationError.too_long("time_zone", limit=MAX_TIME_ZONE_CHARS, size=len(value))
    try:
        return zoneinfo.ZoneInfo(value.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError("time_zone", "must be an IANA time zone name (Europe/Madrid, UTC).",
                              code="invalid_time_zone") from None
