"""PostgreSQL's full-text search: the tsvector index and the ranked statement that reads it.

A ``search_vector`` tsvector column (title A, topic_key B, content C, built from folded text
with the ``simple`` configuration, so no language stemming and no extension) is maintained by
a trigger, with a GIN index, so every writer follows: services, the ORM, raw SQL. The DDL here
serves the rebuild command (``index.py``) and the benchmarks; migrations 0002 and 0008 hold
their own copy, and a test checks they build the same. A query never reaches tsquery syntax
as the user typed it: every token is quoted here (``tsquery_phrase``).
"""

from __future__ import annotations

from ...models import OBSERVATION_TABLE
from .query import SEPARATOR_CLASS, ParsedQuery, any_terms

# -- the index -----------------------------------------------------------------------------

# The GIN index keeps new entries in a pending list that every search scans until it is merged
# (at gin_pending_list_limit, by default 4 MB, or by VACUUM). A small list keeps searches cheap
# on a site that writes all day, for little cost to saves. With btree_gin (migration 0014) the
# index leads with user_id, so a word's entries are read for the searching user only.
PG_PENDING_LIST_KB = 128
PG_EXTENSION = "btree_gin"
PG_INDEX = "ilab_mem_obs_user_search"  # (user_id, search_vector), with the extension
PG_INDEX_WITHOUT_EXTENSION = "ilab_mem_obs_search"  # (search_vector)
_GIN = f"USING gin (%s) WITH (gin_pending_list_limit = {PG_PENDING_LIST_KB})"
PG_CREATE_INDEX = f"""DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = '{PG_EXTENSION}') THEN
        CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {OBSERVATION_TABLE} {_GIN % "user_id, search_vector"};
    ELSE
        CREATE INDEX IF NOT EXISTS {PG_INDEX_WITHOUT_EXTENSION} ON {OBSERVATION_TABLE} {_GIN % "search_vector"};
    END IF;
END $$"""
PG_CREATE = (
    f"ALTER TABLE {OBSERVATION_TABLE} ADD COLUMN IF NOT EXISTS search_vector tsvector",
    # The same rule as ``query.fold``. normalize() is built in (PostgreSQL 13+, UTF8 databases).
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


def pg_triggers_present(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname IN (%s, %s)",
            [OBSERVATION_TABLE, "ilab_memory_search_insert", "ilab_memory_search_update"],
        )
        return cursor.fetchone()[0] == 2


# -- the query -----------------------------------------------------------------------------

# Field weights: title > topic_key > content, the same ratios as SQLite's SQLITE_FIELD_WEIGHTS.
PG_RANK_WEIGHTS = "{0, 0.1, 0.4, 1.0}"  # ts_rank order: D, C (content), B (topic_key), A (title)
# No length division: dividing by the length (1 + log, or the length) ranked answers lower on
# the development sets (docs/search.md).
PG_RANK_NORMALIZATION = 0


def tsquery_phrase(term: tuple[str, ...]) -> str:
    if term[-1:] == ("*",):
        return "(" + " <-> ".join(f"'{token}'" for token in term[:-1]) + ":*)"
    return "(" + " <-> ".join(f"'{token}'" for token in term) + ")"


def tsqueries(parsed: ParsedQuery) -> tuple[str, str]:
    """The tsqueries for all terms and for any term."""
    all_query = " & ".join(tsquery_phrase(t) for t in parsed.terms)
    any_query = " | ".join(tsquery_phrase(t) for t in any_terms(parsed))
    return all_query, any_query


# Up to this many live rows, a user's words search reads the user's rows and matches each one;
# above, it reads the index (``candidates_sql``).
PG_READ_ROWS_UP_TO = 2000


def _candidate_columns(alternatives: int) -> str:
    """What the ranking needs of a row, each alternative matched and ranked in the same pass
    (``r1`` … ``rn``: its ts_rank, NULL where the row lacks it); the other columns are read
    only for the rows the ranking keeps (``ranked_sql``)."""
    rank = f"ts_rank('{PG_RANK_WEIGHTS}', o.search_vector, q.a%d, {PG_RANK_NORMALIZATION})"
    ranks = "".join(f",\n                   CASE WHEN o.search_vector @@ q.a{i} THEN {rank % i} END AS r{i}"
                    for i in range(1, alternatives + 1))
    return f"o.id, o.updated_at, o.search_vector @@ q.all_terms AS all_terms{ranks}"


def candidates_sql(type_filter: bool, in_scopes: str, read_rows_up_to: int, alternatives: int = 1) -> str:
    """The user's rows that hold any alternative, by one of two paths chosen by the user's size:
    each branch's size test is a one-time filter, so the other branch never runs. A small user's
    rows are read and matched one by one, a cost no other user's rows change. A large user's
    come from the index, which leads with user_id (migration 0014), so a word's entries are read
    for this user only; a prefix alternative there reads the entries of every word it starts,
    of every user. Parameters: user_id, the parameters of ``in_scopes``, [type], twice."""
    of_type = "AND o.type = %s" if type_filter else ""
    columns = _candidate_columns(alternatives)
    return f"""
        candidates AS MATERIALIZED (
            SELECT {columns}
            FROM (SELECT * FROM {OBSERVATION_TABLE} WHERE user_id = %s OFFSET 0) o, q
            WHERE (SELECT n FROM total) <= {read_rows_up_to:d}{in_scopes} AND o.search_vector @@ q.any_terms {of_type}
            UNION ALL
            SELECT {columns}
            FROM {OBSERVATION_TABLE} o, q
            WHERE (SELECT n FROM total) > {read_rows_up_to:d} AND o.user_id = %s{in_scopes}
                  AND o.search_vector @@ q.any_terms {of_type}
        )"""


def ranked_sql(type_filter: bool, in_scopes: str, read_rows_up_to: int = PG_READ_ROWS_UP_TO, *,
               alternatives: int = 1, terms: int = 1) -> str:
    """The ranked statement for a query of ``terms`` terms and ``alternatives`` alternatives (the
    terms first, ``any_terms``); its parameters: head, the all-terms and any-term tsqueries, each
    alternative's tsquery, user_id, then those of ``candidates_sql`` (``in_scopes``: the rows a
    read sees, ``lexical.matching_rows``), count. The text depends on the numbers only."""
    # ts_rank has no inverse document frequency: a common word would weigh as much as a rare
    # one. So each alternative is ranked on its own and weighted by bm25's idf over this user's
    # live observations, the shape of FTS5's bm25, still in one statement. ``coverage`` is the
    # idf-weighted share of the query's terms (the first alternatives) the row holds.
    # A common word matches thousands of rows: each is read, matched and ranked in one pass
    # (``candidates``), and its other columns (the content head among them) are read only for
    # the ``count`` rows kept.
    n = range(1, alternatives + 1)
    held = [f"c.r{i} IS NOT NULL" for i in range(1, terms + 1)]
    idf = ", ".join(f"ln(1 + (t.n - count(c.r{i}) + 0.5) / (count(c.r{i}) + 0.5)) AS idf{i}" for i in n)
    relevance = " + ".join(f"coalesce(s.idf{i} * c.r{i}, 0)" for i in n)
    covered = " + ".join(f"CASE WHEN {h} THEN s.idf{i} ELSE 0 END" for i, h in enumerate(held, 1))
    alternative_params = "".join(f", %s::tsquery AS a{i}" for i in n)
    return f"""
        WITH q AS (SELECT %s::int AS head, %s::tsquery AS all_terms, %s::tsquery AS any_terms{alternative_params}),
        -- MATERIALIZED: each computed once, not once per candidate row (inlined, the planner
        -- re-ran the count and the document frequencies per candidate, a cost that grows with the
        -- square of a common word's matches).
        total AS MATERIALIZED (
            -- Every scope of the user: a count the user's own index answers alone (a scope
            -- filter would read each row), and a collection size, as FTS5 counts its whole index.
            -- Expired rows count until the sweep erases them, for the same reason.
            SELECT count(*)::float AS n FROM {OBSERVATION_TABLE} WHERE user_id = %s AND deleted_at IS NULL
        ),{candidates_sql(type_filter, in_scopes, read_rows_up_to, alternatives)},
        statistics AS MATERIALIZED (SELECT {idf} FROM candidates c CROSS JOIN total t GROUP BY t.n),
        kept AS (
            SELECT c.id, c.all_terms, {relevance} AS relevance,
                   -- 1.0 exactly when every term is held: a sum in another order may differ in its last bit.
                   CASE WHEN c.all_terms THEN 1.0
                        ELSE ({covered}) / ({" + ".join(f"s.idf{i}" for i in range(1, terms + 1))}) END AS coverage
            FROM candidates c CROSS JOIN statistics s
            ORDER BY c.all_terms DESC, relevance DESC, c.updated_at DESC, c.id
            LIMIT %s
        )
        SELECT o.id, o.scope, o.type, o.title, o.topic_key, o.session_id, o.updated_at, o.happened_at,
               substr(o.content, 1, q.head) AS content_head, k.relevance, k.all_terms, k.coverage
        FROM kept k JOIN {OBSERVATION_TABLE} o ON o.id = k.id CROSS JOIN q
        ORDER BY k.all_terms DESC, k.relevance DESC, o.updated_at DESC, o.id"""


class PostgreSQLEngine:
    """PostgreSQL's side of words search: the tsvector column's GIN index, ts_rank weighted by
    bm25's idf over the user's own rows."""

    name = "postgresql-ts_rank"

    def __init__(self, read_rows_up_to: int = PG_READ_ROWS_UP_TO):
        self.read_rows_up_to = read_rows_up_to

    def ranked(self, parsed: ParsedQuery, *, user_id: str, in_scopes: str, scopes: list, type: str | None,
               head: int, count: int) -> tuple[str, list]:
        all_query, any_query = tsqueries(parsed)
        alternatives = [tsquery_phrase(term) for term in any_terms(parsed)]
        each_path = [user_id, *scopes, *([type] if type else [])]
        params = [head, all_query, any_query, *alternatives, user_id, *each_path, *each_path, count]
        sql = ranked_sql(type is not None, in_scopes, self.read_rows_up_to, alternatives=len(alternatives),
                         terms=len(parsed.terms))
        return sql, params


ENGINE = PostgreSQLEngine()
