"""The eleven memory tools: input schemas, annotations, the facade call, and what an LLM reads.

Each tool is named after the ``ILabMemory`` method it calls and takes that method's parameters.
Input schemas carry the limits of the ``ILAB_MEMORY`` settings and the counts' bounds of
``validation``; the facade and the services below it remain the judge of values: text lengths,
blank values, JSON types of values, type slugs, metadata size (after ``<private>`` redaction,
exactly as over the HTTP API) and count bounds. ``check_arguments`` enforces what only this face
can, as the API's views do and in their words (required and unknown arguments, counts that are
integers, flags that are booleans), never echoing a value. Results are encoded by
``ilab_memory.encoding``, in the HTTP API's shapes, and described by its schemas. The texts say
what happened to this call: how each search result was found, how many private blocks this
request held. Every call acts in the caller's scope, which the transport supplies:
no tool takes a scope argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

from ..conf import Config
from ..encoding import encode, listing_schema, memory_field_schema, schema
from ..services.privacy import redact, redact_json, shown_key
from ..types import (
    DeleteResult,
    MemoryStats,
    ObservationCompact,
    ObservationRecord,
    SaveResult,
    SessionRecord,
    SessionStartResponse,
    Timeline,
)
from ..validation import (
    CONTEXT_LIMIT,
    MEMORY_FIELDS,
    MIN_SCORE_MINIMUM,
    MOMENT,
    SEARCH_LIMIT,
    TIMELINE_AFTER,
    TIMELINE_BEFORE,
    UPDATABLE_FIELDS,
    Count,
    MemoryField,
)

OBSERVATION_VOCABULARY = ("manual", "decision", "architecture", "bugfix", "pattern", "config", "discovery",
                          "learning", "preference")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: ToolAnnotations
    run: Callable[[Any, str, str, dict[str, Any]], tuple[dict[str, Any], str]]
    """(memory, user_id, scope, checked arguments) -> (structured result, text for the LLM)."""


# ----------------------------------------------------------------------------- input schemas

# The memory's fields an agent writes text into (their private blocks are counted for it).
TEXT_FIELDS = tuple(field.name for field in MEMORY_FIELDS if field.kind == "text")


def _user_id(config: Config) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": config.MAX_USER_ID_CHARS,
        "description": "Whose memory. Leave it out: it defaults to the caller's own user_id. Naming another "
        "user needs the ilab_memory.act_for_any_user permission (agent backends serving many users).",
    }


def _observation_id() -> dict[str, Any]:
    return {"type": "string", "description": "An observation id, as returned by mem_save, mem_search or mem_context."}


def _type(config: Config, *, purpose: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}
    if config.OBSERVATION_TYPES is not None:
        schema["enum"] = list(config.OBSERVATION_TYPES)
        vocabulary = ", ".join(config.OBSERVATION_TYPES)
    else:
        vocabulary = ", ".join(OBSERVATION_VOCABULARY)
    schema["description"] = f"{purpose} A lowercase slug; usual values: {vocabulary}."
    return schema


def _advice(config: Config, *, update: bool) -> dict[str, str]:
    """What agents are told of a memory's fields beyond their declaration's words
    (``validation.MEMORY_FIELDS``): how to write a good one, with examples and the site's limits."""
    vocabulary = ", ".join(config.OBSERVATION_TYPES or OBSERVATION_VOCABULARY)
    if update:
        topic_key = "New topic key; null removes the topic."
        metadata = "New metadata object; null clears it."
    else:
        topic_key = ("Optional stable key for a fact that evolves (e.g. \"database-choice\"): saving again with the "
                     "same topic_key revises that memory instead of adding one. Normalized: trimmed, lowercased, "
                     "spaces become '-'.")
        metadata = (f"Optional JSON object of extra facts (files, tags, links); at most "
                    f"{config.MAX_METADATA_BYTES} bytes serialized and {config.MAX_METADATA_DEPTH} levels deep.")
    return {
        "title": "Short, specific and searchable, e.g. \"Use PostgreSQL in production\".",
        "content": "The memory itself, self-contained: what, why, and where it applies. Wrap secrets in "
        "<private>…</private>; they are replaced by [REDACTED] before anything is stored.",
        "type": f"{'New kind' if update else 'Kind'} of memory. A lowercase slug; usual values: {vocabulary}.",
        "topic_key": topic_key,
        "metadata": metadata,
    }


