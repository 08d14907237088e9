"""A separate process for the reliability suites: an agent doing memory work, printing what it did.

    python worker.py sqlite PATH  MODE [options]   embedded, ILabMemory.from_path(PATH)
    python worker.py pg     JSON  MODE [options]   a site on the PostgreSQL database described by JSON

Modes: ``mixed`` (random start/save/summary/end), ``saves`` (save until killed), ``start``.
Every acknowledged call is one JSON line on stdout, flushed before the next call, so a parent
that kills this process knows exactly which writes were acknowledged.
"""

import argparse
import json
import random
import sys


def open_memory(backend: str, target: str):
    from ilab_memory import ILabMemory

    # These suites measure writes: no background embedder competes with them for the cores.
    if backend == "sqlite":
        return ILabMemory.from_path(target, embedding_mode="inline")
    import django
    from django.conf import settings

    settings.configure(
        INSTALLED_APPS=["ilab_memory"],
        DATABASES={"default": json.loads(target)},
        USE_TZ=True,
        TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    return ILabMemory(embedding_mode="inline")


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def mixed(mem, *, users: list[str], ops: int, seed: int, tag: str, emit=emit) -> None:
    from ilab_memory.exceptions import NoActiveSession

    rng = random.Random(seed)
    last = {}
    for n in range(ops):
        user = rng.choice(users)
        roll = rng.random()
        if roll < 0.15:
            emit(op="start", user=user, session=mem.mem_session_start(user).session_id)
        elif roll < 0.25:
            emit(op="summary", user=user, session=mem.mem_session_summary(user, f"{tag} summary {n}").id)
        elif roll < 0.35:
            try:
                emit(op="end", user=user, session=mem.mem_session_end(user).id)
            except NoActiveSession:
                emit(op="end", user=user, session=None)
        else:
            # One save in five repeats this agent's previous one: a duplicate, not a new memory.
            title, content = last.get(user) if user in last and rng.random() < 0.2 else (f"{tag}-{n}", f"body {tag} {n}")
            result = mem.mem_save(user, title, content)
            last[user] = (title, content)
            emit(op="save", user=user, id=result.observation.id, action=result.action, title=title)


def saves(mem, *, user: str, tag: str) -> None:
    emit(op="ready")
    n = 0
    while True:
        result = mem.mem_save(user, f"{tag}-{n}", f"crash body {tag} {n} " + "x" * 200, metadata={"n": n})
        emit(op="save", user=user, id=result.observation.id, action=result.action, title=f"{tag}-{n}")
        n += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "pg"])
    parser.add_argument("target")
    parser.add_argument("mode", choices=["mixed", "saves", "start"])
    parser.add_argument("--users", default="agent-user")
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="w")
    args = parser.parse_args()
    mem = open_memory(args.backend, args.target)
    users = args.users.split(",")
    if args.mode == "mixed":
        mixed(mem, users=users, ops=args.ops, seed=args.seed, tag=args.tag)
    elif args.mode == "saves":
        saves(mem, user=users[0], tag=args.tag)
    else:
        emit(op="start", user=users[0], session=mem.mem_session_start(users[0]).session_id)


if __name__ == "__main__":
    main()
