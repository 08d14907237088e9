"""``MemoryStore``: LangGraph's long-term memory interface (``BaseStore``) over ilab_memory.

Runs over the facade's methods, so it takes an ``ILabMemory`` (in the Django process) or a
``MemoryClient`` (a remote site): both have the same signatures, values and errors. Each item
is one observation, with its sessions, privacy, scopes and search:

* **namespace** ``(user_id,)`` is the user's shared space, ``(user_id, scope)`` one of its
  scopes. ``search``'s prefix ``(user_id,)`` reads every scope of the user; no namespace
  reaches more than one user, so ``list_namespaces`` needs the user in its prefix.
* **key** is the observation's ``topic_key``: a ``put`` of a key the namespace holds revises
  that observation (the old version goes to its history). Keys are compared as topic keys
  are, case and whitespace folded. An observation written by another face without a topic key
  has its id as its key.
* **value**: ``title`` (default: the key), ``content`` (default: the other entries as
  ``name: value`` lines, so they are searchable) and ``type`` (default ``manual``) are the
  observation's fields; every other entry is kept in its metadata. ``get`` gives the value back
  as it was put, with private blocks redacted.
* **search** with ``query`` is the hybrid search, each item scored with its SearchScore's
  value (those below the store's ``min_score``, if given, left out); without, the newest
  updated first. ``filter`` selects the ``type``. ``offset + limit``
  is at most 100 without a query (a list's largest page) and ``SEARCH_MAX_LIMIT`` with one.
* **delete** is the soft delete (the observation can be restored by an operator).
* **TTL**: a ``put``'s ``ttl`` (minutes, as LangGraph counts) is the observation's ``ttl`` (in
  seconds): it expires that long after the put, and from then on no read finds it. A later put
  of the key sets the TTL again (or none). Reads never extend it: a read writes nothing, so
  ``refresh_ttl`` is not honoured and a ``TTLConfig`` asking for ``refresh_on_read`` is refused,
  as is ``sweep_interval_minutes`` (the site's hourly sweep erases what expired).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar, overload

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ..exceptions import ObservationNotFound, ValidationError
from ..scopes import ALL, SHARED
from ..validation import MAX_TTL_SECONDS, OBSERVATIONS_LIMIT, clean_min_score, normalize_topic_key

FIELDS = ("title", "content", "type")
STORE_KEY = "langgraph"  # the metadata entry that says how the value maps onto the observation
MAX_LISTED = OBSERVATIONS_LIMIT.bounds()[1]  # the most observations one list read returns


MAX_TTL_MINUTES = MAX_TTL_SECONDS // 60
# What a TTLConfig may say here: reads never refresh a TTL, and the site's sweep erases what expired.
TTL_CONFIG_ALLOWED = {"default_ttl": None, "refresh_on_read": False, "omit_expired": True,
                      "sweep_interval_minutes": None}

_Item = TypeVar("_Item", bound=Item)


class MemoryStore(BaseStore):
    """``MemoryStore(ILabMemory())`` or ``MemoryStore(MemoryClient(url, token))``; pass it as
    ``graph.compile(store=...)``. ``ttl=TTLConfig(default_ttl=minutes, refresh_on_read=False)``
    gives every put without its own ``ttl`` that one; ``min_score`` is every search's (LangGraph's
    ``search`` has no argument for it)."""

    supports_ttl = True

    # ``memory``: an ILabMemory or a MemoryClient, which answer the same calls.
    def __init__(self, memory: Any = None, *, ttl: TTLConfig | None = None, min_score: float | None = None) -> None:
        if memory is None:
            from .. import ILabMemory

            memory = ILabMemory()
        self.memory = memory
        self.ttl_config = clean_ttl_config(ttl)
        self.min_score = clean_min_score(min_score)

    # -- BaseStore -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each operation in order (a later one sees what an earlier one wrote)."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop never waits on the database or the
        network. In-process, Django's ``sync_to_async`` runs it on the one thread Django keeps
        for synchronous database work called from async code (the ORM's connections are per
        thread and may not be used from the event loop); a remote client's calls are HTTP
        only, so they go to ``asyncio.to_thread`` and run side by side."""
        ops = list(ops)
        if self._in_process():
            from asgiref.sync import sync_to_async

            return await sync_to_async(self.batch, thread_sensitive=True)(ops)
        return await asyncio.to_thread(self.batch, ops)

    # -- operations ------------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op, op.value)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"MemoryStore does not know the operation {type(op).__name__}.")

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        user_id, scope = user_and_scope(namespace)
        record = self._find(user_id, scope, key)
        return None if record is None else item_of(record, Item)

    def _put(self, op: PutOp, value: Mapping[str, Any]) -> None:
        user_id, scope = user_and_scope(op.namespace)
        key = op.key
        if not isinstance(key, str) or normalize_topic_key(key) is None:
            raise ValidationError("key", "must be a non-blank string.", code="blank")
        fields, metadata = observation_fields(key, value)
        ttl = ttl_seconds(op.ttl)
        try:
            self.memory.mem_save(user_id, fields["title"], fields["content"], type=fields["type"], topic_key=key,
                                 metadata=metadata, scope=scope, ttl=ttl)
        except ValidationError as error:
            if error.field != "topic_key":
                raise
            # The key is the topic key: the error names what the caller gave.
            raise ValidationError("key", error.message, code=error.code, limit=error.limit, size=error.size) from None

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        user_id, scope = user_and_scope(namespace)
        record = self._find(user_id, scope, key)
        if record is not None:  # deleting what is not there is done, as in every LangGraph store
            self.memory.mem_delete(user_id, record.id, scope=scope)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user_id, scope = user_and_scope(op.namespace_prefix, prefix=True)
        reach = ALL if scope is None else [scope]  # a list reads exactly its scopes
        type = type_filter(op.filter)
        wanted = op.offset + op.limit
        if op.query:
            hits = self.memory.mem_search(user_id, op.query, type=type, limit=wanted, scope=reach,
                                          min_score=self.min_score)
        else:
            if wanted > MAX_LISTED:
                raise ValidationError("limit", f"offset and limit add up to {wanted}; the limit is {MAX_LISTED}.",
                                      code="max_value", limit=MAX_LISTED, size=wanted)
            hits = self.memory.mem_list_observations(user_id, type=type, limit=wanted, scope=reach)
        items: list[SearchItem] = []
        for hit in hits[op.offset:]:
            # A hit is compact (a preview); the item carries the whole value.
            record = self.memory.mem_get_observation(user_id, hit.id, scope=[hit.scope])
            items.append(item_of(record, SearchItem, score=None if hit.score is None else hit.score.value))
        return items

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        users = {condition.path[0] for condition in conditions
                 if condition.match_type == "prefix" and condition.path and condition.path[0] != "*"}
        if len(users) != 1:
            raise InvalidNamespaceError(
                "MemoryStore lists one user's namespaces: give prefix=(user_id,). "
                "No namespace reaches more than one user."
            )
        (user_id,) = users
        stats = self.memory.mem_stats(user_id, scope=ALL)
        namespaces = [namespace_of(user_id, scope) for scope, live in stats.observations_by_scope.items() if live]
        namespaces = [ns for ns in namespaces if all(matches(condition, ns) for condition in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]

    # -- helpers ---------------------------------------------------------------------------

    def _find(self, user_id: str, scope: str, key: str) -> Any:
        """The live observation of ``key`` in exactly ``scope``, in full; None if there is none."""
        exact = [scope]
        if not isinstance(key, str) or normalize_topic_key(key) is None:
            return None  # no put stores a blank key
        hits = self.memory.mem_list_observations(user_id, topic_key=key, limit=1, scope=exact)
        if hits:
            return self.memory.mem_get_observation(user_id, hits[0].id, scope=exact)
        try:  # an observation without a topic key is found by its id
            record = self.memory.mem_get_observation(user_id, key, scope=exact)
        except ObservationNotFound:
            return None
        return record if record.topic_key is None else None

    def _in_process(self) -> bool:
        from .. import ILabMemory

        return isinstance(self.memory, ILabMemory)


def ttl_seconds(minutes: object) -> timedelta | None:
    """A put's ``ttl`` (LangGraph counts minutes) as the observation's ``ttl``; None: never.
    A bad one is refused here, in minutes, rather than in the seconds the facade counts."""
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise ValidationError("ttl", f"must be a number of minutes, not {type(minutes).__name__}.",
                              code="invalid_type")
    if not 0 < minutes <= MAX_TTL_MINUTES:  # also false for NaN
        code, limit = ("max_value", MAX_TTL_MINUTES) if minutes > MAX_TTL_MINUTES else ("min_value", None)
        raise ValidationError("ttl", f"must be more than 0 and at most {MAX_TTL_MINUTES} minutes (a century).",
                              code=code, limit=limit)
    return timedelta(minutes=minutes)


def clean_ttl_config(config: TTLConfig | None) -> TTLConfig | None:
    """``config`` if this store can keep its promises: a ``default_ttl`` (checked as a put's), no
    refresh on read, no sweep of its own."""
    if config is None:
        return None
    for name, value in config.items():
        if name not in TTL_CONFIG_ALLOWED:
            raise ValidationError("ttl", f"{name!r} is not a TTLConfig entry.", code="unknown_field")
        if name == "default_ttl":
            ttl_seconds(value)
        elif value is not None and value != TTL_CONFIG_ALLOWED[name]:
            reason = {
                "refresh_on_read": "reads never extend a TTL here (a read writes nothing): set it to False",
                "omit_expired": "expired items are always omitted: leave it out or set it to True",
                "sweep_interval_minutes": "the site's hourly sweep (ilab_memory_erase_expired) erases what "
                                          "expired: leave it out",
            }[name]
            raise ValidationError("ttl", f"{name}: {reason}.", code="unsupported")
    return TTLConfig(**config)


@overload
def user_and_scope(namespace: tuple[str, ...], *, prefix: Literal[False] = ...) -> tuple[str, str]: ...
@overload
def user_and_scope(namespace: tuple[str, ...], *, prefix: bool) -> tuple[str, str | None]: ...
def user_and_scope(namespace: tuple[str, ...], *, prefix: bool = False) -> tuple[str, str | None]:
    """``(user_id,)`` is the shared space (as a search prefix: every scope), ``(user_id, scope)`` a scope."""
    namespace = tuple(namespace)
    if not 1 <= len(namespace) <= 2 or not all(isinstance(label, str) and label for label in namespace):
        raise InvalidNamespaceError(
            f"A MemoryStore namespace is (user_id,) or (user_id, scope); got {len(namespace)} labels."
        )
    if len(namespace) == 1:
        return namespace[0], None if prefix else SHARED
    return namespace[0], namespace[1]


def namespace_of(user_id: str, scope: str) -> tuple[str, ...]:
    return (user_id,) if scope == SHARED else (user_id, scope)


def observation_fields(key: str, value: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """The observation's title, content and type from a put's value, and its metadata: the
    other entries, and which fields the value gave (so ``get`` returns the value as put)."""
    if not isinstance(value, dict):
        raise ValidationError("value", "must be a dict.", code="invalid_type")
    if STORE_KEY in value:
        raise ValidationError("value", f"must not hold the entry {STORE_KEY!r}: MemoryStore keeps its own there.",
                              code="reserved_key")
    extra = {name: entry for name, entry in value.items() if name not in FIELDS}
    given = sorted(name for name in FIELDS if name in value)
    fields = {
        "title": value.get("title", key),
        "content": value["content"] if "content" in value else as_text(extra),
        "type": value.get("type", "manual"),
    }
    return fields, {**extra, STORE_KEY: {"key": key, "fields": given}}


def as_text(entries: dict[str, Any]) -> str:
    """``name: value`` lines (JSON for what is not a string): the words search finds."""
    lines = [f"{name}: {entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False)}"
             for name, entry in entries.items()]
    return "\n".join(lines) or "(empty)"


def item_of(record: Any, cls: type[_Item], **extra: Any) -> _Item:
    """The LangGraph item of an observation (``ObservationRecord``)."""
    metadata = dict(record.metadata)
    stored = metadata.pop(STORE_KEY, None)
    if isinstance(stored, dict):
        key, given = stored.get("key", record.topic_key), stored.get("fields", [])
    else:  # written by another face: every field is the value's
        key, given = record.topic_key or record.id, list(FIELDS)
    value = {**metadata, **{name: getattr(record, name) for name in given}}
    return cls(namespace=namespace_of(record.user_id, record.scope), key=key, value=value,
               created_at=datetime.fromisoformat(record.created_at),
               updated_at=datetime.fromisoformat(record.updated_at), **extra)


def type_filter(filter: dict[str, Any] | None) -> str | None:
    """The observation type a search's ``filter`` selects: ``{"type": t}`` or ``{"type": {"$eq": t}}``."""
    if not filter:
        return None
    if set(filter) != {"type"}:
        raise ValidationError("filter", "can select the type only ({'type': 'decision'}).", code="unsupported_filter")
    wanted = filter["type"]
    if isinstance(wanted, dict) and set(wanted) == {"$eq"}:
        wanted = wanted["$eq"]
    if not isinstance(wanted, str):
        raise ValidationError("filter", "type must be one type, a string.", code="unsupported_filter")
    return wanted


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts (prefix) or ends (suffix) with the condition's path; ``*`` is any label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(wanted == "*" or label == wanted for label, wanted in pairs)
