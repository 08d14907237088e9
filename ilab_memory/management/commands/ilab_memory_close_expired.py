from django.core.management.base import BaseCommand

from ilab_memory.services.sessions import sessions_close_expired


class Command(BaseCommand):
    help = "Auto-close every active session idle for longer than SESSION_TIMEOUT_HOURS (the sweep)."

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="Database alias to sweep.")

    def handle(self, *args, **options):
        closed = sessions_close_expired(using=options["database"])
        if options["verbosity"] >= 2:
            for session_id in closed:
                self.stdout.write(f"closed {session_id}")
        self.stdout.write(self.style.SUCCESS(f"Closed {len(closed)} expired session(s)."))