def memory_properties(config: Config, *, update: bool,
                      fields: tuple[MemoryField, ...] = MEMORY_FIELDS) -> dict[str, Any]:
    """The memory's fields as mem_save (or mem_update) takes them: each declared field's schema
    (``encoding.memory_field_schema``: its kind, bound and words), and the advice above."""
    advice = _advice(config, update=update)
    properties = {}
    for field in fields:
        properties[field.name] = memory_field_schema(field, config, update=update)
        if field.name in advice:
            properties[field.name]["description"] = advice[field.name]
    return properties


def _summary(config: Config, *, optional: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": ["string", "null"] if optional else "string",
                              "maxLength": config.MAX_SUMMARY_CHARS}
    if optional:
        schema["description"] = ("Final narrative summary of the session. Without it, the summary stored with "
                                 "mem_session_summary is kept, else an automatic one is written.")
    else:
        schema["minLength"] = 1
        schema["description"] = ("Narrative summary of the session so far: what was done, decided and left "
                                 "open. Replaces the session's previous summary; the session stays open.")
    return schema


def _moment(description: str, *, nullable: bool = False) -> dict[str, Any]:
    return {"type": ["string", "null"] if nullable else "string", "description": f"{description} {MOMENT}"}


def _period() -> dict[str, Any]:
    return {
        "since": _moment("Only memories that happened at or after this moment."),
        "until": _moment("Only memories that happened before this moment (not at it)."),
    }


def _count(count: Count, config: Config, default: int, description: str) -> dict[str, Any]:
    minimum, maximum = count.bounds(config)
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "default": default, "description": description}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# ------------------------------------------------------------------------------ argument checks

# The HTTP API's words for what only a face checks (DRF's, as its 400s answer them), so a tool
# error is the API's body for the same bad input. Values themselves (strings, blanks, limits,
# type slugs, metadata, count bounds) are judged below this face, in the same words for both.
INVALID_INPUT = "Invalid input."
REQUIRED = "This field is required."
UNKNOWN_FIELD = "Is not a field of this endpoint; it accepts: {accepted}."
NOT_AN_INTEGER = "A valid integer is required."
NOT_A_BOOLEAN = "Must be a valid boolean."
NOT_AN_OBJECT = "Invalid data. Expected a dictionary, but got {datatype}."


