"""visibility.py: what a read sees in time, in each form a read needs. ``live_q`` (at a moment,
or by the clock of each query), ``live_sql`` for the raw statements, ``is_expired`` for a row in
hand and ``expired_q`` for the sweep agree on the same rows at the same clock, the boundaries
included; ``Window``'s ``q``, ``sql`` and ``in`` agree on ``happened_at``."""

import uuid
from datetime import timedelta

import pytest
import time_machine
from django.db import connection

from ilab_memory.conf import get_config
from ilab_memory.models import OBSERVATION_TABLE, Observation
from ilab_memory.visibility import Window, expired_q, is_expired, live_q, live_sql
from tests.conftest import START
from tests.factories import ObservationFactory

DAY = timedelta(days=1)
TICK = timedelta(microseconds=1)
RETENTION = {"conversation": DAY}


@pytest.fixture
def rows(db):
    """One row of each kind a read must judge, by name, written before START."""
    write = START - DAY  # written a day before the clocks below: a conversation is at its boundary
    made = {
        "plain": {},
        "deleted": {"deleted_at": START - TICK},
        "expires in the past": {"expires_at": START - TICK},
        "expires now": {"expires_at": START},
        "expires later": {"expires_at": START + TICK},
        "conversation written a day ago": {"type": "conversation"},
        "conversation written later": {"type": "conversation", "updated_at": write + TICK},
        "deleted conversation": {"type": "conversation", "deleted_at": START - TICK},
    }
    with time_machine.travel(write, tick=False):
        return {name: ObservationFactory(user_id="alice", **fields).pk for name, fields in made.items()}


def seen_by_each_form(config, now) -> dict[str, set]:
    """The ids each form calls live at ``now``."""
    with time_machine.travel(now, tick=False):
        by_the_clock = set(Observation.objects.filter(live_q(config)).values_list("pk", flat=True))
    at_now = set(Observation.objects.filter(live_q(config, now=now)).values_list("pk", flat=True))
    clause, params = live_sql("o", connection, config, now=now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT o.id FROM {OBSERVATION_TABLE} o WHERE 1 = 1{clause}", params)
        raw = {uuid.UUID(str(pk)) for (pk,) in cursor.fetchall()}
    in_hand = {row.pk for row in Observation.objects.all()
               if row.deleted_at is None and not is_expired(row, config, now=now)}
    not_expired = set(Observation.objects.filter(deleted_at__isnull=True).exclude(expired_q(config, now=now))
                      .values_list("pk", flat=True))
    return {"live_q by the clock": by_the_clock, "live_q at now": at_now, "live_sql": raw,
            "is_expired": in_hand, "expired_q": not_expired}


@pytest.mark.parametrize("shift, live", [
    (-TICK, {"plain", "expires now", "expires later", "conversation written a day ago",
             "conversation written later"}),
    (timedelta(0), {"plain", "expires later", "conversation written later"}),
    (TICK, {"plain"}),  # the later conversation reaches its day too
])
def test_every_form_sees_the_same_rows_at_the_same_clock(rows, shift, live):
    config = get_config({"retention": RETENTION})
    seen = seen_by_each_form(config, START + shift)
    expected = {rows[name] for name in live}
    assert {form: ids == expected for form, ids in seen.items()} == dict.fromkeys(seen, True), {
        form: sorted(name for name, pk in rows.items() if pk in ids) for form, ids in seen.items()}


def test_without_a_retention_only_the_expiry_date_and_deletion_hide_a_row(rows):
    seen = seen_by_each_form(get_config({"retention": {}}), START)
    expected = {rows[name] for name in ("plain", "expires later", "conversation written a day ago",
                                        "conversation written later")}
    assert all(ids == expected for ids in seen.values()), seen


def test_a_changed_retention_is_read_by_the_next_query(rows):
    with time_machine.travel(START + TICK, tick=False):
        kept = Observation.objects.filter(live_q(get_config({"retention": {"conversation": 2 * DAY}})))
        assert rows["conversation written a day ago"] in set(kept.values_list("pk", flat=True))
        gone = Observation.objects.filter(live_q(get_config({"retention": RETENTION})))
        assert rows["conversation written a day ago"] not in set(gone.values_list("pk", flat=True))


def test_a_windows_three_forms_agree_since_inclusive_until_exclusive(db):
    moments = [START - DAY, START - TICK, START, START + TICK, START + DAY]
    ids = {ObservationFactory(user_id="alice", happened_at=moment).pk: moment for moment in moments}
    for window in (Window(), Window(since=START), Window(until=START), Window(since=START - TICK, until=START + TICK)):
        by_q = set(Observation.objects.filter(window.q()).values_list("pk", flat=True))
        clause, params = window.sql("o", connection)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT o.id FROM {OBSERVATION_TABLE} o WHERE 1 = 1{clause}", params)
            by_sql = {uuid.UUID(str(pk)) for (pk,) in cursor.fetchall()}
        by_contains = {pk for pk, moment in ids.items() if moment in window}
        assert by_q == by_sql == by_contains, window
    assert {ids[pk] for pk in by_contains} == {START - TICK, START}
