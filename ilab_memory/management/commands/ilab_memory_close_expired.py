from ..base import DatabaseCommand
from .ilab_memory_close_idle import close_idle
from .ilab_memory_erase_expired import erase_expired


class Command(DatabaseCommand):
    database_help = "Database alias to sweep."
    help = (
        "Deprecated: run ilab_memory_close_idle and ilab_memory_erase_expired. Does both: closes idle "
        "sessions, then erases expired memories. With -v 0 (cron) it prints nothing unless it fails."
    )

    def handle(self, *args, **options):
        using, verbosity = options["database"], options["verbosity"]
        if verbosity >= 1:
            self.stderr.write("ilab_memory_close_expired is deprecated: run ilab_memory_close_idle and "
                              "ilab_memory_erase_expired.")
        close_idle(self, using=using, verbosity=verbosity)
        erase_expired(self, using=using, verbosity=verbosity)
