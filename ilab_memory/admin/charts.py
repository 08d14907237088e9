"""Geometry for the overview's charts, drawn as inline SVG by the templates (no script, no CDN)."""

from __future__ import annotations

from dataclasses import dataclass

# The day chart's drawing box, in SVG units; the <svg> scales to its container's width.
DAYS_WIDTH, DAYS_HEIGHT = 600, 160


@dataclass(frozen=True)
class Segment:
    kind: str
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Column:
    day: object
    x: float
    width: float
    total: int
    segments: list[Segment]


def day_columns(days) -> dict:
    """Stacked columns (auto, human, none from the bottom) of the sessions started per day."""
    most = max((day.total for day in days), default=0)
    top = most or 1
    slot = DAYS_WIDTH / max(len(days), 1)
    columns = []
    for index, day in enumerate(days):
        y = float(DAYS_HEIGHT)
        segments = []
        for kind, count in (("auto", day.auto), ("human", day.human), ("none", day.none)):
            height = DAYS_HEIGHT * count / top
            y -= height
            if count:
                segments.append(Segment(kind, count, round(y, 2), round(height, 2)))
        columns.append(Column(day.day, round(index * slot + slot * 0.1, 2), round(slot * 0.8, 2), day.total, segments))
    return {"columns": columns, "width": DAYS_WIDTH, "height": DAYS_HEIGHT, "most": most}


def bar_rows(pairs, *, link=None) -> list[dict]:
    """Horizontal bars of (label, count) pairs, as percentages of the largest count."""
    top = max((count for _, count in pairs), default=0) or 1
    return [
        {"label": label, "count": count, "percent": round(100 * count / top, 1), "url": link(label) if link else None}
        for label, count in pairs
    ]
