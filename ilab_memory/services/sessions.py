"""Session lifecycle: start or reuse, implicit creation, auto-close, summary, end, sweep."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext

from .. import metrics, selectors, sql
from ..conf import Config, get_config
from ..exceptions import NoActiveSession
from ..models import Observation, Session, SessionStatus, first_or_none
from ..scopes import SHARED, clean_read_reach, clean_write_scope
from ..signals import send_on_commit, session_closed, session_started
from ..types import SessionRecord, SessionStartResponse, session_record
from ..validation import check_length, check_text, clean_user_id
from .privacy import redact
from .transactions import atomic_with_retry

SUMMARY_MORE = ", … (+{n})"
ENDED, EXPIRED = "ended", "expired"


def locked_active_session(user_id: str, scope: str = SHARED, *, using: str) -> Session | None:
    """The user's active session in ``scope``, locked (PostgreSQL; SQLite's IMMEDIATE
    transaction holds the write lock already and Django omits the clause)."""
    sql.lock_user(user_id, scope, using=using)
    active = Session.objects.using(using).select_for_update().for_user(user_id).active().filter(scope=scope)
    return first_or_none(active)


def _is_idle(session: Session, *, now: datetime, config: Config) -> bool:
    return session.last_activity_at < now - timedelta(hours=config.SESSION_TIMEOUT_HOURS)


def build_auto_summary(session: Session, *, config: Config, using: str) -> str:
    """``<prefix> [type] title, …`` over the session's live observations in creation order; the
    prefix (``AUTO_SUMMARY_PREFIX``, or "Memories:") and "(none)" in the site's ``LANGUAGE_CODE``."""
    limit = config.AUTO_SUMMARY_MAX_ITEMS
    live = Observation.objects.using(using).live().filter(session_id=session.pk)
    items = list(live.order_by("created_at", "id").values_list("type", "title")[: limit + 1])
    # In the site's language, not the request's: the summary is stored, and whoever's request
    # (or the sweep) happens to close the session must not decide the language it is kept in.
    with translation.override(settings.LANGUAGE_CODE):
        prefix = config.AUTO_SUMMARY_PREFIX
        if prefix is None:
            prefix = gettext("Memories:")
        if not items:
            return f"{prefix} {gettext('(none)')}"
    listed = ", ".join(f"[{type_}] {title}" for type_, title in items[:limit])
    if len(items) > limit:
        listed += SUMMARY_MORE.format(n=live.count() - limit)
    return f"{prefix} {listed}"


def _has_narrative_summary(session: Session) -> bool:
    return bool(session.summary) and not session.is_auto_generated


def _close(session: Session, *, ended_at: datetime, summary: str | None, blocks: int, reason: str,
           config: Config, using: str) -> None:
    """Complete ``session``. Summary: ``summary`` if given, else the stored narrative, else synthetic."""
    session.status = SessionStatus.COMPLETED
    session.ended_at = ended_at
    if summary is not None:
        session.summary, session.is_auto_generated = summary, False
        session.redacted_blocks += blocks
    elif not _has_narrative_summary(session):
        session.summary = build_auto_summary(session, config=config, using=using)
        session.is_auto_generated, session.redacted_blocks = True, 0
    session.save(using=using, update_fields=["status", "ended_at", "summary", "is_auto_generated", "redacted_blocks"])
    send_on_commit(
        session_closed, Session, using=using, user_id=session.user_id, session_id=str(session.pk),
        is_auto_generated=session.is_auto_generated, reason=reason,
    )


def auto_close(session: Session, *, config: Config, using: str) -> None:
    """Close an idle session at the moment it went idle (its last activity plus the timeout); keep a
    narrative summary if any."""
    ended_at = session.last_activity_at + timedelta(hours=config.SESSION_TIMEOUT_HOURS)
    _close(session, ended_at=ended_at, summary=None, blocks=0, reason=EXPIRED, config=config, using=using)


def _bump_live(user_id: str, scope: str, *, now: datetime, config: Config, using: str) -> uuid.UUID | None:
    live_since = now - timedelta(hours=config.SESSION_TIMEOUT_HOURS)
    return sql.bump_live_session(user_id, scope, now=now, live_since=live_since, using=using)


def claim_active_session(user_id: str, scope: str = SHARED, *, now: datetime, config: Config,
                         using: str) -> tuple[uuid.UUID, bool]:
    """The user's active session in ``scope``, alive until ``now``: (its id, is_new). Inside a
    transaction.

    The common case, a live session, is one statement that finds it and bumps it
    (finding the session and keeping it alive at once: the same result in the same transaction).
    Otherwise, under the scope's lock: an idle session is auto-closed and a new one opened; none,
    one is opened; one a concurrent writer opened meanwhile is bumped.
    """
    session_id = _bump_live(user_id, scope, now=now, config=config, using=using)
    if session_id is not None:
        return session_id, False
    return _claim_locked(user_id, scope, now=now, config=config, using=using)