class InvalidArguments(Exception):
    """Arguments refused by this face before the memory is called; ``body`` is the API's 400 body."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(INVALID_INPUT)
        self.body = {"detail": INVALID_INPUT, "code": "invalid", "errors": errors}

    @classmethod
    def not_an_object(cls, arguments) -> InvalidArguments:
        return cls({"non_field_errors": [NOT_AN_OBJECT.format(datatype=type(arguments).__name__)]})


def _integer(value) -> int | None:
    """``value`` as a count if JSON sent an integer (5 and 5.0 alike), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments, once the checks only this face makes have passed, as the API makes them:
    no unknown argument, every required one present, counts integers and flags booleans.

    ``null`` for an optional argument whose schema does not take null counts as "not given"
    (models often send it). Raises InvalidArguments, naming every argument at fault in the API's
    words; a name that holds a private block is shown as ``?``.
    """
    arguments = arguments or {}
    properties = schema["properties"]
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        message = UNKNOWN_FIELD.format(accepted=", ".join(properties))
        raise InvalidArguments({shown_key(name): [message] for name in unknown})
    given = {
        name: value for name, value in arguments.items()
        if value is not None or "null" in _types(properties[name]) or name in schema["required"]
    }
    missing = [name for name in schema["required"] if name not in given]
    if missing:
        raise InvalidArguments({name: [REQUIRED] for name in missing})
    checked: dict[str, Any] = {}
    for name, value in given.items():
        kind = _types(properties[name])
        if "integer" in kind:
            value = _integer(value)
            if value is None:
                raise InvalidArguments({name: [NOT_AN_INTEGER]})
        elif "boolean" in kind and not isinstance(value, bool):
            raise InvalidArguments({name: [NOT_A_BOOLEAN]})
        checked[name] = value
    return checked


def _types(rule: dict[str, Any]) -> list[str]:
    return rule["type"] if isinstance(rule["type"], list) else [rule["type"]]


# -------------------------------------------------------------------------------- text helpers


def _memories(n: int) -> str:
    return "1 memory" if n == 1 else f"{n} memories"


def _when(stamp: str | None) -> str:
    return "—" if stamp is None else stamp[:16].replace("T", " ") + " UTC"


def _score(score: dict[str, Any] | None) -> str:
    return "" if score is None else f" — score {score['value']:.3g}"


def _elsewhere(item: dict[str, Any], scope: str) -> str:
    """A scoped agent also reads the shared space but cannot change it: say so where it shows
    (what a tool reads is its own scope or the shared space)."""
    return "" if item["scope"] == scope else " — shared space, read-only here"


def _scope_name(scope: str) -> str:
    return scope or "shared space"


def _compact_line(position: int | None, item: dict[str, Any], scope: str = "") -> str:
    head = f"{position}. " if position is not None else "- "
    topic = f" — topic {item['topic_key']}" if item["topic_key"] else ""
    return (f"{head}[{item['type']}] {item['title']}{_score(item['score'])} — id {item['id']}{topic}"
            f" — happened {_when(item['happened_at'])}{_elsewhere(item, scope)}\n   {item['preview']}")


def _compact_list(items: list[dict[str, Any]], empty: str, scope: str = "") -> str:
    if not items:
        return empty
    return "\n".join(_compact_line(i, item, scope) for i, item in enumerate(items, 1))


def _summary_kind(is_auto_generated: bool, summary: str | None) -> str:
    if summary is None:
        return "no summary"
    return "Auto" if is_auto_generated else "Human"


def _session_line(record: dict[str, Any]) -> str:
    state = "open" if record["status"] == "active" else f"closed {_when(record['ended_at'])}"
    summary = record["summary"]
    kind = _summary_kind(record["is_auto_generated"], summary)
    text = f"[{kind}] {summary}" if summary is not None else "[no summary yet]"
    return f"Session {record['id']} ({state}, {_memories(record['observation_count'])}): {text}"


# ------------------------------------------------------------------------------------- tools


def _start(memory, user_id, scope, args):
    data = encode(memory.mem_session_start(user_id, scope=scope))
    if data["is_new"]:
        lines = [(f"NEW session {data['session_id']}: greet the user; this conversation starts fresh, "
                 "with the context below.")]
    else:
        lines = [(f"CONTINUING session {data['session_id']} (it was already open): pick up where you left "
                 "off; do not greet as if this were a new conversation.")]
    lines.append("")
    if data["sessions_context"]:
        lines.append("Past sessions, newest first:")
        for past in data["sessions_context"]:
            kind = _summary_kind(past["is_auto_generated"], past["summary"])
            lines.append(f"- [{kind}] {_when(past['started_at'])} → {_when(past['ended_at'])}, "
                         f"{_memories(past['observation_count'])}: {past['summary'] or '(no summary)'}")
    else:
        lines.append("Past sessions: none yet.")
    lines.append("")
    if data["memories"]:
        lines.append("Memories that matter now (ContextScore: recency × type weight × reinforcement):")
        lines.append(_compact_list(data["memories"], "", scope))
    else:
        lines.append("Memories: none yet. Save what is worth remembering with mem_save.")
    return data, "\n".join(lines)


def _private_blocks(args: dict[str, Any]) -> int:
    """How many private blocks the text arguments of this call held (after the services accepted
    them): a saved row's ``redacted_blocks`` counts every write to it, not this one."""
    blocks = 0
    for name in TEXT_FIELDS:
        if isinstance(args.get(name), str):
            blocks += redact(args[name]).blocks
    if isinstance(args.get("metadata"), dict):
        blocks += redact_json(args["metadata"])[1]
    return blocks


