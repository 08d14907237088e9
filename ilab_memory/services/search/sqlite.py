"""SQLite's full-text search: the FTS5 index and the ranked statement that reads it.

The FTS5 table ``ilab_memory_search`` is kept in sync by triggers on the observation table
(same transaction), so every writer follows: services, the ORM (``QuerySet.delete()``,
``bulk_create``), raw SQL. The DDL here serves the self-check and the rebuild command
(``index.py``); migration 0002 holds its own copy, and a test checks they build the same. A
query never reaches FTS5's syntax as the user typed it: every token is quoted here
(``fts5_phrase``).
"""

from __future__ import annotations

from .query import ParsedQuery, any_terms
from .tables import OBSERVATION_TABLE

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
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s AND name IN (%s, %s, %s)",
            [OBSERVATION_TABLE, *SQLITE_TRIGGERS],
        )
        return cursor.fetchone()[0] == len(SQLITE_TRIGGERS)


# -- the query -----------------------------------------------------------------------------

# Field weights: title > topic_key > content, the same ratios as PostgreSQL's PG_RANK_WEIGHTS.
SQLITE_BM25_WEIGHTS = (10.0, 4.0, 1.0, 0.0, 0.0)  # title, topic_key, content, owner, observation_id


def fts5_phrase(term: tuple[str, ...]) -> str:
    # Tokens hold no '"' (it is a separator), so quoting cannot be broken out of.
    if term[-1:] == ("*",):
        return '"' + " ".join(term[:-1]) + '" *'
    return '"' + " ".join(term) + '"'


def match_queries(parsed: ParsedQuery, user_id: str) -> tuple[str, str]:
    """The MATCH expressions for all terms and for any term, both scoped to the user's entries."""
    owner = "u" + user_id.encode("utf-8").hex()
    all_query = " AND ".join(fts5_phrase(t) for t in parsed.terms)
    any_query = " OR ".join(fts5_phrase(t) for t in any_terms(parsed))
    return f'owner : "{owner}" AND ({all_query})', f'owner : "{owner}" AND ({any_query})'


_SELECT_COLUMNS = ("o.id, o.scope, o.type, o.title, o.topic_key, o.session_id, o.updated_at, "
                   "substr(o.content, 1, %s) AS content_head")


def ranked_sql(type_filter: bool, in_scopes: str) -> str:
    """The ranked statement; its parameters: head, all-terms and any-term MATCH, user_id,
    the scopes of ``in_scopes`` (``Reach.sql``), [type], count."""
    weights = ", ".join(str(w) for w in SQLITE_BM25_WEIGHTS)
    return f"""
        SELECT {_SELECT_COLUMNS},
               -bm25({SQLITE_TABLE}, {weights}) AS relevance,
               {SQLITE_TABLE}.rowid IN (
                   SELECT rowid FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH %s
               ) AS all_terms
        FROM {SQLITE_TABLE} JOIN {OBSERVATION_TABLE} o ON o.id = {SQLITE_TABLE}.observation_id
        WHERE {SQLITE_TABLE} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL{in_scopes}
              {"AND o.type = %s" if type_filter else ""}
        ORDER BY all_terms DESC, relevance DESC, o.updated_at DESC, o.id
        LIMIT %s"""
