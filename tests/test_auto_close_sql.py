"""PostgreSQL: the start statement auto-closes in SQL exactly as ``sessions.auto_close`` does."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from ilab_memory.conf import get_config
from ilab_memory.models import Session, SessionStatus
from ilab_memory.services.sessions import build_auto_summary
from ilab_memory.services.statements import claim_start_statement
from tests.factories import ObservationFactory, SessionFactory
from tests.plans import custom_and_generic_plans
from tests.test_query_counts import queries_of

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's one-statement start")

AWKWARD_TITLES = ["it's 100% done", "%s and %(x)s", "back\\slash", "ñandú — ✓ 🚀", "  spaced  ", "[x] y, z"]


def expired_session(clock, titles, *, deleted=(), same_moment=False, **session_fields):
    """An active session of alice, last active 25 hours ago, with live and deleted observations."""
    session = SessionFactory(user_id="alice", **session_fields)
    for index, title in enumerate(titles):
        ObservationFactory(
            session=session, title=title, type=["decision", "bugfix", "manual"][index % 3],
            # Equal creation times are ordered by id, in SQL and in Python alike.
            created_at=session.started_at + timedelta(seconds=0 if same_moment else index),
            deleted_at=session.started_at if index in deleted else None,
        )
    clock.shift(timedelta(hours=25))
    return session


CASES = {
    "none": dict(titles=[]),
    "one": dict(titles=["Only"]),
    "awkward text": dict(titles=AWKWARD_TITLES),
    "exactly the limit": dict(titles=[f"t{i}" for i in range(20)]),
    "one over the limit": dict(titles=[f"t{i}" for i in range(21)]),
    "many over, some deleted": dict(titles=[f"t{i}" for i in range(30)], deleted={0, 5, 25}),
    "all deleted": dict(titles=["gone", "gone too"], deleted={0, 1}),
    "same creation moment": dict(titles=[f"same {i}" for i in range(6)], same_moment=True),
    "narrative kept": dict(titles=["x"], summary="Told by the user", redacted_blocks=2),
    "blank narrative is no narrative": dict(titles=["x"], summary="", redacted_blocks=1),
    "an old synthetic text is replaced": dict(titles=["x"], summary="stale", is_auto_generated=True),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("overrides", [{}, {"AUTO_SUMMARY_MAX_ITEMS": 3, "AUTO_SUMMARY_PREFIX": "Hecho: 100% 'ok'"}],
                         ids=["defaults", "custom prefix and limit"])
def test_the_sql_close_writes_what_the_python_close_writes(mem, clock, case, overrides):
    with override_settings(ILAB_MEMORY=overrides):
        config = get_config()
        session = expired_session(clock, **case)
        narrative = bool(session.summary) and not session.is_auto_generated
        expected_summary = session.summary if narrative else build_auto_summary(session, config=config, using="default")
        expected_blocks = session.redacted_blocks if narrative else 0

        response = mem.mem_session_start("alice")

    closed = Session.objects.get(pk=session.pk)
    assert closed.status == SessionStatus.COMPLETED
    assert closed.ended_at == session.last_activity_at + timedelta(hours=config.SESSION_TIMEOUT_HOURS)
    assert (closed.summary, closed.is_auto_generated, closed.redacted_blocks) == (
        expected_summary, not narrative, expected_blocks
    )
    assert response.is_new and response.session_id != str(session.pk)
    first = response.sessions_context[0]
    assert (first.session_id, first.summary, first.is_auto_generated) == (str(session.pk), expected_summary, not narrative)
    assert first.observation_count == len(case["titles"]) - len(case.get("deleted", ()))


def test_the_expected_texts_are_the_seeds(mem, clock):
    """The Python side of the comparison above, pinned to the SPEC's words."""
    session = expired_session(clock, [f"t{i}" for i in range(22)])
    assert build_auto_summary(session, config=get_config(), using="default") == (
        "Memorias registradas: " + ", ".join(f"[{['decision', 'bugfix', 'manual'][i % 3]}] t{i}" for i in range(20))
        + ", … (+2)"
    )


def test_a_start_that_auto_closes_is_one_statement(mem, clock):
    expired_session(clock, ["a", "b", "c"])
    assert queries_of(lambda: mem.mem_session_start("alice")) == 1


def test_the_start_statement_finds_the_users_session_through_its_own_index(db):
    """Before a sweep, many users' sessions may sit expired; the bump and the close must go
    straight to the user's row, never walk the all-users activity index."""
    now = timezone.now()
    Session.objects.bulk_create(
        SessionFactory.build(user_id=f"gone-{k}", last_activity_at=now - timedelta(days=2, minutes=k))
        for k in range(3000)
    )
    SessionFactory(user_id="alice", last_activity_at=now - timedelta(days=2))
    config = get_config()
    sql, params = claim_start_statement(
        "alice", now=now, timeout=timedelta(hours=24), sessions=5, type_weights=config.TYPE_WEIGHTS,
        head_chars=301, candidates=200, limit=10, summary_prefix="Memorias registradas:", summary_items=20,
        relax_commit=False,
    )
    for plan in custom_and_generic_plans(sql, params):
        assert plan.count("ilab_memory_one_active_session_per_user") >= 2  # the bump and the close
        assert "ilab_mem_sess_active_activity" not in plan
