import sys

from django.core.management.base import CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.erasure import user_forget

from ..base import DatabaseCommand
from ._progress import Progress


class Command(DatabaseCommand):
    database_help = "Database alias to erase from."
    help = (
        "Erase every row of one user_id (sessions, observations, history, index entries), or with --scope "
        "only that scope's. "
        "One transaction; on a terminal a status line shows it is still working."
    )

    def add_arguments(self, parser):
        parser.add_argument("user_id")
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")
        parser.add_argument(
            "--no-input", "--noinput", action="store_false", dest="interactive",
            help="Never prompt; without --yes this refuses.",
        )
        parser.add_argument(
            "--scope", default="*", help="Erase only this scope ('' the shared space); '*' (default) the whole user.",
        )
        super().add_arguments(parser)  # --database, last as before

    def handle(self, *args, **options):
        user_id, scope = options["user_id"], options["scope"]
        what = "every memory" if scope == "*" else f"every memory in scope {scope!r}"
        if not options["yes"]:
            if not options["interactive"] or not self.stdin_is_tty():
                raise CommandError("Refusing to erase without confirmation; pass --yes.")
            answer = input(f"Erase {what} of user_id {user_id!r}? This cannot be undone. Type 'yes': ")
            if answer.strip() != "yes":
                raise CommandError("Nothing erased.")
        try:
            with Progress(self, "Erasing (one transaction)", verbosity=options["verbosity"]):
                counts = user_forget(user_id=user_id, scope=scope, using=options["database"])
        except ValidationError as error:
            raise CommandError(str(error)) from None
        if options["verbosity"] >= 1:
            of_scope = "" if scope == "*" else f" of scope {scope!r}"
            self.stdout.write(self.style.SUCCESS(
                "Erased {sessions} session(s), {observations} observation(s), {revisions} revision(s)".format(**counts)
                + of_scope + "."
            ))

    @staticmethod
    def stdin_is_tty() -> bool:
        return sys.stdin.isatty()
