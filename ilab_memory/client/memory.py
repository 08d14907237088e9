"""``MemoryClient``: the facade's calls against a remote site's memory API.

Each method has the signature of the ``ILabMemory`` method of the same name, returns the same
frozen values of ``ilab_memory.types`` and raises the same exceptions; the server runs the same
services, so it checks every value the way the facade does. The client checks, with the facade's
own checks (``validation``), only what a query string or a URL would carry in another form than
given (a number or a list where text belongs, text that is not Unicode, a count or flag of the
wrong type), and the arguments the facade refuses before its services run. No Django import.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, TypeGuard

from .. import types
from ..exceptions import ObservationNotFound, SessionNotFound, ValidationError
from ..scopes import ALL, SHARED
from ..validation import (
    OBSERVATIONS_LIMIT,
    SESSIONS_LIMIT,
    check_text,
    check_updatable,
    clean_choice,
    clean_min_score,
    clean_moment,
    clean_time_zone,
    clean_ttl,
    clean_type,
    parse_uuid,
)
from .decode import decode, decode_list
from .transport import Transport

SESSION_STATUSES = ("active", "completed")
# What a call's scope may be (a wrong one is refused in the facade's words), and a moment.
ScopeArg = str | Sequence[str] | None
Moment = str | datetime | date | None

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class Identity:
    """Who a token is to the API (``whoami``): the user id its calls act for when they name none,
    the scope its account is bound to (None: any), and whether it may name another user_id."""

    user_id: str
    scope: str | None
    may_act_for_any_user: bool


class MemoryClient:
    """A remote memory: ``MemoryClient("https://site/api/memory/", token)``.

    ``token`` is an API token (``drf_create_token``). A plain account's token reads and writes its
    own memory only (its ``user_id``, which ``whoami()`` tells): every method's ``user_id`` may be
    left out (None), and the API acts for the token's own user. An agent backend granted
    ``ilab_memory.act_for_any_user`` names any user, per call or once as ``user_id`` here.
    ``timeout`` bounds each request in seconds; ``retries`` is how many times a read (GET) is sent
    again after a connection failure. Writes are never sent twice.
    """

    def __init__(self, base_url: str, token: str, *, user_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS, retries: int = DEFAULT_RETRIES, backoff: float = 0.2):
        self._http = Transport(base_url, token, timeout=timeout, retries=retries, backoff=backoff)
        self._user_id = user_id
        self._may_act_for_any_user: bool | None = None

    def whoami(self) -> Identity:
        """The token's user id, its account's bound scope (None: any) and whether it may act for
        any user (``GET me/``)."""
        data = self._http.request("GET", "me/")
        return Identity(user_id=data["user_id"], scope=data["scope"], may_act_for_any_user=data["may_act_for_any_user"])

    # -- sessions ------------------------------------------------------------------------

    def mem_session_start(self, user_id: str | None = None, *, scope: ScopeArg = "") -> types.SessionStartResponse:
        """Reuse the scope's live session or open one; returns SessionStartResponse with context."""
        data = self._http.request("POST", "sessions/start/", body=_body(self._who(user_id), scope))
        return decode(types.SessionStartResponse, data)

    def mem_session_summary(self, user_id: str | None = None, summary: str | None = None, *,
                            scope: ScopeArg = "") -> types.SessionRecord:
        """Store a narrative summary on the scope's active session without closing it."""
        body = {**_body(self._who(user_id), scope), "summary": summary}
        return decode(types.SessionRecord, self._http.request("POST", "sessions/summary/", body=body))

    def mem_session_end(self, user_id: str | None = None, summary: str | None = None, *,
                        scope: ScopeArg = "") -> types.SessionRecord:
        """Close the scope's active session now; raises NoActiveSession (a LookupError) when none."""
        body = _body(self._who(user_id), scope)
        if summary is not None:
            body["summary"] = summary
        return decode(types.SessionRecord, self._http.request("POST", "sessions/end/", body=body))

    def mem_get_session(self, user_id: str | None = None, session_id: str | None = None, *,
                        scope: ScopeArg = "") -> types.SessionRecord:
        path = f"sessions/{_id(session_id, SessionNotFound)}/"
        return decode(types.SessionRecord, self._get(path, user_id, scope))

    def mem_list_sessions(self, user_id: str | None = None, *, status: str | None = None, limit: int = 50,
                          scope: ScopeArg = "") -> list[types.SessionRecord]:
        # One page of the API's cursor pages holds the facade's largest limit.
        query = [("page_size", str(SESSIONS_LIMIT.clean(limit, None)))]
        if status is not None:
            query.append(("status", clean_choice("status", status, allowed=SESSION_STATUSES)))
        page = self._get("sessions/", user_id, scope, query)
        return decode_list(types.SessionRecord, page["results"])

    # -- observations --------------------------------------------------------------------

    def mem_save(self, user_id: str | None = None, title: str | None = None, content: str | None = None, *,
                 type: str = "manual", topic_key: str | None = None, metadata: dict[str, Any] | None = None,
                 scope: ScopeArg = "", happened_at: Moment = None, expires_at: Moment = None,
                 ttl: object = None) -> types.SaveResult:
        """Create, revise (same topic_key in the scope) or count a duplicate; returns SaveResult.
        ``happened_at``: when what it says happened (default: now); ``expires_at`` or ``ttl``
        (a timedelta or seconds): when it expires (default: never, or its type's RETENTION)."""
        body = {**_body(self._who(user_id), scope), "title": title,
                "content": content, "type": type, "topic_key": topic_key,
                "metadata": metadata}
        times = {"happened_at": happened_at, "expires_at": expires_at, "ttl": ttl}
        body.update(_times({name: value for name, value in times.items() if value is not None}))
        return decode(types.SaveResult, self._http.request("POST", "observations/", body=body))

    def mem_get_observation(self, user_id: str | None = None, observation_id: str | None = None, *,
                            scope: ScopeArg = "") -> types.ObservationRecord:
        path = f"observations/{_id(observation_id, ObservationNotFound)}/"
        return decode(types.ObservationRecord, self._get(path, user_id, scope))

    def mem_list_observations(self, user_id: str | None = None, *,
                              type: str | None = None, topic_key: str | None = None,
                              limit: int = 50, scope: ScopeArg = "", since: Moment = None,
                              until: Moment = None) -> list[types.ObservationCompact]:
        """Live observations in what ``scope`` reads, newest update first (ObservationCompact),
        optionally of one ``type`` or ``topic_key`` (normalized as on save), or that happened
        from ``since`` to before ``until``."""
        query = [("page_size", str(OBSERVATIONS_LIMIT.clean(limit, None)))]
        if type is not None:
            query.append(("type", clean_type(type, allowed=None)))
        if topic_key is not None:
            query.append(("topic_key", check_text("topic_key", topic_key, allow_blank=True)))
        query += _period(since, until)
        page = self._get("observations/", user_id, scope, query)
        return decode_list(types.ObservationCompact, page["results"])

    def mem_revisions(self, user_id: str | None = None, observation_id: str | None = None, *,
                      scope: ScopeArg = "") -> list[types.ObservationRevisionRecord]:
        """The observation's earlier versions, newest first."""
        path = f"observations/{_id(observation_id, ObservationNotFound)}/revisions/"
        return decode_list(types.ObservationRevisionRecord, self._get(path, user_id, scope))

    def mem_update(self, user_id: str | None = None, observation_id: str | None = None, *,
                   scope: ScopeArg = "", **fields: Any) -> types.ObservationRecord:
        """Replace title/content/type/topic_key/metadata/happened_at, keeping the old version in
        history, or change when it expires (expires_at, None: never; or ttl). The observation
        must be in ``scope`` (``"*"``: any of the user's)."""
        check_updatable(fields)
        path = f"observations/{_id(observation_id, ObservationNotFound)}/"
        body = {**fields, **_times(fields), **_body(self._who(user_id), scope)}
        return decode(types.ObservationRecord, self._http.request("PATCH", path, body=body))

    def mem_delete(self, user_id: str | None = None, observation_id: str | None = None, *, hard: bool = False,
                   scope: ScopeArg = "") -> types.DeleteResult:
        """Soft (or ``hard``) delete; the observation must be in ``scope`` (``"*"``: any of the user's)."""
        if not isinstance(hard, bool):
            raise ValidationError("hard", "must be true or false.", code="invalid_type")
        pk = _id(observation_id, ObservationNotFound)
        query = [*_user(self._who(user_id)), *_scope(scope), ("hard", "true" if hard else "false")]
        self._http.request("DELETE", f"observations/{pk}/", query=query)
        return types.DeleteResult(id=pk, hard=hard)

    def mem_search(self, user_id: str | None = None, query: str | None = None, *,
                   type: str | None = None, limit: int | None = None, min_score: float | None = None,
                   scope: ScopeArg = "", since: Moment = None, until: Moment = None, time_zone: object = None,
                   now: Moment = None) -> list[types.ObservationCompact]:
        """Search of the user's live observations in what ``scope`` reads, best first (SearchScore);
        ``limit`` defaults to the site's SEARCH_DEFAULT_LIMIT setting. ``since`` / ``until`` keep
        to what happened in that period; a date phrase in the query ("last week") favours what
        happened then, read at ``now`` (default: the time of the request) in ``time_zone`` (an
        IANA name or a ``ZoneInfo``; default: the site's current time zone). ``min_score`` (a
        number, at least 0) leaves out the results scoring below it."""
        params = [("q", check_text("query", query, allow_blank=True))]
        if type is not None:
            params.append(("type", check_text("type", type, allow_blank=True)))
        if limit is not None:
            params.append(("limit", _count("limit", limit)))
        if min_score is not None:
            params.append(("min_score", repr(clean_min_score(min_score))))
        params += _period(since, until)
        if time_zone is not None:
            params.append(("time_zone", _zone_name(time_zone)))
        if now is not None:
            params.append(("now", _moment("now", now)))
        try:
            found = self._get("observations/search/", user_id, scope, params)
        except ValidationError as error:
            raise error.spelled({"q": "query"}) from None  # the API's parameter is this method's query
        return decode_list(types.ObservationCompact, found)

    def mem_context(self, user_id: str | None = None, *, limit: int | None = None, scope: ScopeArg = "",
                    since: Moment = None, until: Moment = None) -> list[types.ObservationCompact]:
        """The start-of-session ranking (ContextScore), read-only; ``limit`` defaults to the
        site's CONTEXT_MEMORIES setting, as at session start; ``since`` / ``until`` keep to what
        happened in that period."""
        params = [] if limit is None else [("limit", _count("limit", limit))]
        params += _period(since, until)
        return decode_list(types.ObservationCompact, self._get("context/", user_id, scope, params))

    def mem_timeline(self, user_id: str | None = None, observation_id: str | None = None, *,
                     before: int = 5, after: int = 5,
                     scope: ScopeArg = "") -> types.Timeline:
        path = f"observations/{_id(observation_id, ObservationNotFound)}/timeline/"
        params = [("before", _count("before", before)), ("after", _count("after", after))]
        return decode(types.Timeline, self._get(path, user_id, scope, params))

    def mem_stats(self, user_id: str | None = None, *, scope: ScopeArg = "") -> types.MemoryStats:
        """Counts of what ``scope`` reads (``"*"``: all of the user's), with live memories per scope."""
        return decode(types.MemoryStats, self._get("stats/", user_id, scope))

    # -- the user's data -----------------------------------------------------------------

    def mem_export(self, user_id: str | None = None, *, scope: ScopeArg = "*") -> dict[str, Any]:
        """The user's rows (sessions, observations, revisions) in ``scope`` (default: every
        scope) as a versioned dict; each record names its scope."""
        document: dict[str, Any] = self._get("export/", user_id, scope, default=ALL)
        return document

    def mem_import(self, user_id: str | None = None, data: dict[str, Any] | None = None, *,
                   scope: str | None = None) -> dict[str, Any]:
        """Add an export's rows the user lacks, each into its record's scope, or all into
        ``scope`` when given; idempotent; ValidationError, nothing written, on a bad one."""
        body = {**_body(self._who(user_id), scope, default=None), "data": data}
        counts: dict[str, Any] = self._http.request("POST", "import/", body=body)
        return counts

    def mem_forget_user(self, user_id: str | None = None, *, scope: ScopeArg = "*") -> dict[str, int]:
        """Erase every row of the user (or only of one ``scope``) in one transaction; returns
        the counts per kind."""
        # The API asks for the user_id again as confirmation, compared after it is stripped; a
        # call that names none confirms the token's own, which the API tells.
        user_id = self._who(user_id)
        if user_id is None:
            user_id = self.whoami().user_id
        confirm = user_id.strip() if isinstance(user_id, str) else user_id
        body = {**_body(self._who(user_id), scope, default=ALL), "confirm": confirm}
        erased: dict[str, int] = self._http.request("POST", "forget/", body=body)
        return erased

    # -- helpers -------------------------------------------------------------------------

    def _get(self, path: str, user_id: str | None, scope: ScopeArg, params: list[tuple[str, str]] | None = None, *,
             default: ScopeArg = SHARED) -> Any:
        query = [*_user(self._who(user_id)), *_scope(scope, default), *(params or [])]
        return self._http.request("GET", path, query=query)

    def _who(self, user_id: str | None) -> str | None:
        """The user_id a call names: its own, else the client's, else None: the token's own user,
        for a plain account. An account allowed to act for any user must name one, as with the
        facade: a call of a service that lost its user would otherwise write to its own memory."""
        user_id = self._user_id if user_id is None else user_id
        if user_id is None and self._acts_for_anyone():
            raise ValidationError("user_id", "is required: this token's account may act for any user, so a call "
                                             "names whose memory it means.", code="required")
        return user_id

    def _acts_for_anyone(self) -> bool:
        # Asked once (GET me/): a grant is not expected to change under a running client.
        if self._may_act_for_any_user is None:
            self._may_act_for_any_user = self.whoami().may_act_for_any_user
        return self._may_act_for_any_user


