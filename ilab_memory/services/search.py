"""Full-text search over a user's observations (``mem_search``), ranked by SearchScore.

Three parts, all here so the index and the queries against it can never drift apart:

* **Folding** (``fold`` / ``tokens``): accents stripped (NFD, combining marks U+0300–U+036F
  dropped), lowercased, split on punctuation and symbols. The PostgreSQL function
  ``ilab_memory_search_fold`` is the same rule in SQL; SQLite's FTS5 tokenizer
  ``unicode61 remove_diacritics 2`` is the same rule for every Latin-script text.
* **The index.** SQLite: the FTS5 table ``ilab_memory_search`` kept in sync by triggers on the
  observation table (same transaction). PostgreSQL: a ``search_vector`` tsvector column (title
  A, topic_key B, content C, built from folded text with the ``simple`` configuration, so no
  language stemming and no extension) maintained by a trigger, with a GIN index. Triggers make
  every writer follow: services, the ORM (``QuerySet.delete()``, ``bulk_create``), raw SQL.
* **The query.** Words and "quoted phrases"; all terms first, any term when that finds nothing,
  in one SQL statement. User text never reaches the engine's query syntax: every token is
  quoted by us, so quotes, operators and punctuation cannot raise an engine error.

Ranking and the score are explained in docs/scoring.md.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass

from django.db import connections, transaction
from django.utils import timezone

from ..conf import Config, get_config
from .. import scoring, sql, vectors
from ..embeddings import EmbeddingError
from ..models import Observation
from ..selectors import with_content_head
from ..exceptions import ValidationError
from ..types import ObservationCompact, observation_compact
from ..validation import check_length, check_text, clean_type, clean_user_id
from . import embedding
from .privacy import redact

logger = logging.getLogger("ilab_memory.search")

# -- folding -------------------------------------------------------------------------------

# Separators: ASCII punctuation and symbols, Latin-1 punctuation, general punctuation, arrows,
# math and other symbols, CJK and full-width punctuation, emoji. Written with \u escapes that
# Python's ``re`` and PostgreSQL's regular expressions read the same way.
SEPARATOR_CLASS = (
    r"[\u0001-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u00bf\u00d7\u00f7\u2000-\u2bff"
    r"\u2e00-\u2e7f\u3000-\u303f\ufe30-\ufe4f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
    r"\uff5b-\uff65\U0001f000-\U0001faff[:space:]]"
)
_SEPARATORS = re.compile(SEPARATOR_CLASS.replace("[:space:]", r"\s") + "+")
_COMBINING_MARKS = re.compile("[\u0300-\u036f]")

# Longer tokens are dropped from queries: PostgreSQL ignores words over 2047 bytes, and no
# one searches for a 256-character word.
MAX_TOKEN_CHARS = 255


def fold(text: str) -> str:
    """Accents off, lower case, punctuation turned into single spaces."""
    text = _COMBINING_MARKS.sub("", unicodedata.normalize("NFD", text)).lower()
    return _SEPARATORS.sub(" ", text).strip()


def tokens(text: str) -> list[str]:
    return [t for t in fold(text).split() if len(t) <= MAX_TOKEN_CHARS]


# -- query parsing -------------------------------------------------------------------------

# Boolean connectors agents type out of habit. We do not implement boolean syntax, and the
# literal words would only make "all terms" fail, so a bare upper-case AND / OR is skipped.
# NOT and NEAR stay words: "NOT NULL" and "near-duplicate" are common in memories.
_CONNECTORS = frozenset({"AND", "OR", "&&", "||"})
# Word boundaries beyond whitespace: brackets (``NEAR(a b)``, ``useEffect(``) split words.
_WORD_SPLIT = re.compile(r"[\s()\[\]{}]+")
_NEAR_GROUP = re.compile(r"\bNEAR\s*\(")
# Function words of questions ("how do we ...", "por qué ..."), English and Spanish (the
# languages of the memories we know of). A bare one is not a term: it would make "all terms"
# fail and flood "any term". Inside a phrase or a compound (``get_or_create``) it stays.
STOP_WORDS = frozenset(
    """a an and are as at be by can could did do does for from had has have how i if in into is it
    its me my of on or our should so than that the their them then there these this those to us
    was we were what when where which who why will with would you your
    al como con cual cuando de del donde el en es esta este la las lo los mas para pero por porque
    que se sin sobre su sus un una unos unas y o""".split()
)


@dataclass(frozen=True)
class ParsedQuery:
    """Terms, each a phrase of one or more folded tokens, in query order without repeats."""

    terms: tuple[tuple[str, ...], ...]
    # Question words: not required in "all terms", still a way to match in "any term".
    optional: tuple[tuple[str, ...], ...] = ()

    @property
    def words(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for term in self.terms:
            for token in term:
                seen.setdefault(token)
        return tuple(seen)


def parse_query(text: str) -> ParsedQuery:
    """Split user text into phrase terms. Never fails; may return no terms (only punctuation).

    A word with inner punctuation (``std::vector``, ``v2.3.1``, ``select_for_update``) is a
    phrase of its parts, which is how both engines index it. An unterminated quote is ignored.
    """
    text = _NEAR_GROUP.sub(" ", text)
    parts = text.split('"')
    required: list[tuple[str, ...]] = []
    optional: list[tuple[str, ...]] = []
    connectors: list[tuple[str, ...]] = []
    for index, part in enumerate(parts):
        quoted = index % 2 == 1 and index < len(parts) - 1
        if quoted:
            phrase = tuple(tokens(part))
            if phrase:
                required.append(phrase)
            continue
        for word in _WORD_SPLIT.split(part):
            phrase = tuple(tokens(word))
            if not phrase:
                continue
            if word in _CONNECTORS:
                connectors.append(phrase)
            elif len(phrase) == 1 and phrase[0] in STOP_WORDS:
                optional.append(phrase)
            else:
                required.append(phrase)
    if not required:  # a query of only "OR" or "the who" still searches for those words
        return ParsedQuery(tuple(dict.fromkeys(optional or connectors)))
    return ParsedQuery(tuple(dict.fromkeys(required)), tuple(dict.fromkeys(optional)))


# -- the index: DDL shared by the migration, the self-check and the rebuild command --------

SQLITE_TABLE = "ilab_memory_search"
SQLITE_TRIGGERS = ("ilab_memory_search_ai", "ilab_memory_search_ad", "ilab_memory_search_au")
OBSERVATION_TABLE = "ilab_memory_observation"

# title, topic_key, content are searched; owner (the user, as one hex token) scopes a MATCH to
# one user through the index; observation_id finds the entry to delete.
SQLITE_CREATE_TABLE = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {SQLITE_TABLE} USING fts5(
    title, topic_key, content, owner, observation_id,
    tokenize = 'unicode61 remove_diacritics 2'
)"""
_SQLITE_ENTRY = "new.title, coalesce(new.topic_key, ''), new.content, 'u' || hex(new.user_id), new.id"
_SQLITE_DELETE_OLD = f"""DELETE FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH 'observation_id : "' || old.id || '"';"""
SQLITE_CREATE_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS ilab_memory_search_ai AFTER INSERT ON {OBSERVATION_TABLE} BEGIN
        INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id) VALUES ({_SQLITE_ENTRY});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS ilab_memory_search_ad AFTER DELETE ON {OBSERVATION_TABLE} BEGIN
        {_SQLITE_DELETE_OLD}
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS ilab_memory_search_au
    AFTER UPDATE OF id, user_id, title, topic_key, content ON {OBSERVATION_TABLE}
    WHEN old.id IS NOT new.id OR old.user_id IS NOT new.user_id OR old.title IS NOT new.title
      OR old.topic_key IS NOT new.topic_key OR old.content IS NOT new.content
    BEGIN
        {_SQLITE_DELETE_OLD}
        INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id) VALUES ({_SQLITE_ENTRY});
    END""",
)
SQLITE_REBUILD = (
    f"DELETE FROM {SQLITE_TABLE}",
    f"""INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id)
        SELECT title, coalesce(topic_key, ''), content, 'u' || hex(user_id), id FROM {OBSERVATION_TABLE}""",
)
SQLITE_DROP = (
    *(f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_TRIGGERS),
    f"DROP TABLE IF EXISTS {SQLITE_TABLE}",
)

# The GIN index keeps new entries in a pending list that every search scans until it is merged
# (at gin_pending_list_limit, by default 4 MB, or by VACUUM). A small list keeps searches cheap
# on a site that writes all day, for little cost to saves (benchmarks/gin_pending.py, 6,000
# saves among the searches: rare-term search p50 2.27 → 1.72 ms, p90 2.98 → 2.09; save p50
# 2.05 → 2.08 ms, within the run's noise).
PG_PENDING_LIST_KB = 128
PG_CREATE_INDEX = f"""CREATE INDEX IF NOT EXISTS ilab_mem_obs_search ON {OBSERVATION_TABLE} USING gin (search_vector)
    WITH (gin_pending_list_limit = {PG_PENDING_LIST_KB})"""
PG_INDEX_OPTIONS = f"ALTER INDEX ilab_mem_obs_search SET (gin_pending_list_limit = {PG_PENDING_LIST_KB})"  # 0008
PG_CREATE = (
    f"ALTER TABLE {OBSERVATION_TABLE} ADD COLUMN IF NOT EXISTS search_vector tsvector",
    # The same rule as ``fold`` above. normalize() is built in (PostgreSQL 13+, UTF8 databases).
    f"""CREATE OR REPLACE FUNCTION ilab_memory_search_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT regexp_replace(
            lower(regexp_replace(normalize(coalesce(value, ''), NFD), '[\\u0300-\\u036f]', '', 'g')),
            '{SEPARATOR_CLASS}+', ' ', 'g')
        $$""",
    """CREATE OR REPLACE FUNCTION ilab_memory_search_vector(title text, topic_key text, content text)
        RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(title)), 'A')
            || setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(topic_key)), 'B')
            || setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(content)), 'C')
        $$""",
    """CREATE OR REPLACE FUNCTION ilab_memory_search_trigger() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            NEW.search_vector := ilab_memory_search_vector(NEW.title, NEW.topic_key, NEW.content);
            RETURN NEW;
        END
        $$""",
    f"DROP TRIGGER IF EXISTS ilab_memory_search_insert ON {OBSERVATION_TABLE}",
    f"""CREATE TRIGGER ilab_memory_search_insert BEFORE INSERT ON {OBSERVATION_TABLE}
        FOR EACH ROW EXECUTE FUNCTION ilab_memory_search_trigger()""",
    f"DROP TRIGGER IF EXISTS ilab_memory_search_update ON {OBSERVATION_TABLE}",
    # Only when the text changed: a duplicate bump or a soft delete does not re-parse 50 KB.
    f"""CREATE TRIGGER ilab_memory_search_update BEFORE UPDATE ON {OBSERVATION_TABLE}
        FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title
            OR OLD.topic_key IS DISTINCT FROM NEW.topic_key OR OLD.content IS DISTINCT FROM NEW.content)
        EXECUTE FUNCTION ilab_memory_search_trigger()""",
    PG_CREATE_INDEX,
)
PG_REBUILD = (
    f"UPDATE {OBSERVATION_TABLE} SET search_vector = ilab_memory_search_vector(title, topic_key, content)",
)
PG_DROP = (
    f"DROP TRIGGER IF EXISTS ilab_memory_search_insert ON {OBSERVATION_TABLE}",
    f"DROP TRIGGER IF EXISTS ilab_memory_search_update ON {OBSERVATION_TABLE}",
    "DROP FUNCTION IF EXISTS ilab_memory_search_trigger()",
    "DROP FUNCTION IF EXISTS ilab_memory_search_vector(text, text, text)",
    "DROP FUNCTION IF EXISTS ilab_memory_search_fold(text)",
    "DROP INDEX IF EXISTS ilab_mem_obs_search",
    f"ALTER TABLE {OBSERVATION_TABLE} DROP COLUMN IF EXISTS search_vector",
)


def _execute(connection, statements) -> None:
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def index_install(connection) -> None:
    """Create the index structures for this connection's vendor and fill them from the table."""
    if connection.vendor == "sqlite":
        _execute(connection, (SQLITE_CREATE_TABLE, *SQLITE_CREATE_TRIGGERS, *SQLITE_REBUILD))
    elif connection.vendor == "postgresql":
        _execute(connection, (*PG_CREATE, *PG_REBUILD))


