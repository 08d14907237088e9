"""admin/charts.py: the overview's chart geometry, from the days and counts the selectors read."""

from datetime import UTC, datetime, timedelta

from ilab_memory.admin import charts, selectors
from tests.factories import SessionFactory

DAY = datetime(2026, 3, 2, tzinfo=UTC)


def test_day_columns_stack_auto_human_none_from_the_bottom_scaled_to_the_busiest_day(db):
    SessionFactory(started_at=DAY, completed=True, summary="Memories: x", is_auto_generated=True)
    SessionFactory(started_at=DAY + timedelta(hours=1), completed=True, summary="Talked")
    SessionFactory(started_at=DAY + timedelta(days=1))
    chart = charts.day_columns(selectors.sessions_per_day(since=DAY, days=2))
    first, second = chart["columns"]
    assert chart["most"] == 2 and (first.total, second.total) == (2, 1)
    auto, human = first.segments
    assert (auto.kind, auto.y, auto.height) == ("auto", charts.DAYS_HEIGHT / 2, charts.DAYS_HEIGHT / 2)
    assert (human.kind, human.y, human.height) == ("human", 0.0, charts.DAYS_HEIGHT / 2)
    (none,) = second.segments
    assert (none.kind, none.height) == ("none", charts.DAYS_HEIGHT / 2)
    assert first.x < second.x and first.x + first.width < second.x


def test_an_empty_window_draws_no_segment_and_divides_by_nothing(db):
    chart = charts.day_columns(selectors.sessions_per_day(since=DAY, days=3))
    assert chart["most"] == 0 and all(column.segments == [] for column in chart["columns"])
    assert charts.day_columns([])["columns"] == []


def test_bar_rows_are_percentages_of_the_largest_with_their_links():
    rows = charts.bar_rows([("decision", 4), ("pattern", 1)], link=lambda label: f"/t/{label}")
    assert [(r["label"], r["percent"], r["url"]) for r in rows] == [("decision", 100.0, "/t/decision"),
                                                                     ("pattern", 25.0, "/t/pattern")]
    assert charts.bar_rows([("x", 0)])[0]["percent"] == 0.0