def _redaction_note(blocks: int) -> str:
    if not blocks:
        return ""
    counted = "1 private block was" if blocks == 1 else f"{blocks} private blocks were"
    return f" {counted} replaced by [REDACTED]: nothing private was stored."


def _times(record: dict[str, Any]) -> str:
    """When a record's memory happened, and when it expires if it says."""
    expires = f" — expires {_when(record['expires_at'])}" if record["expires_at"] else ""
    return f"happened {_when(record['happened_at'])}{expires}"


def _save(memory, user_id, scope, args):
    given = {field.name: args[field.name] for field in MEMORY_FIELDS if field.name in args}
    data = encode(memory.mem_save(user_id, scope=scope, **given))
    record = data["observation"]
    verb = {
        "created": "Saved a new memory",
        "revised": f"Revised the memory with topic {record['topic_key']} (revision {record['revision_count']}; "
                   "the previous version is kept in its history)",
        "duplicate": f"Already remembered: counted a duplicate ({_seen(record['duplicate_count'])})",
    }[data["action"]]
    text = (f"{verb}: [{record['type']}] {record['title']} — id {record['id']}, session {record['session_id']} — "
            f"{_times(record)}.")
    return data, text + _redaction_note(_private_blocks(args))


def _summary_tool(memory, user_id, scope, args):
    data = encode(memory.mem_session_summary(user_id, args["summary"], scope=scope))
    return data, f"Summary stored; the session stays open. {_session_line(data)}"


def _end(memory, user_id, scope, args):
    data = encode(memory.mem_session_end(user_id, args.get("summary"), scope=scope))
    return data, f"Session closed. {_session_line(data)}"


def _found_by(result: dict[str, Any]) -> str:
    """How a search result was found, from its score's breakdown: words (all or some), or meaning alone."""
    breakdown = result["score"]["breakdown"]
    if breakdown.get("relevance") is None:
        return "meaning"
    return "all" if breakdown.get("all_terms") else "some"


FOUND_BY = {"all": "holding every term", "some": "holding some of the terms",
            "meaning": "close in meaning only"}


def _period_read(results: list[dict[str, Any]]) -> str:
    """The period a date phrase of the query was read as (the same on every result), as a line."""
    period = results[0]["score"]["breakdown"].get("period")
    if period is None:
        return ""
    return (f"\nRead \"{period['phrase']}\" as {_when(period['start'])} to {_when(period['end'])}: what happened "
            "then ranks higher; nothing else is left out.")


def _in_period(args: dict[str, Any]) -> str:
    return " in that period" if args.get("since") or args.get("until") else ""


def _search(memory, user_id, scope, args):
    results = encode(memory.mem_search(user_id, args["query"], type=args.get("type"), limit=args.get("limit"),
                                       min_score=args.get("min_score"), scope=scope, since=args.get("since"),
                                       until=args.get("until"), time_zone=args.get("time_zone")))
    data = {"results": results}
    if not results:
        return data, f"No memories matched{_in_period(args)}. Try other words, fewer terms, or mem_context."
    found_by = [_found_by(result) for result in results]
    counts = ", ".join(f"{found_by.count(way)} {words}" for way, words in FOUND_BY.items() if way in found_by)
    lines = [
        _compact_line(i, result, scope).replace(" — id ", f" — {FOUND_BY[way]} — id ", 1)
        for i, (result, way) in enumerate(zip(results, found_by), 1)
    ]
    return data, (f"{_memories(len(results))} found ({counts}), best first:{_period_read(results)}\n"
                  + "\n".join(lines))


