"""Session lifecycle: start or reuse, implicit creation, auto-close, summary, end, sweep."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from django.db import connections
from django.utils import timezone

from .. import records, selectors
from ..conf import Config, get_config
from ..exceptions import NoActiveSession
from ..models import Session, SessionStatus
from ..types import SessionRecord, SessionStartResponse
from ..validation import check_length, check_text, clean_user_id
from .privacy import redact
from .statements import SUMMARY_MORE, SUMMARY_NONE, Statements
from .transactions import RaceLost, atomic_with_retry


def _locked_active_session(user_id: str, *, using: str) -> Session | None:
    # FOR UPDATE serializes a user's writers on PostgreSQL; on SQLite the IMMEDIATE
    # transaction already holds the write lock and Django omits the clause.
    _lock_user(user_id, using=using)
    return Statements(using).active_session(user_id, for_update=True)


def _lock_user(user_id: str, *, using: str) -> None:
    """On PostgreSQL, take a per-user lock until the transaction ends.

    FOR UPDATE cannot lock a row that does not exist: when the user has no active session
    (or a concurrent end just closed it) every writer would insert one, all but one would hit
    the one-active-session constraint, and under steady churn a writer could lose every retry.
    The advisory lock queues a user's writers instead; other users are not affected.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"ilab_memory.session:{user_id}".encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)])


def _is_expired(session: Session, *, now: datetime, config: Config) -> bool:
    return session.last_activity_at < now - timedelta(hours=config.SESSION_TIMEOUT_HOURS)


def build_auto_summary(session: Session, *, config: Config, using: str) -> str:
    """``<prefix> [type] title, …`` over the session's live observations in creation order.

    PostgreSQL's one-statement start writes the same text in SQL (``statements.close_expired_sql``).
    """
    limit = config.AUTO_SUMMARY_MAX_ITEMS
    statements = Statements(using)
    items = statements.summary_items(session.pk, limit + 1)
    prefix = config.AUTO_SUMMARY_PREFIX
    if not items:
        return f"{prefix} {SUMMARY_NONE}"
    listed = ", ".join(f"[{type_}] {title}" for type_, title in items[:limit])
    if len(items) > limit:
        more_open, more_close = SUMMARY_MORE
        listed += f"{more_open}{statements.live_in_session(session.pk) - limit}{more_close}"
    return f"{prefix} {listed}"


def _has_narrative_summary(session: Session) -> bool:
    return bool(session.summary) and not session.is_auto_generated


def auto_close(session: Session, *, config: Config, using: str) -> None:
    """Close an expired session at the moment it expired; keep a narrative summary if any."""
    session.status = SessionStatus.COMPLETED
    session.ended_at = session.last_activity_at + timedelta(hours=config.SESSION_TIMEOUT_HOURS)
    if not _has_narrative_summary(session):
        session.summary = build_auto_summary(session, config=config, using=using)
        session.is_auto_generated = True
        session.redacted_blocks = 0
    Statements(using).close_session(session)


def resolve_active_session(
    user_id: str, *, now: datetime, config: Config, using: str
) -> tuple[Session, bool]:
    """The user's live active session, locked: reused, or opened after auto-closing an expired one.

    Must run inside a transaction. Returns (session, is_new). Does not bump last_activity_at.
    """
    session = _locked_active_session(user_id, using=using)
    if session is not None and _is_expired(session, now=now, config=config):
        auto_close(session, config=config, using=using)
        session = None
    if session is not None:
        return session, False
    return Statements(using).insert_session(user_id, now=now), True


def touch(session: Session, *, now: datetime, using: str) -> None:
    """Advance last_activity_at (a write or a start inside the window keeps the session alive)."""
    if session.last_activity_at != now:
        session.last_activity_at = now
        Session.objects.using(using).filter(pk=session.pk).update(last_activity_at=now)


def claim_active_session(statements: Statements, user_id: str, *, now: datetime, config: Config, using: str):
    """The user's active session, alive until ``now``: (its id as a query parameter, is_new).

    Must run inside a transaction. The common case, a live session, is one statement that finds
    it and bumps it (SPEC §3 steps 2 and 6 at once: same result in the same transaction). A
    user without an active session gets one from a second statement. An expired session, or a
    concurrent writer's new one, goes through ``resolve_active_session``.
    """
    live_since = now - timedelta(hours=config.SESSION_TIMEOUT_HOURS)
    session_id = statements.bump_live_session(user_id, now=now, live_since=live_since)
    if session_id is not None:
        return session_id, False
    session_id = statements.open_if_none_active(user_id, now=now)
    if session_id is not None:
        return session_id, True
    session, is_new = resolve_active_session(user_id, now=now, config=config, using=using)
    if not is_new:  # opened by a concurrent writer after the bump looked
        touch(session, now=now, using=using)
    return statements.values.uuid_param(session.pk), is_new


def session_start(*, user_id: str, config: Config | None = None, using: str = "default") -> SessionStartResponse:
    """Reuse the user's live session or open one (auto-closing an expired one); return context."""
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    statements = Statements(using)
    if statements.starts_in_one_statement:
        return _start_in_one_statement(statements, user_id, config=config, using=using)

    def run():
        now = timezone.now()
        session_id, is_new = claim_active_session(statements, user_id, now=now, config=config, using=using)
        return SessionStartResponse(
            session_id=statements.values.uuid_text(session_id),
            is_new=is_new,
            sessions_context=selectors.session_summaries(
                statements.recent_sessions(user_id, config.CONTEXT_SESSIONS), statements.values
            ),
            memories=selectors.context_memories(
                user_id=user_id, limit=config.CONTEXT_MEMORIES, config=config, using=using, now=now,
                statements=statements,
            ),
        )

    return atomic_with_retry(run, using=using)


