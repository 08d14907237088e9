import json
import sys

from django.core.management.base import BaseCommand, CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.data import user_import


class Command(BaseCommand):
    help = "Import an export document into one user_id. Idempotent; nothing is written on a bad document."

    def add_arguments(self, parser):
        parser.add_argument("user_id")
        parser.add_argument("path", help="The export file; '-' reads stdin.")
        parser.add_argument("--database", default="default", help="Database alias to write.")

    def handle(self, *args, **options):
        try:
            if options["path"] == "-":
                data = json.load(sys.stdin)
            else:
                with open(options["path"], encoding="utf-8") as handle:
                    data = json.load(handle)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CommandError(f"Cannot read the document: {error}") from None
        try:
            counts = user_import(user_id=options["user_id"], data=data, using=options["database"])
        except ValidationError as error:
            raise CommandError(f"Nothing imported. {error}") from None
        for name, value in counts.items():
            self.stdout.write(f"{name}: {value}")
