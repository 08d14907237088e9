"""A separate process on an embedded SQLite file, for tests/runners/test_thread.py (the thread runner).

    python embedder_process.py PATH queue N        save N memories (no runner: none embedded)
    python embedder_process.py PATH embed [opts]   open the file with the thread runner and let the
                                                   thread that finds the backlog run

``embed`` prints one JSON line when its embedder stopped: how many vectors it stored, the texts
it embedded, the error that stopped it. With ``--hold`` it never returns (a test kills it).
"""

import argparse
import json
import os
import sys
import threading
import time

EMBEDDER = "tests.embedders.SlowEmbedder"


def queue(path: str, count: int) -> None:
    from ilab_memory import ILabMemory

    mem = ILabMemory.from_path(path, embedder=EMBEDDER, embedding_runner=None)
    for k in range(count):
        mem.mem_save(f"user-{k % 3}", f"Memory {k}", f"Backlog note number {k}.")
    print(json.dumps({"queued": count}), flush=True)


def embed(path: str, *, delay: float, batch: int, lease: int, go: str | None, hold: bool) -> None:
    import django  # noqa: F401  (imported before the start signal: the processes start together)

    from ilab_memory import ILabMemory, facade  # noqa: F401
    from tests.embedders import RecordingEmbedder, SlowEmbedder

    SlowEmbedder.DELAY = delay
    while go and not os.path.exists(go):
        time.sleep(0.01)
    ILabMemory.from_path(path, embedder=EMBEDDER, embedding_runner="ilab_memory.runners.thread.runner",
                         embed_batch_size=batch, embed_lease_seconds=lease)
    from tests.threads import running_thread

    thread = running_thread()
    if hold:
        threading.Event().wait()
    if thread is not None:
        thread.join()
    print(json.dumps({
        "started": thread is not None,
        "stored": thread.stored if thread else 0,
        "error": repr(thread.error) if thread and thread.error else None,
        "passages": RecordingEmbedder.passages,
    }), flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("action", choices=["queue", "embed"])
    parser.add_argument("count", type=int, nargs="?", default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per passage")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--lease", type=int, default=300)
    parser.add_argument("--go", help="start once this file exists")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args(argv)
    if args.action == "queue":
        queue(args.path, args.count)
    else:
        embed(args.path, delay=args.delay, batch=args.batch, lease=args.lease, go=args.go, hold=args.hold)


if __name__ == "__main__":
    main(sys.argv[1:])
