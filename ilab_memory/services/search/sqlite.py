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
user's ranking moved with what other users wrote. The statement reads each row's term
frequencies from the index's instance vocabulary (``fts5vocab``) and counts the statistics
over the user's live rows, as PostgreSQL's statement does (``postgresql.py``).
"""

from __future__ import annotations

import json
import unicodedata
from typing import NamedTuple

from ...models import OBSERVATION_TABLE
from .query import ParsedQuery, any_terms

# -- the index -----------------------------------------------------------------------------

SQLITE_TABLE = "ilab_memory_search"
SQLITE_TRIGGERS = ("ilab_memory_search_ai", "ilab_memory_search_ad", "ilab_memory_search_au")

# title, topic_key, content are searched; owner (the user, as one hex token) scopes a MATCH to
# one user through the index; observation_id finds the entry to delete.
SQLITE_COLUMNS = ("title", "topic_key", "content", "owner", "observation_id")
SQLITE_CREATE_TABLE = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {SQLITE_TABLE} USING fts5(
    {", ".join(SQLITE_COLUMNS)},
    tokenize = 'unicode61 remove_diacritics 2'
)"""
# The table FTS5 keeps each entry's columns in (its "content" shadow table: ``id`` is the
# entry's rowid, ``c0`` … ``c4`` the columns in order). The ranked statement reads an entry's
# observation there: a lookup by rowid through the virtual table costs a MATCH's set-up per row,
# three times the plain b-tree read (measured on 9,000 rows of one user).
SQLITE_CONTENT = f"{SQLITE_TABLE}_content"
SQLITE_CONTENT_OBSERVATION = f"c{SQLITE_COLUMNS.index('observation_id')}"
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

# The index's instance vocabulary: one row per occurrence of a term (term, doc = the FTS5 rowid,
# col, offset), what the ranked statement reads each row's term frequencies from. A table of the
# connection's temp schema, created when the connection opens (``index.add_terms_table``): it
# stores nothing (it reads the FTS5 index), so the database file gains no object and needs no
# migration.
SQLITE_TERMS = "ilab_memory_search_terms"
SQLITE_CREATE_TERMS = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{SQLITE_TERMS} USING fts5vocab(main, {SQLITE_TABLE}, instance)"
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

# The index of a user's live rows (``models.Observation``'s, leading with user_id, deleted rows
# left out): the statement counts the user's collection through it.
LIVE_ROWS_INDEX = "ilab_mem_obs_user_updated"

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
# over every code point in tests/test_sqlite.py.
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


class _Reads(NamedTuple):
    """How each alternative's frequency is read: single words and prefixes as ranges of terms
    ({index: (low, high)}), phrases word by word ([index, position, length, token]), and what
    the vocabulary cannot count ([index, MATCH expression])."""

    words: dict
    phrases: list
    uncounted: list


def _reads(alternatives: list, user_id: str) -> _Reads:
    reads = _Reads({}, [], [])
    for i, alternative in enumerate(alternatives):
        prefix = alternative[-1:] == ("*",)
        tokens = alternative[:-1] if prefix else alternative
        if not all(map(fts5_reads_as_is, tokens)) or (prefix and len(tokens) > 1):
            reads.uncounted.append([i, owner_match(user_id, fts5_phrase(alternative))])
        elif len(tokens) == 1:  # a word, or a prefix: the range of terms it stands for
            reads.words[i] = (tokens[0], tokens[0] + _LAST_CHARACTER if prefix else tokens[0])
        else:
            reads.phrases.extend([i, k, len(tokens), token] for k, token in enumerate(tokens))
    return reads


def _frequency_columns(count: int, values: dict) -> tuple[str, list]:
    """``f0 … fn`` in one branch: SQL and parameters for the alternatives it counts, NULL elsewhere."""
    sql, params = [], []
    for i in range(count):
        value, value_params = values.get(i, ("NULL", []))
        sql.append(f"{value} AS f{i}")
        params += value_params
    return ", ".join(sql), params


