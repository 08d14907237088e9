from ilab_memory.services.search.index import index_rebuild

from ..base import DatabaseCommand
from ._progress import Progress


class Command(DatabaseCommand):
    database_help = "Database alias to rebuild."
    help = (
        "Recreate the full-text search triggers and refill the index from the observation table "
        "(after a restore, a manual schema change, or anything that bypassed the triggers). "
        "One statement; on a terminal a status line shows it is still working."
    )

    def handle(self, *args, **options):
        with Progress(self, "Rebuilding the search index", verbosity=options["verbosity"]):
            rows = index_rebuild(using=options["database"])
        if options["verbosity"] >= 1:
            self.stdout.write(self.style.SUCCESS(f"Search index rebuilt from {rows} observation(s)."))
