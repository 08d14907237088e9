"""The core operations through the facade, for users with short and long histories.

``writes``: a session's life in turns, each step timed: start (a new session, with its
context), save (a new memory), revise (the same topic with new content), end. ``reads``: the
context, and words-only search (a rare term, three words, a term in 90 % of the memories).
``scopes``: the same user's start, save, context and searches in the shared space and in a
scope (``SCOPE``, which also reads the shared space), in the same turns. Every history size runs
in the same turns, so a slow moment of the shared machine is not mistaken for growth with the
history.

Saves queue their vector row as with the default embedder, but nothing is embedded while they
are timed (``EMBEDDING_RUNNER = None``); embedding and hybrid search are ``perf_hybrid``.
"""

from __future__ import annotations

from .perf_data import SEED, analyze, queries, write_history
from .perf_timing import line, measure, step

SCOPE = "support"


def user(size: int) -> str:
    return f"history-{size}"


def load(sizes: list[int], *, scoped: bool = False) -> None:
    """Each user's history in the shared space; with ``scoped``, a tenth more in ``SCOPE``."""
    for size in sizes:
        step(f"writing {size:,} memories of {user(size)}")
        write_history(user(size), size)
        if scoped:
            write_history(user(size), max(1, size // 10), seed=SEED + 1, scope=SCOPE)
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


def scopes(mem, *, sizes: list[int], iterations: int) -> list[dict]:
    from ilab_memory import ILabMemory

    from .corpus import Corpus

    lexical = ILabMemory(using=mem.using, embedder=None)
    sentences = Corpus(1).sentences
    rare, common = queries()["rare term"], queries()["common term"]
    calls = {}
    for size in sizes:
        u = user(size)
        for scope, label in (("", "shared"), (SCOPE, f"scope {SCOPE}")):
            calls[size, f"start ({label})"] = lambda i, u=u, scope=scope: mem.mem_session_start(u, scope=scope)
            calls[size, f"save ({label})"] = lambda i, u=u, scope=scope: mem.mem_save(
                u, f"note {i}", sentences[i % len(sentences)], scope=scope)
            calls[size, f"context ({label})"] = lambda i, u=u, scope=scope: mem.mem_context(u, scope=scope)
            calls[size, f"search rare term ({label})"] = lambda i, u=u, size=size, scope=scope: lexical.mem_search(
                u, rare(u, size, i), scope=scope)
            calls[size, f"search common term ({label})"] = lambda i, u=u, scope=scope: lexical.mem_search(
                u, common(u, 0, i), scope=scope)
    got = measure(calls, iterations=iterations)
    return report("scopes", got)


def report(group: str, got: dict) -> list[dict]:
    results = []
    for (size, op), sample in got.items():
        results.append({"group": group, "op": op, "size": size, **sample})
        step(line(f"{op} ({size:,} memories)", sample))
    return results
