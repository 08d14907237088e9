from ilab_memory.services.expiry import observations_erase_expired

from ..base import DatabaseCommand
from ._progress import Progress


def erase_expired(command, *, using: str, verbosity: int) -> None:
    """Erase the expired memories of ``using``, reporting as ``command`` (shared by the old name)."""
    with Progress(command, "Erasing expired memories", verbosity=verbosity, unit="erased") as progress:
        erased = observations_erase_expired(using=using, progress=progress.update)
    if verbosity >= 1:
        command.stdout.write(command.style.SUCCESS(f"Erased {erased} expired memory(ies)."))


class Command(DatabaseCommand):
    database_help = "Database alias to sweep."
    help = (
        "Erase every memory past its expires_at or its type's RETENTION, with its history, vector "
        "and index entry. Progress on a terminal; with -v 0 (cron) it prints nothing unless it fails."
    )

    def handle(self, *args, **options):
        erase_expired(self, using=options["database"], verbosity=options["verbosity"])
