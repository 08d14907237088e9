from ilab_memory.services.expiry import observations_erase_expired

from ..base import SweepCommand
from ._progress import report, swept


def erase_expired(command, *, using: str, verbosity: int) -> None:
    """Erase the expired memories of ``using``, reporting as ``command`` (shared by the old name)."""
    erased = swept(command, observations_erase_expired, label="Erasing expired memories", unit="erased",
                   using=using, verbosity=verbosity)
    report(command, f"Erased {erased} expired memory(ies).", verbosity=verbosity)


class Command(SweepCommand):
    help = (
        "Erase every memory past its expires_at or its type's RETENTION, with its history, vector "
        "and index entry. Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )
    sweep = erase_expired
