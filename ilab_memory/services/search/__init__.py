"""Full-text and semantic search over a user's observations (``mem_search``), ranked by SearchScore.

``observation_search`` is the entry point; the parts it calls each have a module:

* ``query``: folding the text the way both indexes fold it, parsing it into terms, and the
  "any term" alternatives of the fallback.
* ``sqlite`` and ``postgresql``: each engine's index (DDL kept in sync by triggers, so every
  writer follows) next to the queries against it, so the two cannot drift apart. User text
  never reaches an engine's query syntax: every token is quoted there.
* ``index``: rebuild and repair the index on either engine (the rebuild command,
  ``post_migrate``) and give each SQLite connection its terms table; the migrations hold their
  own copy of its statements.
* ``lexical``: the engine's best rows, all terms first, any term when that finds nothing.
* ``lexicon``: whether a query holds any word of a supported language (letter strings find nothing).
* ``semantic``: the query's cosine to the user's vectors, when an embedder is set, and the
  user's null (``calibration``).
* ``fusion``: the one decision: each candidate's evidence judged by a table of rules, what is
  kept (weak results marked and capped) and how it ranks.

Ranking and the score are explained in docs/scoring.md.
"""

from __future__ import annotations

from django.utils import timezone

from ...conf import Config, get_config
from ...models import Observation
from ...scopes import Reach, clean_read_reach
from ...selectors import with_content_head
from ...types import ObservationCompact, iso, observation_compact
from ...validation import (
    SEARCH_LIMIT,
    check_length,
    check_text,
    clean_min_score,
    clean_moment,
    clean_time_zone,
    clean_type,
    clean_user_id,
)
from ...visibility import Window, clean_window
from .. import embedding
from . import fusion, semantic
from .lexical import CANDIDATE_EXTRA, MODE_ALL, MODE_ANY, matching_rows
from .lexicon import has_words
from .periods import Period, read_period
from .query import STOP_WORDS, parse_query, tokens
from .sqlite import SQLITE_TABLE

__all__ = ["SQLITE_TABLE", "STOP_WORDS", "clean_query", "observation_search", "parse_query", "tokens"]


def _clean_limit(limit, config: Config) -> int:
    return config.SEARCH_DEFAULT_LIMIT if limit is None else SEARCH_LIMIT.clean(limit, config)


def clean_query(query, config: Config) -> str:
    query = check_text("query", query)
    return check_length("query", query, config.MAX_QUERY_CHARS)