def _context(memory, user_id, scope, args):
    memories = encode(memory.mem_context(user_id, limit=args.get("limit"), scope=scope, since=args.get("since"),
                                         until=args.get("until")))
    data = {"memories": memories}
    if not memories:
        if _in_period(args):
            return data, "No memories happened in that period."
        return data, "No memories yet. Save what is worth remembering with mem_save."
    return data, "Memories ranked by ContextScore (recency × type weight × reinforcement):\n" + _compact_list(
        memories, "", scope
    )


def _seen(n: int) -> str:
    return "seen once" if n == 1 else f"seen {n} times"


def _record_text(record: dict[str, Any], scope: str) -> str:
    topic = f" — topic {record['topic_key']}" if record["topic_key"] else ""
    return (f"[{record['type']}] {record['title']}\n"
            f"id {record['id']} — session {record['session_id']}{topic} — "
            f"revision {record['revision_count']} — {_seen(record['duplicate_count'])} — "
            f"updated {_when(record['updated_at'])} — {_times(record)}{_elsewhere(record, scope)}\n\n"
            f"{record['content']}")


def _get(memory, user_id, scope, args):
    data = encode(memory.mem_get_observation(user_id, args["observation_id"], scope=scope))
    return data, _record_text(data, scope)


def _update(memory, user_id, scope, args):
    fields = {k: v for k, v in args.items() if k not in ("observation_id", "user_id")}
    data = encode(memory.mem_update(user_id, args["observation_id"], scope=scope, **fields))
    head = (f"Updated (revision {data['revision_count']}; the previous version is kept)."
            + _redaction_note(_private_blocks(fields)))
    return data, head + "\n" + _record_text(data, scope)


def _delete(memory, user_id, scope, args):
    data = encode(memory.mem_delete(user_id, args["observation_id"], hard=args.get("hard", False), scope=scope))
    if data["hard"]:
        return data, f"Erased observation {data['id']}, its history and its search-index entry."
    return data, f"Deleted observation {data['id']}: hidden from search, context and reads."


def _timeline(memory, user_id, scope, args):
    data = encode(memory.mem_timeline(user_id, args["observation_id"], before=args.get("before", 5),
                                      after=args.get("after", 5), scope=scope))
    lines = [f"Session {data['session_id']}, in the order written:"]
    lines += [_compact_line(None, item, scope) for item in data["before"]]
    lines.append(_compact_line(None, data["anchor"], scope).replace("- ", "> ", 1))
    lines += [_compact_line(None, item, scope) for item in data["after"]]
    return data, "\n".join(lines)


def _stats(memory, user_id, scope, args):
    data = encode(memory.mem_stats(user_id, scope=scope))
    by_type = ", ".join(f"{kind} {n}" for kind, n in data["observations_by_type"].items()) or "none"
    # The shared space alone reads as it did before scopes; a scope's counts say what they hold.
    by_scope = ", ".join(f"{_scope_name(name)} {n}" for name, n in data["observations_by_scope"].items()) or "none"
    where = f"Scope {scope} and the shared space (live memories by scope: {by_scope}). " if scope else ""
    return data, where + (
        f"Sessions: {data['sessions']} ({data['active_sessions']} active, {data['completed_sessions']} completed; "
        f"summaries: {data['human_summaries']} human, {data['auto_summaries']} auto). "
        f"Memories: {data['observations']} live, {data['deleted_observations']} deleted, "
        f"{data['revisions']} earlier versions kept. By type: {by_type}."
        + (f" {data['waiting_for_vector']} not yet searchable by meaning (found by their words meanwhile)."
           if data["waiting_for_vector"] else "")
    )


