"""A user's data as an export document (``document``), read a chunk at a time so memory stays flat."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from ..conf import Config, get_config
from ..models import Observation, ObservationRevision, Session
from ..scopes import ALL, Reach, clean_held_scope, clean_read_reach
from ..types import iso
from ..validation import clean_user_id
from ..visibility import expired_q
from .document import (
    CHUNK,
    DOCUMENT_FIELDS,
    FORMAT,
    OBSERVATION_FIELDS,
    REVISION_FIELDS,
    SESSION_FIELDS,
    VERSION,
)

SPOOL_BYTES = 1 << 20  # revisions waiting for their section stay in memory up to this, then go to disk


def export_reach(scope: Any, *, config: Config) -> Reach:
    """What an export reads: ``ALL`` (also None, the default) every scope; a scope exactly that
    one, without the shared space a read adds to it (an export of a scope imports back into
    that scope alone, also one the settings no longer allow: the data is held); a list exactly
    those. Raises ValidationError("scope", ...) for a bad one."""
    if isinstance(scope, (list, tuple)):
        return clean_read_reach(scope, config=config)
    return Reach.exactly(clean_held_scope(scope, config=config))


def _session_rows(user_id: str, reach: Reach, *, using: str) -> Iterator[dict]:
    rows = (
        Session.objects.using(using).for_user(user_id).filter(reach.q()).order_by("started_at", "id")
        .values(*SESSION_FIELDS).iterator(chunk_size=CHUNK)
    )
    for row in rows:
        yield {
            **row,
            "id": str(row["id"]),
            "started_at": iso(row["started_at"]),
            "last_activity_at": iso(row["last_activity_at"]),
            "ended_at": iso(row["ended_at"]),
        }


# An observation's times, as ISO 8601 text.
TIMESTAMPS = ("created_at", "updated_at", "happened_at", "last_seen_at", "deleted_at", "expires_at")


def _observation_rows(user_id: str, reach: Reach, *, config: Config, using: str, history: _History) -> Iterator[dict]:
    # Soft-deleted rows are the user's data and go too; expired ones are gone to every read.
    rows = (
        Observation.objects.using(using).for_user(user_id).filter(reach.q()).exclude(expired_q(config))
        .order_by("created_at", "id")
        .values(*OBSERVATION_FIELDS).iterator(chunk_size=CHUNK)
    )
    chunk = []
    for row in rows:
        chunk.append(row["id"])
        yield {
            **row,
            "id": str(row["id"]),
            "session_id": str(row["session_id"]),
            **{name: iso(row[name]) for name in TIMESTAMPS},
        }
        if len(chunk) == CHUNK:
            history.add(chunk)
            chunk = []
    history.add(chunk)


class _History:
    """The revisions of the observations exported so far, read a chunk of observations at a time.

    Read right after the observations they belong to, they can only name observations of the
    document (one created and revised while the export runs is left out with its history). They
    wait for their section as JSON lines in a spooled file: in memory up to ``SPOOL_BYTES``, on
    disk beyond, so the export's memory stays flat however long the history is.
    """

    def __init__(self, user_id: str, *, using: str):
        self.user_id, self.using = user_id, using
        # Open across the export's generators: ``rows`` closes it once its section is read.
        self.file = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=SPOOL_BYTES, mode="w+", encoding="utf-8"
        )

    def add(self, observation_ids: list) -> None:
        if not observation_ids:
            return
        fields = tuple("session_id_at_write" if f == "session_id" else f for f in REVISION_FIELDS)
        rows = (
            ObservationRevision.objects.using(self.using)
            .filter(user_id=self.user_id, observation_id__in=observation_ids)
            .order_by("observation_id", "revision").values(*fields)
        )
        for row in rows:
            session_id = row.pop("session_id_at_write")
            revision = {
                **row,
                "observation_id": str(row["observation_id"]),
                "session_id": str(session_id) if session_id else None,
                "happened_at": iso(row["happened_at"]),
                "written_at": iso(row["written_at"]),
                "replaced_at": iso(row["replaced_at"]),
            }
            self.file.write(json.dumps(revision, ensure_ascii=False) + "\n")

    def rows(self) -> Iterator[dict]:
        with self.file:
            self.file.seek(0)
            for line in self.file:
                yield json.loads(line)


def user_export_sections(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default"
):
    """The document's header and three lazy row streams of what ``scope`` reaches
    (``export_reach``), read chunk by chunk.

    Observations are read first, each chunk's revisions right after it, and sessions after the
    observations: nothing can point at a session that is missing (sessions are only removed by
    ``user_forget``, and an observation stays in its session's scope), so the document is
    self-consistent without holding a long transaction open against writers.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    reach = export_reach(scope, config=config)
    header = {"format": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": iso(timezone.now())}
    history = _History(user_id, using=using)
    return header, [
        ("observations", _observation_rows(user_id, reach, config=config, using=using, history=history)),
        ("sessions", _session_rows(user_id, reach, using=using)),
        ("revisions", history.rows()),
    ]


def user_export(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default"
) -> dict:
    """Everything ``user_id`` has in ``scope`` (default: every scope), as a versioned JSON-ready
    dict. Raises ValidationError for a bad user_id or scope."""
    header, sections = user_export_sections(user_id=user_id, scope=scope, config=config, using=using)
    document = dict(header)
    for name, rows in sections:
        document[name] = list(rows)
    return {name: document[name] for name in DOCUMENT_FIELDS}


def user_export_json(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default", progress=None
) -> Iterator[str]:
    """The export as JSON text in pieces, one row at a time: for files and streaming responses.

    ``progress``, if given, is called with 1 for each row written. A bad user_id or scope
    raises ValidationError when the first piece is asked for.
    """
    header, sections = user_export_sections(user_id=user_id, scope=scope, config=config, using=using)
    yield json.dumps(header, ensure_ascii=False)[:-1]
    for name, rows in sections:
        yield f', "{name}": ['
        for index, row in enumerate(rows):
            yield ("" if index == 0 else ", ") + json.dumps(row, ensure_ascii=False)
            if progress is not None:
                progress(1)
        yield "]"
    yield "}\n"
