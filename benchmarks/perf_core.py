"""The core operations through the facade, for users with short and long histories.

``writes``: a session's life in turns, each step timed: start (a new session, with its
context), save (a new memory), revise (the same topic with new content), end. ``reads``: the
context, and words-only search (a rare term, three words, a term in 90 % of the memories).
Every history size runs in the same turns, so a slow moment of the shared machine is not
mistaken for growth with the history.

Saves queue their vector row as with the default embedder, but nothing is embedded while they
are timed (``EMBEDDING_MODE = "inline"``); embedding and hybrid search are ``perf_hybrid``.
"""

from __future__ import annotations

from .perf_data import analyze, queries, write_history
from .perf_timing import line, measure, step


def user(size: int) -> str:
    return f"history-{size}"


def load(sizes: list[int]) -> None:
    for size in sizes:
        step(f"writing {size:,} memories of {user(size)}")
        write_history(user(size), size)
    analyze()


def writes(mem, *, sizes: list[int], iterations: int) -> list[dict]:
    from .corpus import Corpus

    sentences = Corpus(1).sentences
    calls = {}
    for size in sizes:
        u = user(size)
        calls[size, "start"] = lambda i, u=u: mem.mem_session_start(u)
        calls[size, "save"] = lambda i, u=u: mem.mem_save(u, f"note {i}", sentences[i % len(sentences)])
        calls[size, "revise"] = lambda i, u=u: mem.mem_save(
            u, "the deploy plan", sentences[(i * 7) % len(sentences)], topic_key="deploy-plan")
        calls[size, "end"] = lambda i, u=u: mem.mem_session_end(u, summary=f"session {i}")
    got = measure(calls, iterations=iterations, rotate=False)
    return report("writes", got)


def reads(mem, *, sizes: list[int], iterations: int) -> list[dict]:
    from ilab_memory import ILabMemory

    lexical = ILabMemory(using=mem.using, embedder=None)
    calls = {}
    for size in sizes:
        u = user(size)
        calls[size, "context"] = lambda i, u=u: mem.mem_context(u)
        for kind, query in queries().items():
            calls[size, f"search {kind}"] = lambda i, u=u, size=size, query=query: lexical.mem_search(
                u, query(u, size, i))
    got = measure(calls, iterations=iterations)
    return report("reads", got)


def report(group: str, got: dict) -> list[dict]:
    results = []
    for (size, op), sample in got.items():
        results.append({"group": group, "op": op, "size": size, **sample})
        step(line(f"{op} ({size:,} memories)", sample))
    return results
