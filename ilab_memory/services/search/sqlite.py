"""SQLite's full-text search: the FTS5 index and the ranked statement that reads it.

The FTS5 table ``ilab_memory_search`` is kept in sync by triggers on the observation table
(same transaction), so every writer follows: services, the ORM (``QuerySet.delete()``,
``bulk_create``), raw SQL. The DDL here serves the repair after ``migrate`` and the rebuild
command (``index.py``); migration 0002 holds its own copy, and a test checks they build the same. A
query never reaches FTS5's syntax as the user typed it: every token is quoted here
(``fts5_phrase``).

The ranking is bm25 computed here over the searching user's own rows, not FTS5's ``bm25()``:
that function takes its collection statistics (the number of rows, each term's document
frequency, the average length) from the whole index, every user's rows together, so one
user's ranking moved with what other users wrote. The statement counts each alternative's
occurrences in the user's matching entries with FTS5's ``highlight()``, and the statistics
over the user's live rows, as PostgreSQL's statement does (``postgresql.py``): nothing it reads
grows with other users' entries.
"""

from __future__ import annotations

import unicodedata

from ...models import OBSERVATION_TABLE
from .query import ParsedQuery, any_terms

# -- the index -----------------------------------------------------------------------------

SQLITE_TABLE = "ilab_memory_search"
SQLITE_TRIGGERS = ("ilab_memory_search_ai", "ilab_memory_search_ad", "ilab_memory_search_au")

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

def sqlite_triggers_present(connection) -> bool:
    """Whether the observation table has the index's three triggers."""
    with connection.cursor() as cursor:
        cursor.execute(  # raw: the schema table has no model
            "SELECT count(*) FROM sqlite_master"
            " WHERE type = 'trigger' AND tbl_name = %s AND name IN (%s, %s, %s)",
            [OBSERVATION_TABLE, *SQLITE_TRIGGERS],
        )
        return cursor.fetchone()[0] == len(SQLITE_TRIGGERS)


# -- the query -----------------------------------------------------------------------------

# Field weights per occurrence: title > topic_key > content, the same ratios as PostgreSQL's
# PG_RANK_WEIGHTS. The owner and observation_id columns weigh nothing.
SQLITE_FIELD_WEIGHTS = {"title": 10.0, "topic_key": 4.0, "content": 1.0}
# bm25's saturation of term frequency and its length normalisation: FTS5's own values.
BM25_K1, BM25_B = 1.2, 0.75
# The weighted frequency of an alternative the vocabulary cannot count (``fts5_reads_as_is``):
# one occurrence in the content.
UNCOUNTED_FREQUENCY = 1.0

# Letters FTS5's unicode61 tokenizer reads otherwise than ``query.fold`` leaves them: ſ and
# Greek variant forms it folds further (ſ → s, ς → σ, ϐ → β, …), and New Tai Lue and Vedic
# signs that its tables (an older Unicode) hold as marks. Checked against SQLite's own tokenizer
# over every code point in tests/test_search_statistics.py.
_FTS5_REREADS = frozenset(
    "\u017f\u1e9b\u03c2\u03d0\u03d1\u03d5\u03d6\u03f0\u03f1\u03f5\u1cf2\u1cf3"
    + "".join(map(chr, range(0x19B0, 0x19CA)))
)
# Every term that starts with a prefix sorts between the prefix and the prefix + U+10FFFF.
_LAST_CHARACTER = "\U0010ffff"


def fts5_phrase(term: tuple[str, ...]) -> str:
    # Tokens hold no '"' (it is a separator), so quoting cannot be broken out of.
    if term[-1:] == ("*",):
        return '"' + " ".join(term[:-1]) + '" *'
    return '"' + " ".join(term) + '"'


def fts5_reads_as_is(token: str) -> bool:
    """Whether FTS5's tokenizer reads this folded token as itself, so that the index holds it
    under this very term. Letters and digits, but a few: symbols and combining marks that
    ``query.fold`` keeps (those outside U+0300–U+036F) split FTS5's tokens."""
    if token.isascii():
        return token.isalnum()
    return all(unicodedata.category(ch)[0] in "LN" and ch not in _FTS5_REREADS for ch in token)


