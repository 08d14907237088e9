import json
import sys

from django.core.management.base import CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.imports import user_import

from ..base import DatabaseCommand
from ._progress import Progress


class Command(DatabaseCommand):
    database_help = "Database alias to write."
    help = (
        "Import an export document into one user_id. Idempotent; nothing is written on a bad document. "
        "On a terminal a status line shows the step (reading, checking and writing)."
    )

    def add_arguments(self, parser):
        parser.add_argument("user_id")
        parser.add_argument("path", help="The export file; '-' reads stdin.")
        parser.add_argument(
            "--scope", default=None,
            help="Put every row into this scope ('' the shared space); by default each row keeps its own "
                 "(a version 1 document: the shared space).",
        )
        super().add_arguments(parser)  # --database, last as before

    def handle(self, *args, **options):
        with Progress(self, "Reading the document", verbosity=options["verbosity"]) as progress:
            try:
                if options["path"] == "-":
                    data = json.load(sys.stdin)
                else:
                    with open(options["path"], encoding="utf-8") as handle:
                        data = json.load(handle)
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise CommandError(f"Cannot read the document: {error}") from None
            progress.phase("Checking and writing (one transaction)")
            try:
                counts = user_import(user_id=options["user_id"], data=data, scope=options["scope"],
                                     using=options["database"])
            except ValidationError as error:
                raise CommandError(f"Nothing imported. {error}") from None
        if options["verbosity"] >= 1:
            for name, value in counts.items():
                self.stdout.write(f"{name}: {value}")
