from contextlib import closing

from django.core.management.base import CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.export import user_export_json

from ..base import DatabaseCommand
from ._progress import Progress, quiet_broken_pipe


class Command(DatabaseCommand):
    database_help = "Database alias to read."
    help = (
        "Write everything one user_id has (or one scope of it) as versioned JSON (streamed, row by row: "
        "memory stays flat). "
        "Progress on stderr when it is a terminal; a reader that stops early (| head) ends it quietly."
    )

    def add_arguments(self, parser):
        parser.add_argument("user_id")
        parser.add_argument("--output", "-o", default="-", help="File to write; '-' (default) is stdout.")
        parser.add_argument(
            "--scope", default="*",
            help="The scope to export: '*' (default) every scope, '' the shared space, a slug that scope only.",
        )
        super().add_arguments(parser)  # --database, last as before

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        try:
            with Progress(self, "Exporting", verbosity=verbosity, unit="rows") as progress, closing(
                user_export_json(user_id=options["user_id"], scope=options["scope"], using=options["database"],
                                 progress=progress.advance)
            ) as pieces:  # closed at once, even by a closed pipe, while the database is still open
                if options["output"] == "-":
                    with quiet_broken_pipe():
                        for piece in pieces:
                            self.stdout.write(piece, ending="")
                        self.stdout.flush()
                else:
                    first = next(pieces)  # a bad user_id or scope fails here, before the file is emptied
                    with open(options["output"], "w", encoding="utf-8") as handle:
                        handle.write(first)
                        for piece in pieces:
                            handle.write(piece)
        except ValidationError as error:
            raise CommandError(str(error)) from None
        except OSError as error:
            raise CommandError(f"Cannot write {options['output']}: {error.strerror}") from None
        if options["output"] != "-" and verbosity >= 1:
            self.stderr.write(f"Exported {progress.done} row(s) to {options['output']}.")