def _claim_locked(user_id: str, scope: str, *, now: datetime, config: Config, using: str) -> tuple[uuid.UUID, bool]:
    """``claim_active_session`` once no live session was found: the rest under the scope's lock."""
    session = locked_active_session(user_id, scope, using=using)
    if session is not None and _is_idle(session, now=now, config=config):
        auto_close(session, config=config, using=using)
        session = None
    if session is not None:
        Session.objects.using(using).filter(pk=session.pk).update(last_activity_at=now)
        return session.pk, False
    session = Session(user_id=user_id, scope=scope, started_at=now, last_activity_at=now)
    session.save(using=using, force_insert=True)
    send_on_commit(session_started, Session, using=using, user_id=user_id, session_id=str(session.pk))
    return session.pk, True


def session_start(*, user_id: str, scope: str = "", config: Config | None = None,
                  using: str = "default") -> SessionStartResponse:
    """Reuse the user's live session in ``scope`` or open one (auto-closing an expired one);
    return the context the scope reads (its own and the shared space)."""
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_write_scope(scope, config=config)
    now = timezone.now()
    # The common case, a live session, needs no transaction: one statement finds it and keeps
    # it alive, and the reads after it are reads (on SQLite they then take no write lock).
    session_id, is_new = _bump_live(user_id, scope, now=now, config=config, using=using), False
    if session_id is None:
        session_id, is_new = atomic_with_retry(
            lambda: _claim_locked(user_id, scope, now=now, config=config, using=using), using=using
        )
    reach = clean_read_reach(scope, config=config)  # what the scope reads: it and the shared space
    return SessionStartResponse(
        session_id=str(session_id),
        is_new=is_new,
        sessions_context=selectors.recent_sessions(
            user_id=user_id, reach=reach, limit=config.CONTEXT_SESSIONS, config=config, using=using
        ),
        memories=selectors.context_memories(
            user_id=user_id, scope=reach, limit=config.CONTEXT_MEMORIES, config=config, using=using, now=now
        ),
    )


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
    *, user_id: str, summary: str, scope: str = "", config: Config | None = None, using: str = "default"
) -> SessionRecord:
    """Store a narrative summary on the scope's active session without closing it (a write)."""
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_write_scope(scope, config=config)
    text, blocks = clean_summary(summary, config=config, allow_blank=False)

    def run():
        now = timezone.now()
        session_id, _ = claim_active_session(user_id, scope, now=now, config=config, using=using)
        session = Session.objects.using(using).get(pk=session_id)
        session.summary = text
        session.is_auto_generated = False
        session.redacted_blocks += blocks  # cumulative, like observations: the count never goes down
        session.save(using=using, update_fields=["summary", "is_auto_generated", "redacted_blocks"])
        return session_record(session, selectors.session_observation_count(session.pk, config=config, using=using))

    return atomic_with_retry(run, using=using)


def session_end(
    *, user_id: str, summary: str | None = None, scope: str = "", config: Config | None = None,
    using: str = "default",
) -> SessionRecord:
    """Close the scope's active session now. Summary: the argument, else the stored narrative,
    else synthetic.

    Raises NoActiveSession when the user has none in the scope.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_write_scope(scope, config=config)
    text, blocks = clean_summary(summary, config=config, allow_blank=True)

    def run():
        session = locked_active_session(user_id, scope, using=using)
        if session is None:
            raise NoActiveSession("This user has no active session in this scope." if scope
                                  else "This user has no active session.")
        _close(session, ended_at=timezone.now(), summary=text, blocks=blocks, reason=ENDED, config=config, using=using)
        return session_record(session, selectors.session_observation_count(session.pk, config=config, using=using))

    return atomic_with_retry(run, using=using)


def sessions_close_idle(
    *, config: Config | None = None, using: str = "default", batch_size: int = 500, progress=None
) -> list[str]:
    """Auto-close every active session idle for longer than ``SESSION_TIMEOUT_HOURS``; returns
    their ids. Running it twice is a no-op.

    ``progress``, if given, is called with the number closed so far after each batch.
    """
    config = config or get_config()
    now = timezone.now()
    closed: list[str] = []
    while True:
        candidate_ids = list(
            Session.objects.using(using)
            .idle(now, config.SESSION_TIMEOUT_HOURS)
            .order_by("last_activity_at", "id")
            .values_list("id", flat=True)[:batch_size]
        )
        if not candidate_ids:
            metrics.count("closed", len(closed))
            return closed
        for session_id in candidate_ids:
            if _close_if_still_idle(session_id, now=now, config=config, using=using):
                closed.append(str(session_id))
        if progress is not None:
            progress(len(closed))


def _close_if_still_idle(session_id, *, now: datetime, config: Config, using: str) -> bool:
    def run():
        # Re-read under the lock: a start or a write may have revived or closed it meanwhile.
        locked = Session.objects.using(using).select_for_update().active().filter(pk=session_id)
        session = first_or_none(locked)
        if session is None or not _is_idle(session, now=now, config=config):
            return False
        auto_close(session, config=config, using=using)
        return True

    return atomic_with_retry(run, using=using)


# The deprecated name (sessions close when idle; memories expire), kept for one release.
sessions_close_expired = sessions_close_idle
