"""What long commands share: a progress line on a terminal, silence under cron, a quiet closed pipe.

Not a command itself: Django skips command modules whose name starts with an underscore.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Self

REDRAW_SECONDS = 0.2


class Progress:
    """A status line on stderr, redrawn in place while the work runs.

    Shown only when stderr is a terminal and verbosity is at least 1: under cron, in a pipe to a
    log file or with ``-v 0`` nothing is written. A background thread redraws it, so the work never
    waits on the terminal and a step with no count (one long SQL statement) still shows the time
    it has taken. ``advance``/``update`` only store a number.
    """

    def __init__(self, command, label: str, *, verbosity: int, total: int | None = None, unit: str = ""):
        self.stream = command.stderr
        self.enabled = verbosity >= 1 and self.stream.isatty()
        self.label, self.total, self.unit = label, total, unit
        self.done: int | None = None if unit == "" else 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()

    def advance(self, n: int = 1) -> None:
        self.done = (self.done or 0) + n

    def update(self, done: int) -> None:
        self.done = done

    def phase(self, label: str) -> None:
        """A new step of the work, with no count (e.g. "writing"), timed from the start."""
        self.label = label

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        if self.done is None:
            return f"{self.label}… {elapsed:.1f} s"
        count = f"{self.done:,}" if self.total is None else f"{self.done:,}/{self.total:,}"
        rate = self.done / elapsed if elapsed > 0 else 0.0
        return f"{self.label}: {count} {self.unit} ({elapsed:.1f} s, {rate:,.0f}/s)"

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line(), ending="")
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            self._draw()

    def __enter__(self) -> Self:
        if self.enabled:
            self._draw()
            self._thread = threading.Thread(target=self._run, name="ilab-memory-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._draw()
            self.stream.write("")  # end the line: what follows starts on its own


@contextmanager
def quiet_broken_pipe():
    """A reader that stops early (``| head``) ends the command quietly, with exit status 1.

    Python would print a BrokenPipeError traceback, and again when it flushes stdout at exit;
    stdout is pointed at /dev/null so that last flush has nowhere to fail.
    """
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None


def swept(command, sweep, *, label: str, unit: str, using: str, verbosity: int):
    """``sweep(using=, progress=)`` run under a progress line; what it returns."""
    with Progress(command, label, verbosity=verbosity, unit=unit) as progress:
        return sweep(using=using, progress=progress.update)


def report(command, text: str, *, verbosity: int) -> None:
    """The sweep's one line of success, unless ``-v 0``."""
    if verbosity >= 1:
        command.stdout.write(command.style.SUCCESS(text))