def owner_match(user_id: str, expression: str) -> str:
    """A MATCH expression scoped to the user's entries (the owner column holds the user as one hex token)."""
    return f'owner : "u{user_id.encode("utf-8").hex()}" AND ({expression})'


def _weight(column: str) -> str:
    cases = " ".join(f"WHEN '{name}' THEN {weight}" for name, weight in SQLITE_FIELD_WEIGHTS.items())
    return f"CASE {column} {cases} ELSE 0.0 END"


def _marks(column: int) -> str:
    """How many times the alternative MATCHed occurs in ``column`` of the entry: FTS5's
    ``highlight()`` opens a mark at each occurrence (char(2): validation refuses control
    characters, so no stored text holds one)."""
    marked = f"highlight({SQLITE_TABLE}, {column}, char(2), '')"
    return f"(length({marked}) - length(replace({marked}, char(2), '')))"


# Each text column's position in the FTS5 table and its weight.
_WEIGHTED_MARKS = " + ".join(f"{weight} * {_marks(column)}"
                             for column, weight in enumerate(SQLITE_FIELD_WEIGHTS.values()))


def _frequency_columns(count: int, i: int, value: str) -> str:
    """``f0 … fn`` of one branch: ``value`` for alternative ``i``, NULL for the others."""
    return ", ".join(f"{value if k == i else 'NULL'} AS f{k}" for k in range(count))


def _branches(alternatives: list, user_id: str) -> tuple[list, list]:
    """One counting branch per alternative, each with its parameter: the entries of the user
    that hold it, and its frequency there weighted by field. FTS5 matches the alternative
    within the user's entries (``owner_match``), and ``highlight()`` counts its occurrences in
    those entries alone, so the cost is the user's, whatever other users' entries hold. An
    alternative FTS5's tokenizer reads otherwise (``fts5_reads_as_is``), or a prefix of several
    words, counts as ``UNCOUNTED_FREQUENCY`` where its own MATCH finds it."""
    branches, params = [], []
    for i, alternative in enumerate(alternatives):
        prefix = alternative[-1:] == ("*",)
        tokens = alternative[:-1] if prefix else alternative
        counted = all(map(fts5_reads_as_is, tokens)) and not (prefix and len(tokens) > 1)
        frequency = _WEIGHTED_MARKS if counted else str(UNCOUNTED_FREQUENCY)
        # A CTE of its own: FTS5's auxiliary functions run only in a query on the table itself.
        branches.append(f"""alternative{i} AS MATERIALIZED (
            SELECT rowid AS doc, {_frequency_columns(len(alternatives), i, frequency)}
            FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH %s
        )""")
        params.append(owner_match(user_id, fts5_phrase(alternative)))
    return branches, params


def ranked_statement(parsed: ParsedQuery, *, user_id: str, in_scopes: str, scopes: list, type: str | None,
                     head: int, count: int) -> tuple[str, list]:
    """The ranked statement and its parameters: the user's best ``count`` rows a read sees
    (``in_scopes`` and its parameters ``scopes``: ``lexical.matching_rows``) that hold any alternative of the query,
    with ``content_head``, ``relevance``, ``all_terms`` and ``coverage``.

    Raw SQL: Django has no expression for an FTS5 MATCH or the index's vocabulary. The text
    depends on the query's alternatives (a column each), the values never: they are parameters.
    """
    alternatives = any_terms(parsed)
    branches, branch_params = _branches(alternatives, user_id)
    sql = _ranked_sql(len(alternatives), len(parsed.terms), branches, in_scopes, type is not None)
    any_query = owner_match(user_id, " OR ".join(fts5_phrase(t) for t in alternatives))
    params = [any_query, *branch_params,
              user_id, *scopes, *([type] if type is not None else []), user_id, count, head]
    return sql, params


