import sys

from django.core.management.base import BaseCommand, CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.data import user_export_json


class Command(BaseCommand):
    help = "Write everything one user_id has as versioned JSON (streamed, row by row)."

    def add_arguments(self, parser):
        parser.add_argument("user_id")
        parser.add_argument("--output", "-o", default="-", help="File to write; '-' (default) is stdout.")
        parser.add_argument("--database", default="default", help="Database alias to read.")

    def handle(self, *args, **options):
        try:
            pieces = user_export_json(user_id=options["user_id"], using=options["database"])
            if options["output"] == "-":
                for piece in pieces:
                    self.stdout.write(piece, ending="")
            else:
                with open(options["output"], "w", encoding="utf-8") as handle:
                    for piece in pieces:
                        handle.write(piece)
                sys.stderr.write(f"Exported to {options['output']}.\n")
        except ValidationError as error:
            raise CommandError(str(error)) from None