def _branches(reads: _Reads, count: int) -> tuple[list, list, list, list]:
    """The statement's inputs (CTEs unpacking JSON parameters) and its counting branches, each
    with its parameters. The JSON parameters are unpacked once into plain columns: a
    json_extract() in a join's condition would run again for every occurrence the vocabulary returns."""
    inputs, input_params, branches, branch_params = [], [], [], []
    if reads.words:
        # Each range of terms is read once: a prefix's range holds the word's own ("servic*", "service").
        ranges = sorted({r for r in reads.words.values()
                         if not any(o != r and o[0] <= r[0] and r[1] <= o[1] for o in reads.words.values())})
        inputs.append("word_ranges AS MATERIALIZED (SELECT json_extract(value, '$[0]') AS low,"
                      " json_extract(value, '$[1]') AS high FROM json_each(%s))")
        input_params.append(json.dumps(ranges))
        columns, params = _frequency_columns(count, {
            i: (f"CASE WHEN v.term = %s THEN {_weight('v.col')} END", [low]) if low == high else
               (_weight("v.col"), []) if [(low, high)] == ranges else  # the one range read: all of it
               (f"CASE WHEN v.term >= %s AND v.term <= %s THEN {_weight('v.col')} END", [low, high])
            for i, (low, high) in reads.words.items()
        })
        branches.append(f"""
                SELECT v.doc AS doc, {columns}
                FROM word_ranges r CROSS JOIN temp.{SQLITE_TERMS} v ON v.term >= r.low AND v.term <= r.high
                WHERE v.doc IN (SELECT doc FROM matched)""")
        branch_params += params
    if reads.phrases:
        # A phrase occurs where each of its words follows the one before in the same column.
        inputs.append("phrase_words AS MATERIALIZED (SELECT json_extract(value, '$[0]') AS i,"
                      " json_extract(value, '$[1]') AS k, json_extract(value, '$[2]') AS n,"
                      " json_extract(value, '$[3]') AS token FROM json_each(%s))")
        input_params.append(json.dumps(reads.phrases))
        columns, params = _frequency_columns(count, {i: (f"CASE WHEN i = {i} THEN w END", [])
                                                     for i in {p[0] for p in reads.phrases}})
        branches.append(f"""
                SELECT doc, {columns} FROM (
                    SELECT i, doc, max(w) AS w FROM (
                        SELECT p.i, p.n, v.doc, v.col, v."offset" - p.k AS start, {_weight('v.col')} AS w
                        FROM phrase_words p CROSS JOIN temp.{SQLITE_TERMS} v ON v.term = p.token
                        WHERE v.doc IN (SELECT doc FROM matched)
                    ) GROUP BY i, doc, col, start HAVING count(*) = max(n)
                )""")
        branch_params += params
    if reads.uncounted:
        # FTS5 splits these tokens otherwise: its own MATCH says which rows hold them.
        inputs.append("uncounted AS MATERIALIZED (SELECT json_extract(value, '$[0]') AS i,"
                      " json_extract(value, '$[1]') AS expression FROM json_each(%s))")
        input_params.append(json.dumps(reads.uncounted))
        columns, params = _frequency_columns(count, {i: (f"CASE WHEN a.i = {i} THEN {UNCOUNTED_FREQUENCY} END", [])
                                                     for i, _ in reads.uncounted})
        branches.append(f"""
                SELECT s.rowid AS doc, {columns}
                FROM uncounted a CROSS JOIN {SQLITE_TABLE} s ON s.{SQLITE_TABLE} MATCH a.expression
                WHERE s.rowid IN (SELECT doc FROM matched)""")
        branch_params += params
    return inputs, input_params, branches, branch_params


def ranked_statement(parsed: ParsedQuery, *, user_id: str, in_scopes: str, scopes: list, type: str | None,
                     head: int, count: int) -> tuple[str, list]:
    """The ranked statement and its parameters: the user's best ``count`` rows a read sees
    (``in_scopes`` and its parameters ``scopes``: ``lexical.matching_rows``) that hold any alternative of the query,
    with ``content_head``, ``relevance``, ``all_terms`` and ``coverage``.

    Raw SQL: Django has no expression for an FTS5 MATCH or the index's vocabulary. The text
    depends on the query's alternatives (a column each), the values never: they are parameters.
    """
    alternatives = any_terms(parsed)
    inputs, input_params, branches, branch_params = _branches(_reads(alternatives, user_id), len(alternatives))
    sql = _ranked_sql(len(alternatives), len(parsed.terms), inputs, branches, in_scopes, type is not None)
    any_query = owner_match(user_id, " OR ".join(fts5_phrase(t) for t in alternatives))
    params = [any_query, *input_params, *branch_params,
              user_id, *scopes, *([type] if type is not None else []), user_id, count, head]
    return sql, params


def _ranked_sql(alternatives: int, terms: int, inputs: list, branches: list, in_scopes: str, type_filter: bool) -> str:
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
        {"".join(f"{x},{chr(10)}        " for x in inputs)}
        -- Per entry, each alternative's frequency weighted by field (NULL: the entry lacks it).
        counted AS MATERIALIZED (
            SELECT doc, {", ".join(f"sum(f{i}) AS f{i}" for i in n)}
            FROM ({" UNION ALL ".join(branches)}
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
            FROM frequencies f CROSS JOIN {SQLITE_CONTENT} s ON s.id = f.doc
                 CROSS JOIN {OBSERVATION_TABLE} o ON o.id = s.{SQLITE_CONTENT_OBSERVATION}
            WHERE o.user_id = %s{in_scopes}
                  {"AND o.type = %s" if type_filter else ""}
        ),
        -- The collection: every row of the user not deleted, in every scope (as FTS5 counted its
        -- whole index), a count the user's own index answers alone (expired rows count until the
        -- sweep erases them: judging expiry would read every row). INDEXED BY: the index of live
        -- rows answers without reading a row, where SQLite's planner, without statistics, took
        -- the index of every row and read each row's deleted_at (2.1 against 0.4 ms at 10,000).
        total AS (SELECT count(*) AS n FROM {OBSERVATION_TABLE} INDEXED BY {LIVE_ROWS_INDEX}
                  WHERE user_id = %s AND deleted_at IS NULL),
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
