"""The app's own exceptions. No Django import: the facade raises them before Django is set up."""

from __future__ import annotations


class IlabMemoryError(Exception):
    """Base class of every error ilab_memory raises on purpose."""

    code = "ilab_memory_error"


class ConfigurationError(IlabMemoryError):
    """The embedded bootstrap or the settings cannot work as given."""

    code = "configuration_error"


class ValidationError(IlabMemoryError, ValueError):
    """Bad input. Names the field, the limit and the size; never echoes the raw value.

    The value may hold a private block, so messages are built from lengths and rules only.
    ``errors`` holds every field's messages: this field's alone, unless the HTTP API named
    several (``ilab_memory.client``).
    """

    code = "invalid"

    def __init__(self, field: str, message: str, *, code: str = "invalid", limit=None, size=None):
        self.field = field
        self.limit = limit
        self.size = size
        self.code = code
        self.message = message
        self.errors: dict[str, list[str]] = {field: [message]}
        super().__init__(f"{field}: {message}")

    def spelled(self, names: dict[str, str]) -> ValidationError:
        """This error with its field named as a face's caller spells it (``{"query": "q"}``
        on the API's search); itself when ``names`` does not rename its field."""
        if self.field not in names:
            return self
        renamed = type(self)(names[self.field], self.message, code=self.code, limit=self.limit, size=self.size)
        renamed.errors = {names.get(field, field): messages for field, messages in self.errors.items()}
        return renamed

    @classmethod
    def too_long(cls, field: str, *, limit: int, size: int, unit: str = "characters"):
        return cls(
            field,
            f"is {size} {unit} long; the limit is {limit} {unit}.",
            code="max_length",
            limit=limit,
            size=size,
        )


class Conflict(IlabMemoryError):
    """Concurrent writers of the same rows won every retry of this write; nothing was written.
    Rare (the write is retried first); the caller may try again."""

    code = "conflict"


class NoActiveSession(IlabMemoryError, LookupError):
    """The user has no active session to end."""

    code = "no_active_session"


class ObservationNotFound(IlabMemoryError, LookupError):
    """No live observation with that id belongs to that user."""

    code = "observation_not_found"


class SessionNotFound(IlabMemoryError, LookupError):
    """No session with that id belongs to that user."""

    code = "session_not_found"