def index_uninstall(connection) -> None:
    if connection.vendor == "sqlite":
        _execute(connection, SQLITE_DROP)
    elif connection.vendor == "postgresql":
        _execute(connection, PG_DROP)


def index_rebuild(*, using: str = "default") -> int:
    """Recreate the triggers and refill the index from the observation table; returns the rows."""
    connection = connections[using]
    with transaction.atomic(using=using):
        if connection.vendor == "sqlite":
            _execute(connection, (SQLITE_CREATE_TABLE, *SQLITE_CREATE_TRIGGERS, *SQLITE_REBUILD))
        elif connection.vendor == "postgresql":
            # ALTER TABLE refuses to run in a transaction with pending trigger events, so the
            # structures are only recreated when something is missing.
            _execute(connection, PG_REBUILD if pg_triggers_present(connection) else (*PG_CREATE, *PG_REBUILD))
        else:
            raise NotImplementedError(f"ilab_memory search supports SQLite and PostgreSQL, not {connection.vendor}.")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {OBSERVATION_TABLE}")
            return cursor.fetchone()[0]


def pg_triggers_present(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname IN (%s, %s)",
            [OBSERVATION_TABLE, "ilab_memory_search_insert", "ilab_memory_search_update"],
        )
        return cursor.fetchone()[0] == 2


