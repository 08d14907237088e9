from ..base import SweepCommand
from .ilab_memory_close_idle import close_idle
from .ilab_memory_erase_expired import erase_expired


class Command(SweepCommand):
    help = (
        "Deprecated: run ilab_memory_close_idle and ilab_memory_erase_expired. Does both: closes idle "
        "sessions, then erases expired memories. With -v 0 (cron) it prints nothing unless it fails."
    )

    def sweep(self, *, using: str, verbosity: int) -> None:
        if verbosity >= 1:
            self.stderr.write("ilab_memory_close_expired is deprecated: run ilab_memory_close_idle and "
                              "ilab_memory_erase_expired.")
        close_idle(self, using=using, verbosity=verbosity)
        erase_expired(self, using=using, verbosity=verbosity)
