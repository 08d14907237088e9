"""A separate process for the reliability suites: an agent doing memory work, printing what it did.

    python worker.py sqlite PATH  MODE [options]   embedded, ILabMemory.from_path(PATH)
    python worker.py pg     JSON  MODE [options]   a site on the PostgreSQL database described by JSON

Modes: ``mixed`` (random start/save/summary/end), ``saves`` (save until killed), ``start``,
``scopes`` (start and save in each of ``--scopes`` in a random order, ``--ops`` rounds, from
the moment ``--at``, so processes race for the same (user, scope)).
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
        return ILabMemory.from_path(target, embedding_runner=None)
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
    return ILabMemory(embedding_runner=None)


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
            title, content = (last.get(user) if user in last and rng.random() < 0.2
                              else (f"{tag}-{n}", f"body {tag} {n}"))
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


def scopes(mem, *, user: str, scopes: list[str], rounds: int, seed: int, tag: str) -> None:
    rng = random.Random(seed)
    for n in range(rounds):
        for scope in rng.sample(scopes, len(scopes)):
            emit(op="start", user=user, scope=scope, session=mem.mem_session_start(user, scope=scope).session_id)
            result = mem.mem_save(user, f"{tag}-{scope}-{n}", f"body {tag} {n}", scope=scope)
            emit(op="save", user=user, scope=scope, id=result.observation.id, action=result.action,
                 title=f"{tag}-{scope}-{n}", session=result.observation.session_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "pg"])
    parser.add_argument("target")
    parser.add_argument("mode", choices=["mixed", "saves", "start", "scopes"])
    parser.add_argument("--scopes", default="")
    parser.add_argument("--at", type=float, default=0.0, help="a time.time() to begin at")
    parser.add_argument("--users", default="agent-user")
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="w")
    args = parser.parse_args()
    mem = open_memory(args.backend, args.target)
    users = args.users.split(",")
    import time

    time.sleep(max(0.0, args.at - time.time()))
    if args.mode == "mixed":
        mixed(mem, users=users, ops=args.ops, seed=args.seed, tag=args.tag)
    elif args.mode == "scopes":
        scopes(mem, user=users[0], scopes=args.scopes.split(","), rounds=args.ops, seed=args.seed, tag=args.tag)
    elif args.mode == "saves":
        saves(mem, user=users[0], tag=args.tag)
    else:
        emit(op="start", user=users[0], session=mem.mem_session_start(users[0]).session_id)


if __name__ == "__main__":
    main()