def sqlite_triggers_present(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s AND name IN (%s, %s, %s)",
            [OBSERVATION_TABLE, *SQLITE_TRIGGERS],
        )
        return cursor.fetchone()[0] == len(SQLITE_TRIGGERS)


def index_ensure(*, using: str = "default") -> bool:
    """Repair the SQLite index when a table rebuild dropped its triggers; True if it did.

    Django rebuilds a SQLite table to alter a field (new table, copy, drop, rename), and the
    drop takes the triggers with it. Writes made since then are missing from the index, so a
    repair is a full rebuild, not just new triggers.
    """
    connection = connections[using]
    if connection.vendor != "sqlite" or sqlite_triggers_present(connection):
        return False
    index_rebuild(using=using)
    return True


def repair_after_migrate(*, using: str = "default", **kwargs) -> None:
    """``post_migrate`` receiver: a migration that rebuilt the observation table dropped the
    SQLite triggers; put them back and refill the index before anything else writes."""
    connection = connections[using]
    if connection.vendor != "sqlite" or SQLITE_TABLE not in connection.introspection.table_names():
        return  # not SQLite, or the search migration is not applied (yet, or any more)
    index_ensure(using=using)


# -- ranking -------------------------------------------------------------------------------

# Field weights: title > topic_key > content, the same ratios on both engines.
SQLITE_BM25_WEIGHTS = (10.0, 4.0, 1.0, 0.0, 0.0)  # title, topic_key, content, owner, observation_id
PG_RANK_WEIGHTS = "{0, 0.1, 0.4, 1.0}"  # ts_rank order: D, C (content), B (topic_key), A (title)
PG_RANK_NORMALIZATION = 0  # no length division: 1 (1 + log length) and 2 (length) measured worse