def _ranked_sql(alternatives: int, terms: int, branches: list, in_scopes: str, type_filter: bool) -> str:
    """The statement around the counting ``branches``: bm25 over the user's own rows. The first
    ``terms`` alternatives are the query's terms (``any_terms``)."""
    n = range(alternatives)
    held = [f"r.f{i} IS NOT NULL" for i in range(terms)]
    saturation = f"{BM25_K1} * ({1 - BM25_B} + {BM25_B} * r.length / s.average_length)"
    relevance = " + ".join(f"coalesce(s.idf{i} * r.f{i} * {BM25_K1 + 1} / (r.f{i} + {saturation}), 0)"
                           for i in n)
    covered = " + ".join(f"CASE WHEN {h} THEN s.idf{i} ELSE 0 END" for i, h in enumerate(held))
    # bm25's idf in Lucene's form (never negative), as PostgreSQL's statement computes it.
    idf = ", ".join(f"ln(1 + (t.n - count(r.f{i}) + 0.5) / (count(r.f{i}) + 0.5)) AS idf{i}" for i in n)
    return f"""
        WITH
        -- The user's index entries that hold any alternative (rowids only: the index answers alone).
        matched AS MATERIALIZED (SELECT rowid AS doc FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH %s),
        {"".join(f"{branch},{chr(10)}        " for branch in branches)}
        -- Per entry, each alternative's frequency weighted by field (NULL: the entry lacks it).
        counted AS MATERIALIZED (
            SELECT doc, {", ".join(f"sum(f{i}) AS f{i}" for i in n)}
            FROM ({" UNION ALL ".join(f"SELECT * FROM alternative{i}" for i in n)}
            ) GROUP BY doc
        ),
        frequencies AS (
            SELECT * FROM counted
            UNION ALL
            -- An entry no branch counted (a tokenizer difference not foreseen): kept, unranked.
            SELECT doc, {", ".join("NULL" for _ in n)} FROM matched
            WHERE (SELECT count(*) FROM counted) < (SELECT count(*) FROM matched)
                  AND doc NOT IN (SELECT doc FROM counted)
        ),
        -- The live observations in reach among them, with the order's keys and a length in
        -- characters for bm25's length normalisation.
        rows AS MATERIALIZED (
            SELECT o.id, o.updated_at,
                   length(o.title) + length(coalesce(o.topic_key, '')) + length(o.content) AS length,
                   {", ".join(f"f.f{i}" for i in n)}
            FROM frequencies f CROSS JOIN {SQLITE_TABLE} s ON s.rowid = f.doc
                 CROSS JOIN {OBSERVATION_TABLE} o ON o.id = s.observation_id
            WHERE o.user_id = %s{in_scopes}
                  {"AND o.type = %s" if type_filter else ""}
        ),
        -- The collection: every row of the user not deleted, in every scope (as FTS5 counted its
        -- whole index), a count the user's own index answers alone (expired rows count until the
        -- sweep erases them: judging expiry would read every row).
        total AS (SELECT count(*) AS n FROM {OBSERVATION_TABLE} WHERE user_id = %s AND deleted_at IS NULL),
        statistics AS MATERIALIZED (
            SELECT max(avg(r.length), 1) AS average_length, {idf} FROM rows r CROSS JOIN total t
        ),
        ranked AS (
            SELECT r.id, r.updated_at, {relevance} AS relevance, {" AND ".join(held)} AS all_terms,
                   ({covered}) / ({" + ".join(f"s.idf{i}" for i in range(terms))}) AS coverage
            FROM rows r CROSS JOIN statistics s
            ORDER BY all_terms DESC, relevance DESC, r.updated_at DESC, r.id
            LIMIT %s
        )
        SELECT o.id, o.scope, o.type, o.title, o.topic_key, o.session_id, o.updated_at, o.happened_at,
               substr(o.content, 1, %s) AS content_head, r.relevance, r.all_terms, r.coverage
        FROM ranked r JOIN {OBSERVATION_TABLE} o ON o.id = r.id
        ORDER BY r.all_terms DESC, r.relevance DESC, o.updated_at DESC, o.id"""


class SQLiteEngine:
    """SQLite's side of words search: FTS5's index, ranked by bm25 over the user's own rows."""

    name = "sqlite-fts5-bm25"

    def ranked(self, parsed: ParsedQuery, *, user_id: str, in_scopes: str, scopes: list, type: str | None,
               head: int, count: int) -> tuple[str, list]:
        return ranked_statement(parsed, user_id=user_id, in_scopes=in_scopes, scopes=scopes, type=type, head=head,
                                count=count)


ENGINE = SQLiteEngine()