def _body(user_id: str | None, scope: ScopeArg, *, default: ScopeArg = SHARED) -> dict[str, Any]:
    """A write's user_id unless it names none (the token's own user), and its scope unless it is
    the method's default (see ``_scope``)."""
    body: dict[str, Any] = {} if user_id is None else {"user_id": user_id}
    return body if scope == default else {**body, "scope": scope}


def _user(user_id: str | None) -> list[tuple[str, str]]:
    return [] if user_id is None else [("user_id", check_text("user_id", user_id, allow_blank=True))]


def _scope(scope: ScopeArg, default: ScopeArg = SHARED) -> list[tuple[str, str]]:
    """``scope`` as the query names it: one value, or a list as the parameter repeated.

    The method's default is not named: the API's default is the same, except for an account
    bound to one scope (``ACCOUNT_SCOPES``), which acts in its scope when it names none and is
    refused when it names another.
    """
    if scope is None or scope == default:
        return []
    if isinstance(scope, str):
        return [("scope", check_text("scope", scope, allow_blank=True))]
    if isinstance(scope, (list, tuple)):
        if not scope:
            raise ValidationError("scope", "must name at least one scope.", code="empty")
        values = [check_text("scope", value, allow_blank=True) for value in scope]
        # One parameter is a scope and the shared space; a list of one reads that scope alone,
        # which the API understands from the parameter repeated (it drops the repeat).
        return [("scope", value) for value in (values * 2 if len(values) == 1 else values)]
    return [("scope", check_text("scope", scope))]  # not a string: the facade's error


