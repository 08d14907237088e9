"""A separate process for the expiry crash suite: fill a database with memories that expired, or
sweep them, printing each committed batch (one JSON line, flushed) so the parent knows when to kill.

    python expiry_worker.py sqlite PATH fill --count N --live M
    python expiry_worker.py pg     JSON sweep

``fill`` writes, in bulk through the ORM, ``N`` expired memories of ``sweep-user`` (half past
their ``expires_at``, half past the ``RETENTION`` of "conversation"), each with a revision and a
stored vector, and ``M`` live ones with the same; ``sweep`` runs the sweep in small batches.
"""

import argparse
import hashlib
from datetime import timedelta

from tests.reliability.worker import emit, open_memory  # the parent puts the repository on the path

USER = "sweep-user"
RETENTION = {"conversation": timedelta(days=90)}
BATCH_SIZE = 50  # small batches: many commits for a kill to land between


def fill(count: int, live: int) -> None:
    from django.db import transaction
    from django.utils import timezone

    from ilab_memory.models import Observation, ObservationRevision, ObservationVector, Session, SessionStatus

    now = timezone.now()
    old = now - timedelta(days=100)
    with transaction.atomic():
        session = Session.objects.create(user_id=USER, status=SessionStatus.COMPLETED, started_at=old,
                                         last_activity_at=old, ended_at=old, summary="filled")
        observations = []
        for n in range(count + live):
            expiring = n < count
            by_retention = expiring and n % 2 == 1
            observations.append(Observation(
                user_id=USER, session=session, type="conversation" if by_retention else "manual",
                title=f"{'expiring' if expiring else 'live'} memory {n}", content=f"body of memory {n} lisbon",
                dedupe_hash=hashlib.sha256(f"{n}".encode()).hexdigest(), revision_count=2,
                created_at=old, updated_at=old, last_seen_at=old, happened_at=old,
                expires_at=now - timedelta(minutes=1) if expiring and not by_retention else None,
            ))
        Observation.objects.bulk_create(observations, batch_size=500)
        ObservationRevision.objects.bulk_create([
            ObservationRevision(observation=o, user_id=USER, revision=1, type=o.type, title=o.title,
                                content="an older body", happened_at=old, written_at=old, replaced_at=old)
            for o in observations], batch_size=500)
        ObservationVector.objects.bulk_create([
            ObservationVector(observation=o, user_id=USER, model_id="tests:crash", dimensions=4,
                              vector=bytes(16), queued_at=old, embedded_at=old)
            for o in observations], batch_size=500)
    emit(op="filled", count=count, live=live)


def sweep(mem) -> None:
    from ilab_memory.services.expiry import observations_erase_expired

    emit(op="ready")
    erased = observations_erase_expired(config=mem._config(), batch_size=BATCH_SIZE,
                                        progress=lambda n: emit(op="batch", erased=n))
    emit(op="done", erased=erased)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "pg"])
    parser.add_argument("target")
    parser.add_argument("mode", choices=["fill", "sweep"])
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--live", type=int, default=0)
    args = parser.parse_args()
    mem = open_memory(args.backend, args.target)
    mem = type(mem)(retention=RETENTION, embedding_runner=None)
    if args.mode == "fill":
        fill(args.count, args.live)
    else:
        sweep(mem)


if __name__ == "__main__":
    main()
