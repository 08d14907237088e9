"""Start, save and context for users with 100, 10k and 100k observations, next to the floor."""

from __future__ import annotations

from datetime import timedelta

from .perf_data import BulkLoad, HistoryWriter
from .perf_floor import Floor
from .perf_timing import measure, step


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
        mem.mem_session_start(user)
        ours = measure(lambda i: mem.mem_session_start(user), iterations=n)
        floor.open_session(twin)
        full = measure(lambda i: floor.start_reuse(twin), iterations=n)
        write_only = measure(lambda i: floor.start_write(twin), iterations=n)
        record("start reuse", size, ours, full, floor_write=write_only.__dict__)

        ours = measure(lambda i: mem.mem_session_start(user), iterations=n,
                       before=lambda i: mem.mem_session_end(user, summary="bench"))
        full = measure(lambda i: floor.start_new(twin), iterations=n,
                       before=lambda i: floor.close_session(twin))
        record("start new", size, ours, full)

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

        ours = measure(lambda i: mem.mem_session_start(user), iterations=n, before=expire_ours)
        full = measure(lambda i: floor.start_auto_close(twin), iterations=n, before=expire_floor)
        record("start auto-close", size, ours, full)

        # -- save ----------------------------------------------------------------------
        mem.mem_session_start(user)
        session_id = floor.open_session(twin)
        floors = {}
        for write_only in (False, True):
            tag = f"{size}-{int(write_only)}"
            floors["create", write_only] = measure(
                lambda i: floor.save_create(twin, session_id, title=f"floor {tag} {i}", content=body[i % len(body)],
                                            digest=f"floor-{tag}-{i}", write_only=write_only),
                iterations=n,
            )
            floor.save_create(twin, session_id, title="twin", content="twin", digest=f"twin-{tag}")
            floors["duplicate", write_only] = measure(
                lambda i: floor.save_duplicate(twin, session_id, digest=f"twin-{tag}", write_only=write_only),
                iterations=n,
            )
            floor.save_create(twin, session_id, title="topic", content="v0", digest=f"topic-{tag}",
                              topic_key=f"bench-{tag}")
            floors["revise", write_only] = measure(
                lambda i: floor.save_revise(twin, session_id, topic_key=f"bench-{tag}", content=body[i % len(body)],
                                            write_only=write_only),
                iterations=n,
            )

        def through_services(**kwargs):
            return observation_save(user_id=user, config=config, **kwargs)

        def through_facade(**kwargs):
            return mem.mem_save(user, kwargs.pop("title"), kwargs.pop("content"), **kwargs)

        for face, save in (("services", through_services), ("facade", through_facade)):
            ours = measure(lambda i: save(title=f"{face} {i}", content=body[i % len(body)]), iterations=n)
            record(f"save create ({face})", size, ours, floors["create", False],
                   floor_write=floors["create", True].__dict__)
            ours = measure(lambda i: save(title=f"{face} twin", content="the same words"), iterations=n)
            record(f"save duplicate ({face})", size, ours, floors["duplicate", False],
                   floor_write=floors["duplicate", True].__dict__)
            ours = measure(
                lambda i: save(title=f"{face} topic", content=body[i % len(body)], topic_key=f"{face}-topic"),
                iterations=n,
            )
            record(f"save revise ({face})", size, ours, floors["revise", False],
                   floor_write=floors["revise", True].__dict__)

        # -- context -------------------------------------------------------------------
        ours = measure(lambda i: mem.mem_context(user), iterations=n)
        floor_context = measure(lambda i: floor.context(twin), iterations=n)
        record("context", size, ours, floor_context)
    return results