def tool_specs(config: Config) -> list[ToolSpec]:
    """The tools, with the limits of ``config`` in their input schemas."""
    user = {"user_id": _user_id(config)}
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return [
        ToolSpec(
            "mem_session_start", "Start or continue the user's session",
            "Call this first, whenever the user shows up (start of every conversation). Returns the active "
            "session (reused if the user was active within the last "
            f"{config.SESSION_TIMEOUT_HOURS} hours, else a new one), summaries of the user's recent past sessions "
            "(each marked Human or Auto) and the memories that matter most now. is_new tells you whether to "
            "greet the user or continue where you left off. Sessions belong to the server: never invent an id.",
            _object({**user}),
            schema(SessionStartResponse),
            ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False),
            _start,
        ),
        ToolSpec(
            "mem_save", "Remember something",
            "Save one typed memory (a decision, preference, bug fix, configuration, discovery …) to the user's "
            "durable memory, in the active session (opened if needed). Same topic_key as a live memory: that "
            "memory is revised (action \"revised\", old version kept). Same type, title and content within "
            f"{config.DEDUPE_WINDOW_MINUTES} minutes: counted as a duplicate. Otherwise created. Over-long or "
            "blank input is refused, never truncated. happened_at says when what it tells happened (default: "
            "now); expires_at or ttl make a short-lived note that disappears by itself.",
            _object({
                **user,
                **memory_properties(config, update=False),
            }, required=tuple(field.name for field in MEMORY_FIELDS if field.required)),
            schema(SaveResult),
            ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=False),
            _save,
        ),
        ToolSpec(
            "mem_session_summary", "Summarize the session so far",
            "Store a narrative summary on the active session without closing it (call it at milestones). "
            "It replaces the session's previous summary and is marked Human, never Auto.",
            _object({**user, "summary": _summary(config, optional=False)}, required=("summary",)),
            schema(SessionRecord),
            ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False),
            _summary_tool,
        ),
        ToolSpec(
            "mem_session_end", "End the session",
            "Close the active session now, when the work is done or the user says goodbye. A non-blank "
            "summary is stored; a blank or missing one never wipes the summary already stored. Fails with "
            "code no_active_session when no session is open.",
            _object({**user, "summary": _summary(config, optional=True)}),
            schema(SessionRecord),
            ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=False),
            _end,
        ),
        ToolSpec(
            "mem_search", "Search memories",
            "Full-text search of the user's memories, best first. Words and \"quoted phrases\", and meaning: memories "
            "holding every term rank first, memories holding some of them or close in meaning follow (the "
            "score's breakdown says which: all_terms, standing). A date phrase in the query (\"last week\", "
            "\"in March\", \"ayer\") favours what happened then, never hiding the rest; since and until keep to "
            "a period. Results are previews: read one in full with mem_get_observation. Read-only.",
            _object({
                **user,
                "query": {"type": "string", "minLength": 1, "maxLength": config.MAX_QUERY_CHARS,
                          "description": "Words and \"quoted phrases\"."},
                "type": _type(config, purpose="Only memories of this type."),
                "limit": _count(SEARCH_LIMIT, config, config.SEARCH_DEFAULT_LIMIT, "How many results at most."),
                "min_score": {"type": "number", "minimum": MIN_SCORE_MINIMUM,
                              "description": "Leave out results whose score is below this (one scale for every "
                              "query). Before putting results into a prompt, 0.2 keeps most answers and leaves "
                              "out most unrelated results; absent: every result."},
                **_period(),
                "time_zone": {"type": "string",
                              "description": "The user's IANA time zone (Europe/Madrid), in which the query's "
                              "date phrases are read. Default: the server's time zone."},
            }, required=("query",)),
            listing_schema("results", ObservationCompact),
            read_only,
            _search,
        ),
        ToolSpec(
            "mem_context", "Memories that matter now",
            "The user's memories ranked as at session start (recency × type weight × reinforcement), on "
            "demand; since and until keep to what happened in a period. Read-only: touches no session.",
            _object({
                **user,
                "limit": _count(CONTEXT_LIMIT, config, config.CONTEXT_MEMORIES, "How many memories at most."),
                **_period(),
            }),
            listing_schema("memories", ObservationCompact),
            read_only,
            _context,
        ),
        ToolSpec(
            "mem_get_observation", "Read one memory in full",
            "One memory with its full content and counters. Unknown, deleted, another user's or another "
            "scope's ids all answer code observation_not_found. Read-only.",
            _object({**user, "observation_id": _observation_id()}, required=("observation_id",)),
            schema(ObservationRecord),
            read_only,
            _get,
        ),
        ToolSpec(
            "mem_update", "Change a memory",
            f"Change some fields of a memory (at least one of {', '.join(UPDATABLE_FIELDS)}). "
            "The previous version is kept in its history, revision_count grows, "
            "and the memory moves to the active session. "
            "Only memories of the scope this server acts in can be changed; others answer "
            "observation_not_found.",
            _object({
                **user,
                "observation_id": _observation_id(),
                **memory_properties(config, update=True),
            }, required=("observation_id",)),
            schema(ObservationRecord),
            ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=False),
            _update,
        ),
        ToolSpec(
            "mem_delete", "Delete a memory",
            "Soft delete (default) hides a memory everywhere; hard=true erases it with its history and search "
            "entry, for good. Only memories of the scope this server acts in can be deleted; others answer "
            "observation_not_found.",
            _object({
                **user,
                "observation_id": _observation_id(),
                "hard": {"type": "boolean", "default": False,
                         "description": "true: erase the row, its history and index entry; cannot be undone."},
            }, required=("observation_id",)),
            schema(DeleteResult),
            ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                            open_world_hint=False),
            _delete,
        ),
        ToolSpec(
            "mem_timeline", "What was written around a memory",
            "The memories the same session wrote just before and after this one, in order. Read-only.",
            _object({
                **user,
                "observation_id": _observation_id(),
                "before": _count(TIMELINE_BEFORE, config, 5, "How many earlier memories."),
                "after": _count(TIMELINE_AFTER, config, 5, "How many later memories."),
            }, required=("observation_id",)),
            schema(Timeline),
            read_only,
            _timeline,
        ),
        ToolSpec(
            "mem_stats", "Memory statistics",
            "Counts of the user's sessions (active, completed, Human and Auto summaries) and memories (live, "
            "deleted, earlier versions, per type). Read-only.",
            _object({**user}),
            schema(MemoryStats),
            read_only,
            _stats,
        ),
    ]