def _start_in_one_statement(statements: Statements, user_id: str, *, config: Config, using: str):
    """PostgreSQL: one statement bumps, auto-closes and opens, or opens, and reads the context.

    One round trip, one transaction. It claims nothing only when a concurrent writer changed
    the user's active session after its snapshot (opened one first, or ended it); then it runs
    again under the user's lock, which keeps the other writers that end or replace a session
    out (without it, 8 agents of one user ending and starting at random made a start lose all
    its retries: tests/reliability/test_concurrency.py).
    """

    def claim() -> SessionStartResponse | None:
        now = timezone.now()
        claimed = statements.claim_start(
            user_id, now=now, timeout=timedelta(hours=config.SESSION_TIMEOUT_HOURS),
            sessions=config.CONTEXT_SESSIONS, type_weights=config.TYPE_WEIGHTS,
            head_chars=config.PREVIEW_CHARS + 1, candidates=config.CONTEXT_CANDIDATES,
            limit=config.CONTEXT_MEMORIES, summary_prefix=config.AUTO_SUMMARY_PREFIX,
            summary_items=config.AUTO_SUMMARY_MAX_ITEMS,
        )
        if claimed is None:
            return None
        session_id, is_new, recent, ranked = claimed
        return SessionStartResponse(
            session_id=statements.values.uuid_text(session_id),
            is_new=is_new,
            sessions_context=selectors.session_summaries(recent, statements.values),
            memories=selectors.ranked_memories(ranked, statements.values, now=now, config=config),
        )

    def claim_again() -> SessionStartResponse:
        _lock_user(user_id, using=using)
        response = claim()
        if response is None:
            raise RaceLost("a concurrent writer changed the active session again")
        return response

    return claim() or atomic_with_retry(claim_again, using=using)


def clean_summary(summary, *, config: Config, allow_blank: bool) -> tuple[str | None, int]:
    """Redacted summary text and its block count; None when blank is allowed and given."""
    if summary is None and allow_blank:
        return None, 0
    check_text("summary", summary, allow_blank=allow_blank)
    if not summary.strip():
        return None, 0
    redacted = redact(summary)
    # Blank is judged on what would be stored: "</private>" alone redacts to "".
    check_text("summary", redacted.text, allow_blank=allow_blank)
    if not redacted.text.strip():
        return None, 0
    check_length("summary", redacted.text, config.MAX_SUMMARY_CHARS)
    return redacted.text, redacted.blocks


def session_summary(
    *, user_id: str, summary: str, config: Config | None = None, using: str = "default"
) -> SessionRecord:
    """Store a narrative summary on the active session without closing it (a write)."""
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    text, blocks = clean_summary(summary, config=config, allow_blank=False)

    def run():
        now = timezone.now()
        session, _ = resolve_active_session(user_id, now=now, config=config, using=using)
        session.summary = text
        session.is_auto_generated = False
        session.redacted_blocks += blocks  # cumulative, like observations: the count never goes down
        session.last_activity_at = now
        session.save(using=using, update_fields=["summary", "is_auto_generated", "redacted_blocks", "last_activity_at"])
        return records.session_record(session, selectors.session_observation_count(session.pk, using=using))

    return atomic_with_retry(run, using=using)


def session_end(
    *, user_id: str, summary: str | None = None, config: Config | None = None, using: str = "default"
) -> SessionRecord:
    """Close the active session now. Summary: the argument, else the stored narrative, else synthetic.

    Raises NoActiveSession when the user has none.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    text, blocks = clean_summary(summary, config=config, allow_blank=True)

    def run():
        session = _locked_active_session(user_id, using=using)
        if session is None:
            raise NoActiveSession("This user has no active session.")
        session.status = SessionStatus.COMPLETED
        session.ended_at = timezone.now()
        if text is not None:
            session.summary, session.is_auto_generated = text, False
            session.redacted_blocks += blocks
        elif not _has_narrative_summary(session):
            session.summary = build_auto_summary(session, config=config, using=using)
            session.is_auto_generated, session.redacted_blocks = True, 0
        session.save(using=using, update_fields=["status", "ended_at", "summary", "is_auto_generated", "redacted_blocks"])
        return records.session_record(session, selectors.session_observation_count(session.pk, using=using))

    return atomic_with_retry(run, using=using)


def sessions_close_expired(
    *, config: Config | None = None, using: str = "default", batch_size: int = 500
) -> list[str]:
    """Auto-close every expired active session; returns their ids. Running it twice is a no-op."""
    config = config or get_config()
    now = timezone.now()
    closed: list[str] = []
    while True:
        candidate_ids = list(
            Session.objects.using(using)
            .expired(now, config.SESSION_TIMEOUT_HOURS)
            .order_by("last_activity_at", "id")
            .values_list("id", flat=True)[:batch_size]
        )
        if not candidate_ids:
            return closed
        for session_id in candidate_ids:
            if _close_if_still_expired(session_id, now=now, config=config, using=using):
                closed.append(str(session_id))


def _close_if_still_expired(session_id, *, now: datetime, config: Config, using: str) -> bool:
    def run():
        # Re-read under the lock: a start or a write may have revived or closed it meanwhile.
        session = (
            Session.objects.using(using).select_for_update().active().filter(pk=session_id).first()
        )
        if session is None or not _is_expired(session, now=now, config=config):
            return False
        auto_close(session, config=config, using=using)
        return True

    return atomic_with_retry(run, using=using)

