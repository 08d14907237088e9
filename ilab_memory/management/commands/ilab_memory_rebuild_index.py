from django.core.management.base import BaseCommand

from ilab_memory.services.search import index_rebuild


class Command(BaseCommand):
    help = (
        "Recreate the full-text search triggers and refill the index from the observation table "
        "(after a restore, a manual schema change, or anything that bypassed the triggers)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="Database alias to rebuild.")

    def handle(self, *args, **options):
        rows = index_rebuild(using=options["database"])
        self.stdout.write(self.style.SUCCESS(f"Search index rebuilt from {rows} observation(s)."))