def instructions(config: Config) -> str:
    """What the server tells the agent about when to call which tool."""
    return (
        "This server is the user's durable memory across conversations and devices. The server owns the "
        "sessions: never invent a session id.\n"
        "- At the start of every conversation, when the user shows up, call mem_session_start. If is_new is "
        "true, greet the user and use the past sessions and memories it returns; if false, continue the open "
        "session where it left off.\n"
        "- While working, call mem_save for anything worth knowing next time: decisions, preferences, bug "
        "fixes, configuration, discoveries. Use a short specific title and self-contained content; give a "
        "topic_key to a fact that evolves, so saving it again revises it instead of adding a copy.\n"
        "- Before answering about past work, call mem_search (words or \"quoted phrases\") or mem_context, "
        "then mem_get_observation for the full text.\n"
        "- Time: give mem_save a happened_at when a memory is about an earlier moment (\"moved to Berlin in "
        "March\", an imported history), and a ttl or expires_at to a note that matters only for a while. For "
        "a period, pass since and until to mem_search or mem_context; a date phrase in the query (\"last "
        "week\") favours what happened then, read in the time_zone you pass.\n"
        "- At milestones, call mem_session_summary with a narrative summary; the session stays open.\n"
        "- When the work is done or the user says goodbye, call mem_session_end (with a final summary). A "
        f"session left open closes itself after {config.SESSION_TIMEOUT_HOURS} hours of silence with an "
        "automatic summary.\n"
        "- Wrap secrets in <private>…</private>: they become [REDACTED] before anything is stored.\n"
        "- This server may act in one scope of the user's memory (this agent's own part): sessions and saves "
        "stay in it, and reads also see the user's shared space, whose memories (marked \"shared space, "
        "read-only here\") you read but cannot change."
    )
