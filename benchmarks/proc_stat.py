"""Processes' CPU time from /proc (Linux), for the HTTP benchmarks' CPU per request."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def processes() -> Iterator[tuple[int, int, str, int]]:
    """(pid, parent pid, command, CPU ticks used: user + system) of every process; nothing where
    there is no /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        command = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, …
        yield int(entry.name), int(fields[1]), command, int(fields[11]) + int(fields[12])  # utime, stime
