"""Start, save and context for users with 100, 10k and 100k observations, next to the floor."""

from __future__ import annotations

from datetime import timedelta

from .perf_data import BulkLoad, HistoryWriter
from .perf_floor import Floor
from .perf_timing import measure_interleaved, step


def history_user(size: int) -> str:
    return f"history-{size}"


def floor_user(size: int) -> str:
    return f"floor-{size}"


def run(mem, scratch, *, sizes: list[int], iterations: int) -> list[dict]:
    from django.utils import timezone

    from ilab_memory.conf import get_config
    from ilab_memory.models import Session, SessionStatus
    from ilab_memory.services.observations import observation_save

    writer = HistoryWriter()
    with BulkLoad():
        # Each history twice: one user for ilab_memory, a twin for the floor, so neither run
        # changes what the other one reads.
        users = [(name, size) for size in sizes for name in (history_user(size), floor_user(size))]
        writer.add_users(users, label="histories")
    config = get_config()
    floor = Floor(scratch.raw_connection(), scratch.vendor, context_candidates=config.CONTEXT_CANDIDATES,
                  context_memories=config.CONTEXT_MEMORIES, type_weights=config.TYPE_WEIGHTS)
    body = writer.corpus.sentences
    results: list[dict] = []

    def record(op: str, size: int, ours, floor_sample=None, **extra):
        entry = {"group": "core", "op": op, "size": size, "ours": ours.__dict__,
                 "floor": floor_sample.__dict__ if floor_sample else None, **extra}
        results.append(entry)
        ratio = f"  x{ours.p50 / floor_sample.p50:4.1f}" if floor_sample else ""
        step(f"{op:<28} {size:>7,}  p50 {ours.p50:7.2f} ms  p95 {ours.p95:7.2f} ms{ratio}")

    for size in sizes:
        user = history_user(size)
        twin = floor_user(size)
        n = iterations

        # -- start ---------------------------------------------------------------------
        # Ours and its floors run in turns (perf_timing.measure_interleaved).
        mem.mem_session_start(user)
        floor.open_session(twin)
        got = measure_interleaved({
            "ours": lambda i: mem.mem_session_start(user),
            "floor": lambda i: floor.start_reuse(twin),
            "write": lambda i: floor.start_write(twin),
        }, iterations=n)
        record("start reuse", size, got["ours"], got["floor"], floor_write=got["write"].__dict__)

        got = measure_interleaved(
            {"ours": lambda i: mem.mem_session_start(user), "floor": lambda i: floor.start_new(twin)},
            before={"ours": lambda i: mem.mem_session_end(user, summary="bench"),
                    "floor": lambda i: floor.close_session(twin)},
            iterations=n,
        )
        record("start new", size, got["ours"], got["floor"])

        def expire_ours(i):
            mem.mem_session_start(user)
            for k in range(3):
                mem.mem_save(user, f"before close {i}-{k}", body[k])
            past = timezone.now() - timedelta(hours=config.SESSION_TIMEOUT_HOURS + 1)
            Session.objects.filter(user_id=user, status=SessionStatus.ACTIVE).update(last_activity_at=past)

        def expire_floor(i):
            session_id = floor.open_session(twin)
            for k in range(3):
                floor.save_create(twin, session_id, title=f"before close {i}-{k}", content=body[k],
                                  digest=f"close-{i}-{k}")
            floor.expire_session(twin)

        got = measure_interleaved(
            {"ours": lambda i: mem.mem_session_start(user), "floor": lambda i: floor.start_auto_close(twin)},
            before={"ours": expire_ours, "floor": expire_floor},
            iterations=n,
        )
        record("start auto-close", size, got["ours"], got["floor"])

        # -- save ----------------------------------------------------------------------
        mem.mem_session_start(user)
        session_id = floor.open_session(twin)

        def through_services(**kwargs):
            return observation_save(user_id=user, config=config, **kwargs)

        def through_facade(**kwargs):
            return mem.mem_save(user, kwargs.pop("title"), kwargs.pop("content"), **kwargs)

        faces = {"services": through_services, "facade": through_facade}
        text = lambda i: body[i % len(body)]  # noqa: E731
        # create: a new title every call
        got = measure_interleaved({
            **{face: (lambda save, face: lambda i: save(title=f"{face} {i}", content=text(i)))(save, face)
               for face, save in faces.items()},
            "floor": lambda i: floor.save_create(twin, session_id, title=f"floor {size} {i}", content=text(i),
                                                 digest=f"floor-{size}-{i}"),
            "write": lambda i: floor.save_create(twin, session_id, title=f"write {size} {i}", content=text(i),
                                                 digest=f"write-{size}-{i}", write_only=True),
        }, iterations=n)
        for face in faces:
            record(f"save create ({face})", size, got[face], got["floor"], floor_write=got["write"].__dict__)
        # duplicate: the same memory again and again
        floor.save_create(twin, session_id, title="twin", content="twin", digest=f"twin-{size}")
        got = measure_interleaved({
            **{face: (lambda save, face: lambda i: save(title=f"{face} twin", content="the same words"))(save, face)
               for face, save in faces.items()},
            "floor": lambda i: floor.save_duplicate(twin, session_id, digest=f"twin-{size}"),
            "write": lambda i: floor.save_duplicate(twin, session_id, digest=f"twin-{size}", write_only=True),
        }, iterations=n)
        for face in faces:
            record(f"save duplicate ({face})", size, got[face], got["floor"], floor_write=got["write"].__dict__)
        # revise: the same topic with new content
        floor.save_create(twin, session_id, title="topic", content="v0", digest=f"topic-{size}",
                          topic_key=f"bench-{size}")
        got = measure_interleaved({
            **{face: (lambda save, face: lambda i: save(title=f"{face} topic", content=text(i),
                                                        topic_key=f"{face}-topic"))(save, face)
               for face, save in faces.items()},
            "floor": lambda i: floor.save_revise(twin, session_id, topic_key=f"bench-{size}", content=text(i)),
            "write": lambda i: floor.save_revise(twin, session_id, topic_key=f"bench-{size}", content=text(i),
                                                 write_only=True),
        }, iterations=n)
        for face in faces:
            record(f"save revise ({face})", size, got[face], got["floor"], floor_write=got["write"].__dict__)

        # -- context -------------------------------------------------------------------
        got = measure_interleaved(
            {"ours": lambda i: mem.mem_context(user), "floor": lambda i: floor.context(twin)}, iterations=n
        )
        record("context", size, got["ours"], got["floor"])
    return results
