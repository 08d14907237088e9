from ilab_memory.services.sessions import sessions_close_idle

from ..base import DatabaseCommand
from ._progress import Progress


def close_idle(command, *, using: str, verbosity: int) -> None:
    """Close the idle sessions of ``using``, reporting as ``command`` (shared by the old name)."""
    with Progress(command, "Closing idle sessions", verbosity=verbosity, unit="closed") as progress:
        closed = sessions_close_idle(using=using, progress=progress.update)
    if verbosity >= 2:
        for session_id in closed:
            command.stdout.write(f"closed {session_id}")
    if verbosity >= 1:
        command.stdout.write(command.style.SUCCESS(f"Closed {len(closed)} idle session(s)."))


class Command(DatabaseCommand):
    database_help = "Database alias to sweep."
    help = (
        "Auto-close every active session idle for longer than SESSION_TIMEOUT_HOURS. "
        "Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )

    def handle(self, *args, **options):
        close_idle(self, using=options["database"], verbosity=options["verbosity"])
