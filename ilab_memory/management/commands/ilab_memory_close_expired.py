from ilab_memory.services.expiry import observations_erase_expired
from ilab_memory.services.sessions import sessions_close_expired

from ..base import DatabaseCommand
from ._progress import Progress


class Command(DatabaseCommand):
    database_help = "Database alias to sweep."
    help = (
        "The sweep: auto-close every active session idle for longer than SESSION_TIMEOUT_HOURS, then "
        "erase every memory past its expires_at or its type's RETENTION. "
        "Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        with Progress(self, "Closing expired sessions", verbosity=verbosity, unit="closed") as progress:
            closed = sessions_close_expired(using=options["database"], progress=progress.update)
        if verbosity >= 2:
            for session_id in closed:
                self.stdout.write(f"closed {session_id}")
        with Progress(self, "Erasing expired memories", verbosity=verbosity, unit="erased") as progress:
            erased = observations_erase_expired(using=options["database"], progress=progress.update)
        if verbosity >= 1:
            self.stdout.write(self.style.SUCCESS(f"Closed {len(closed)} expired session(s)."))
            self.stdout.write(self.style.SUCCESS(f"Erased {erased} expired memory(ies)."))
