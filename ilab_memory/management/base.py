"""What the library's commands share: each acts on one database alias, ``--database``."""

from django.core.management.base import BaseCommand


class DatabaseCommand(BaseCommand):
    """A command on one database alias (``--database``, "default" unless given); a subclass adds
    its own arguments after calling ``super().add_arguments(parser)``."""

    database_help = "Database alias."

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help=self.database_help)


class SweepCommand(DatabaseCommand):
    """A sweep of one database alias, for cron: ``sweep`` does the work and reports."""

    database_help = "Database alias to sweep."

    def handle(self, *args, **options):
        self.sweep(using=options["database"], verbosity=options["verbosity"])

    def sweep(self, *, using: str, verbosity: int) -> None:
        raise NotImplementedError