# Recency: a gentle tie-breaker between near-equal matches (a newer version of the same fact
# should win), never strong enough to bury a much better old match.
RECENCY_FLOOR = 0.75
RECENCY_HALF_LIFE_DAYS = 30.0

# Candidates read from the engine before recency re-ranks them and ``limit`` cuts.
CANDIDATE_EXTRA = 20

MODE_ALL, MODE_ANY = "all", "any"


def recency_factor(age_days: float) -> float:
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS)


def _fts5_phrase(term: tuple[str, ...]) -> str:
    # Tokens hold no '"' (it is a separator), so quoting cannot be broken out of.
    if term[-1:] == ("*",):
        return '"' + " ".join(term[:-1]) + '" *'
    return '"' + " ".join(term) + '"'


# Crude suffix stripping for the fallback only: "rotate" also finds "rotation", "reminders"
# finds "reminder". Longest suffix first; the stem keeps at least MIN_STEM_CHARS characters.
_SUFFIXES = ("ations", "ation", "ions", "ion", "ing", "ers", "er", "ed", "es", "s", "e")
MIN_STEM_CHARS = 4


def stem(word: str) -> str | None:
    """A prefix for ``word`` with a common suffix cut, or None when nothing safe can be cut."""
    if not word.isalpha():
        return None
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM_CHARS:
            return word[: -len(suffix)]
    return None


