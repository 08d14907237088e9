from django.core.management.base import BaseCommand

from ilab_memory.services.sessions import sessions_close_expired

from ._progress import Progress


class Command(BaseCommand):
    help = (
        "Auto-close every active session idle for longer than SESSION_TIMEOUT_HOURS (the sweep). "
        "Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="Database alias to sweep.")

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        with Progress(self, "Closing expired sessions", verbosity=verbosity, unit="closed") as progress:
            closed = sessions_close_expired(using=options["database"], progress=progress.update)
        if verbosity >= 2:
            for session_id in closed:
                self.stdout.write(f"closed {session_id}")
        if verbosity >= 1:
            self.stdout.write(self.style.SUCCESS(f"Closed {len(closed)} expired session(s)."))