def _count(field: str, value: object) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(field, "must be an integer.", code="invalid_type")
    return str(value)


def _moment(field: str, value: object) -> str:
    """A moment as JSON or a query string carries it: text as given (the server reads it), any
    other value read here by the facade's own check (a naive date-time is refused in its words)
    and sent in ISO 8601."""
    if _sendable(value):
        return value
    moment = clean_moment(field, value)
    if moment is None:  # the callers send no None; the facade's words if one comes
        raise ValidationError(field, "must be a date-time, not null.", code="null")
    return moment.isoformat()


def _sendable(value: object) -> TypeGuard[str]:
    """Text a URL or JSON carries as it is (a lone surrogate is not: the facade's check refuses it here)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _period(since: Moment, until: Moment) -> list[tuple[str, str]]:
    return [(name, _moment(name, value)) for name, value in (("since", since), ("until", until)) if value is not None]


def _times(fields: dict[str, Any]) -> dict[str, Any]:
    """The time fields of a write in their JSON form (None stays null: "never" for expires_at)."""
    times: dict[str, Any] = {}
    for name in ("happened_at", "expires_at"):
        if fields.get(name) is not None:
            times[name] = _moment(name, fields[name])
    if "ttl" in fields:
        ttl = fields["ttl"]
        if isinstance(ttl, timedelta) or (isinstance(ttl, float) and not math.isfinite(ttl)):
            # JSON has no duration and no infinity: read here, by the facade's check, as seconds.
            duration = clean_ttl(ttl)
            assert duration is not None  # ttl is a timedelta or a float here, never None
            seconds = duration.total_seconds()
            ttl = int(seconds) if seconds.is_integer() else seconds
        times["ttl"] = ttl
    return times


def _zone_name(value: object) -> str:
    """A time zone as the query string names it: its IANA name (the facade's error for a value
    that is neither a name nor a tzinfo)."""
    if _sendable(value):
        return value
    zone = clean_time_zone(value)
    name = getattr(zone, "key", None) or ("UTC" if zone.utcoffset(None) == timedelta(0) else None)
    if name is None:
        raise ValidationError("time_zone", "must be an IANA time zone (a ZoneInfo or its name) to travel over HTTP.",
                              code="invalid_time_zone")
    return name


def _id(value: object, error: type[LookupError]) -> str:
    """A UUID's canonical form for the URL; anything else is not found, as in the facade."""
    return str(value if isinstance(value, uuid.UUID) else parse_uuid(value, error))