def _any_terms(parsed: ParsedQuery) -> list[tuple[str, ...]]:
    """The fallback's alternatives: every phrase, every word of a multi-word phrase, and a
    prefix (marked by a trailing ``*`` token) for words with a common suffix."""
    alternatives = list(parsed.terms)
    alternatives += [(word,) for word in parsed.words if (word,) not in parsed.terms]
    alternatives += [term for term in parsed.optional if term not in alternatives]
    alternatives += [(prefix, "*") for prefix in dict.fromkeys(filter(None, map(stem, parsed.words)))]
    return alternatives


def _sqlite_queries(parsed: ParsedQuery, user_id: str) -> tuple[str, str]:
    owner = "u" + user_id.encode("utf-8").hex()
    all_terms = " AND ".join(_fts5_phrase(t) for t in parsed.terms)
    any_terms = " OR ".join(_fts5_phrase(t) for t in _any_terms(parsed))
    return f'owner : "{owner}" AND ({all_terms})', f'owner : "{owner}" AND ({any_terms})'


def _tsquery_phrase(term: tuple[str, ...]) -> str:
    if term[-1:] == ("*",):
        return "(" + " <-> ".join(f"'{token}'" for token in term[:-1]) + ":*)"
    return "(" + " <-> ".join(f"'{token}'" for token in term) + ")"


def _pg_queries(parsed: ParsedQuery) -> tuple[str, str]:
    all_terms = " & ".join(_tsquery_phrase(t) for t in parsed.terms)
    any_terms = " | ".join(_tsquery_phrase(t) for t in _any_terms(parsed))
    return all_terms, any_terms


_SELECT_COLUMNS = "o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at, substr(o.content, 1, %s) AS content_head"
# What both engines' statements return, in this order.
MATCH_COLUMNS = ("id", "type", "title", "topic_key", "session_id", "updated_at", "content_head", "relevance", "all_terms")


def _sqlite_sql(type_filter: bool) -> str:
    weights = ", ".join(str(w) for w in SQLITE_BM25_WEIGHTS)
    return f"""
        SELECT {_SELECT_COLUMNS},
               -bm25({SQLITE_TABLE}, {weights}) AS relevance,
               {SQLITE_TABLE}.rowid IN (
                   SELECT rowid FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH %s
               ) AS all_terms
        FROM {SQLITE_TABLE} JOIN {OBSERVATION_TABLE} o ON o.id = {SQLITE_TABLE}.observation_id
        WHERE {SQLITE_TABLE} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL
              {"AND o.type = %s" if type_filter else ""}
        ORDER BY all_terms DESC, relevance DESC, o.updated_at DESC, o.id
        LIMIT %s"""