def observation_search(
    *,
    user_id: str,
    query: str,
    type: str | None = None,
    limit: int | None = None,
    min_score: float | None = None,
    scope="",
    since=None,
    until=None,
    time_zone=None,
    now=None,
    config: Config | None = None,
    using: str = "default",
) -> list[ObservationCompact]:
    """The user's live observations in what ``scope`` reaches (a scope and the shared space,
    ``"*"`` or a list) that match ``query``, best first, each with a SearchScore; the scope's
    own first on equal scores. ``since`` / ``until``: only those that happened from ``since``
    to before ``until``. A date phrase in the query favours what happened in the period it
    names (``periods``), read at ``now`` (default: the current time) in ``time_zone`` (an IANA
    name or a tzinfo; default: Django's current time zone). ``min_score``: results whose score is
    below it are left out (so fewer than ``limit`` may come back).

    Writes only the vectors of its budget of the user's waiting memories (``embedding.
    embed_for_search``), before it reads; the ranking is read-only. Raises ValidationError for
    a blank or over-long query, a bad type, limit or min_score.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    query = clean_query(query, config)
    reach = clean_read_reach(scope, config=config)
    if type is not None:
        type = clean_type(type, allowed=None)
    limit = _clean_limit(limit, config)
    min_score = clean_min_score(min_score)
    window = clean_window(since, until)
    now = clean_moment("now", now) or timezone.now()
    time_zone = clean_time_zone(time_zone)
    parsed = parse_query(query)
    if not parsed.terms:
        return []  # only punctuation: nothing any memory could match

    # The one write, before any read: what the user saved last is found by its meaning too.
    embedding.embed_for_search(user_id=user_id, config=config, using=using)

    found = _candidates(parsed, query, user_id=user_id, reach=reach, type=type, limit=limit, window=window,
                        config=config, using=using)
    if found is None:
        return []  # letter strings no language spells, held by no memory: nothing to find (``lexicon``)
    engine, mode, lexical, meaning, candidates = found
    period = read_period(query, now=now, time_zone=time_zone)
    scored = _decide(candidates, meaning, reach=reach, engine=engine, lexical=lexical, period=period, now=now,
                     limit=limit, user_id=user_id, config=config, using=using)
    read = None if period is None else {"phrase": period.phrase, "start": iso(period.start), "end": iso(period.end)}
    results = [
        observation_compact(row, preview_chars=config.PREVIEW_CHARS, score=judged.score(
            engine=engine, mode=mode, terms=len(parsed.terms), model_id=meaning.model_id, scope=row.scope,
            period=read,
        ))
        for judged, row in scored
    ]
    if min_score is None:
        return results
    return [result for result in results if result.score is not None and result.score.value >= min_score]


def _candidates(parsed, query: str, *, user_id: str, reach: Reach, type: str | None, limit: int, window: Window,
                config: Config, using: str):
    """(engine, mode, {id: word match}, meaning, {id: row}) of the memories found by words or
    meaning; None for a query of letter strings that no memory holds a word of."""
    count = limit + CANDIDATE_EXTRA
    engine, rows = matching_rows(parsed, user_id=user_id, reach=reach, type=type, head=config.PREVIEW_CHARS + 1,
                                 count=count, window=window, config=config, using=using)
    if not any(row.coverage > 0 for row in rows) and not has_words(query):
        return None
    mode = MODE_ALL if rows and rows[0].all_terms else MODE_ANY
    lexical = {row.id: row for row in rows}
    also = lexical
    if not window.is_open and embedding.embedder_for(config) is not None:
        # The nearest memories may all lie outside the period: every one inside it is weighed
        # (one query more; words alone need none, their statement keeps to the period).
        also = {**lexical, **dict.fromkeys(_in_window(user_id, reach, window, config=config, using=using))}
    meaning = semantic.meaning(user_id, reach, query, n=max(count, fusion.POOL_SIZE), also=also, config=config,
                               using=using)
    candidates = _with_rows_of(dict(lexical), meaning, user_id=user_id, reach=reach, window=window, type=type,
                               config=config, using=using)
    return engine, mode, lexical, meaning, candidates


def _with_rows_of(candidates: dict, meaning: semantic.Meaning, *, user_id: str, reach: Reach, window: Window,
                  type: str | None, config: Config, using: str) -> dict:
    """``candidates`` and the rows of the memories found by meaning alone."""
    missing = [pk for pk in meaning.cosines if pk not in candidates]
    if not missing:
        return candidates
    found = Observation.objects.using(using).live_for_user(user_id, config).filter(
        reach.q(), window.q(), pk__in=missing)
    if type is not None:
        found = found.filter(type=type)
    rows = with_content_head(found, preview_chars=config.PREVIEW_CHARS)
    return {**candidates, **{row.id: row for row in rows}}


def _in_window(user_id: str, reach: Reach, window: Window, *, config: Config, using: str) -> list:
    """The ids of the user's live observations in reach that happened in ``window``."""
    rows = Observation.objects.using(using).live_for_user(user_id, config).filter(reach.q(), window.q())
    return list(rows.values_list("pk", flat=True))


def _decide(candidates: dict, meaning: semantic.Meaning, *, reach: Reach, engine: str, lexical: dict,
            period: Period | None, now, limit: int | None, user_id: str, config: Config, using: str) -> list:
    """The kept ``candidates`` as (fusion.Judged, row), best first (``fusion.decide``): each
    one's words (``lexical`` rows), meaning (``meaning.cosines``), age at ``now`` and whether it
    happened in the ``period`` the query names; on equal values the reader's own scope first."""
    cosines = meaning.cosines
    evidence = []
    for pk, row in candidates.items():
        match = lexical.get(pk)
        evidence.append((fusion.Evidence(
            relevance=float(match.relevance) if match else None, all_terms=bool(match and match.all_terms),
            coverage=float(match.coverage) if match else 0.0, cosine=cosines.get(pk),
            recency=fusion.recency_factor((now - row.updated_at).total_seconds() / 86400),
            in_period=period is not None and row.happened_at in period,
        ), row))
    evidence.sort(key=lambda pair: (reach.is_own(pair[1].scope), pair[1].updated_at, str(pair[1].id)), reverse=True)
    names_period = period is not None
    context = fusion.Context(engine, names_period=names_period)
    if meaning.model_id is not None:
        model = meaning.calibration
        pool = fusion.CosinePool.of(cosines.values(), prior=None if model is None else (
            model.unrelated_cosine, model.unrelated_deviation))
        # The user's null is read only when a candidate's words are not enough on their own.
        null = None
        if any(fusion.may_be_weak(e) for e, _ in evidence):
            null = semantic.null(meaning, user_id=user_id, reach=reach, config=config, using=using)
        context = fusion.Context(engine, pool, null, names_period)
    return fusion.decide(evidence, context, limit=limit)
