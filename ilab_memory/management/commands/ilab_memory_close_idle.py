from ilab_memory.services.sessions import sessions_close_idle

from ..base import SweepCommand
from ._progress import report, swept


def close_idle(command, *, using: str, verbosity: int) -> None:
    """Close the idle sessions of ``using``, reporting as ``command`` (shared by the old name)."""
    closed = swept(command, sessions_close_idle, label="Closing idle sessions", unit="closed", using=using,
                   verbosity=verbosity)
    if verbosity >= 2:
        for session_id in closed:
            command.stdout.write(f"closed {session_id}")
    report(command, f"Closed {len(closed)} idle session(s).", verbosity=verbosity)


class Command(SweepCommand):
    help = (
        "Auto-close every active session idle for longer than SESSION_TIMEOUT_HOURS. "
        "Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )
    sweep = close_idle