def _pg_sql(type_filter: bool) -> str:
    # ts_rank has no inverse document frequency: a common word would weigh as much as a rare
    # one. So each alternative is ranked on its own and weighted by bm25's idf over this user's
    # live observations, the shape of FTS5's bm25, still in one statement.
    return f"""
        WITH q AS (SELECT %s::int AS head, %s::tsquery AS all_terms, %s::tsquery AS any_terms),
        alternatives AS (
            SELECT i, alternative::tsquery AS alternative
            FROM unnest(%s::text[]) WITH ORDINALITY AS t(alternative, i)
        ),
        candidates AS (
            SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at,
                   substr(o.content, 1, q.head) AS content_head, o.search_vector,
                   o.search_vector @@ q.all_terms AS all_terms
            FROM {OBSERVATION_TABLE} o, q
            WHERE o.user_id = %s AND o.deleted_at IS NULL AND o.search_vector @@ q.any_terms
                  {"AND o.type = %s" if type_filter else ""}
        ),
        -- MATERIALIZED (total and frequency): each computed once, not once per candidate row
        -- (inlined, the planner re-ran the count, and the document frequencies per candidate:
        -- 300 ms for a word in all of a user's 1,000 memories).
        total AS MATERIALIZED (
            SELECT count(*)::float AS n FROM {OBSERVATION_TABLE} WHERE user_id = %s AND deleted_at IS NULL
        ),
        frequency AS MATERIALIZED (
            SELECT a.i, a.alternative, count(c.id)::float AS df
            FROM alternatives a LEFT JOIN candidates c ON c.search_vector @@ a.alternative
            GROUP BY a.i, a.alternative
        )
        SELECT c.id, c.type, c.title, c.topic_key, c.session_id, c.updated_at, c.content_head,
               sum(ln(1 + (total.n - f.df + 0.5) / (f.df + 0.5))
                   * ts_rank('{PG_RANK_WEIGHTS}', c.search_vector, f.alternative, {PG_RANK_NORMALIZATION})
               ) AS relevance,
               c.all_terms
        FROM candidates c CROSS JOIN frequency f CROSS JOIN total
        WHERE c.search_vector @@ f.alternative
        GROUP BY c.id, c.type, c.title, c.topic_key, c.session_id, c.updated_at, c.content_head, c.all_terms
        ORDER BY c.all_terms DESC, relevance DESC, c.updated_at DESC, c.id
        LIMIT %s"""


def _clean_limit(limit, config: Config) -> int:
    if limit is None:
        return config.SEARCH_DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValidationError("limit", "must be an integer >= 1.", code="invalid_integer")
    return min(limit, config.SEARCH_MAX_LIMIT)


def clean_query(query, config: Config) -> str:
    query = check_text("query", query)
    return check_length("query", query, config.MAX_QUERY_CHARS)


def _matching_rows(parsed: ParsedQuery, *, user_id: str, type: str | None, head: int, count: int, using: str):
    """The engine's name and its best ``count`` rows, all-terms rows first: ``MATCH_COLUMNS``, the
    observation's own converted as the ORM would, ``relevance`` and ``all_terms`` (whether every
    term matched). Rows, not model instances: ``Manager.raw`` cost more than running the statement
    for the few rows of a search (see ``sql.fetch_rows``)."""
    connection = connections[using]
    if connection.vendor == "sqlite":
        index_ensure(using=using)
        all_query, any_query = _sqlite_queries(parsed, user_id)
        engine, statement = "sqlite-fts5-bm25", _sqlite_sql(type is not None)
        params = [head, all_query, any_query, user_id, *([type] if type else []), count]
    elif connection.vendor == "postgresql":
        all_query, any_query = _pg_queries(parsed)
        alternatives = [_tsquery_phrase(term) for term in _any_terms(parsed)]
        engine, statement = "postgresql-ts_rank", _pg_sql(type is not None)
        params = [head, all_query, any_query, alternatives, user_id, *([type] if type else []), user_id, count]
    else:
        raise NotImplementedError(f"ilab_memory search supports SQLite and PostgreSQL, not {connection.vendor}.")
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return engine, sql.fetch_rows(cursor, Observation, MATCH_COLUMNS, connection)


def observation_search(
    *,
    user_id: str,
    query: str,
    type: str | None = None,
    limit: int | None = None,
    config: Config | None = None,
    using: str = "default",
) -> list[ObservationCompact]:
    """The user's live observations that match ``query``, best first, each with a SearchScore.

    Read-only. Raises ValidationError for a blank or over-long query, a bad type or limit.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    query = clean_query(query, config)
    if type is not None:
        type = clean_type(type, allowed=None)
    limit = _clean_limit(limit, config)
    parsed = parse_query(query)
    if not parsed.terms:
        return []  # only punctuation: nothing any memory could match

    preview_chars = config.PREVIEW_CHARS
    count = limit + CANDIDATE_EXTRA
    engine, rows = _matching_rows(parsed, user_id=user_id, type=type, head=preview_chars + 1, count=count, using=using)
    mode = MODE_ALL if rows and rows[0].all_terms else MODE_ANY
    lexical = {row.id: row for row in rows if row.all_terms or mode == MODE_ANY}
    cosines, model_id = _semantic(
        user_id, query, n=max(count, scoring.SEMANTIC_POOL), also=lexical, config=config, using=using
    )
    candidates = dict(lexical)
    missing = [pk for pk in cosines if pk not in candidates]
    if missing:
        found = Observation.objects.using(using).live_for_user(user_id).filter(pk__in=missing)
        if type is not None:
            found = found.filter(type=type)
        candidates.update((row.id, row) for row in with_content_head(found, preview_chars=preview_chars))
    if not candidates:
        return []

    now = timezone.now()
    best_relevance = max((max(float(row.relevance), 0.0) for row in lexical.values()), default=0.0)
    pool = scoring.CosinePool.of(cosines.values()) if model_id is not None else None
    scored = []
    for pk, row in candidates.items():
        recency = recency_factor((now - row.updated_at).total_seconds() / 86400)
        relevance = max(float(row.relevance), 0.0) if pk in lexical else None
        signals = scoring.search_signals(
            relevance=relevance, best_relevance=best_relevance, mode=mode, cosine=cosines.get(pk), pool=pool,
            recency=recency,
        )
        if signals.value > 0 or relevance is not None:
            scored.append((signals, row))
    if not scored:
        return []
    scored.sort(key=lambda item: (item[0].value, item[1].updated_at, str(item[1].id)), reverse=True)
    scored = scored[:limit]
    best = scored[0][0].value
    return [
        observation_compact(row, preview_chars=preview_chars, score=signals.score(
            best=best, engine=engine, mode=mode, terms=len(parsed.terms), model_id=model_id,
        ))
        for signals, row in scored
    ]


def _semantic(user_id: str, query: str, *, n: int, also, config: Config, using: str) -> tuple[dict, str | None]:
    """({observation id: cosine} of the nearest vectors and of ``also``, the model id), or
    ({}, None) when search is lexical only. An embedder that fails leaves the words to it."""
    embedder = embedding.embedder_for(config)
    if embedder is None:
        return {}, None
    try:
        if config.EMBEDDING_MODE == embedding.INLINE:
            embedding.embed_waiting(user_id=user_id, config=config, using=using)
        vector = embedder.embed_query(redact(query).text)  # a query's private block stays with the caller
    except EmbeddingError as error:
        logger.warning("ilab_memory: search fell back to words only: %s", error)
        return {}, None
    return vectors.similarities(
        user_id=user_id, model_id=embedder.model_id, dimensions=embedder.dimensions, query=vector, n=n,
        also=also, using=using, max_bytes=config.VECTOR_CACHE_MB * 1024 * 1024,
    ), embedder.model_id
