"""The full-text search index: an FTS5 table and triggers on SQLite; a tsvector column, its
trigger and a GIN index on PostgreSQL. Other engines: nothing.

Raw SQL because Django has no expression for FTS5 tables, tsvector columns or triggers. A
``RunPython`` that picks the statements by ``schema_editor.connection.vendor``, not ``RunSQL``:
the two engines need different statements, and ``RunSQL`` would run the same ones on both.

The statements are frozen here as this migration runs them. ``services/search`` keeps its own
copy for ``ilab_memory_rebuild_index`` and the SQLite repair after a table rebuild; a test
checks that both build the same index.
"""

from django.db import migrations

OBSERVATION_TABLE = "ilab_memory_observation"

# -- SQLite ------------------------------------------------------------------------------------

SQLITE_TABLE = "ilab_memory_search"
_SQLITE_ENTRY = "new.title, coalesce(new.topic_key, ''), new.content, 'u' || hex(new.user_id), new.id"
_SQLITE_DELETE_OLD = f"""DELETE FROM {SQLITE_TABLE} WHERE {SQLITE_TABLE} MATCH 'observation_id : "' || old.id || '"';"""
SQLITE_CREATE = (
    # title, topic_key, content are searched; owner (the user, as one hex token) scopes a MATCH
    # to one user through the index; observation_id finds the entry to delete.
    f"""
CREATE VIRTUAL TABLE {SQLITE_TABLE} USING fts5(
    title, topic_key, content, owner, observation_id,
    tokenize = 'unicode61 remove_diacritics 2'
)""",
    f"""CREATE TRIGGER ilab_memory_search_ai AFTER INSERT ON {OBSERVATION_TABLE} BEGIN
        INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id) VALUES ({_SQLITE_ENTRY});
    END""",
    f"""CREATE TRIGGER ilab_memory_search_ad AFTER DELETE ON {OBSERVATION_TABLE} BEGIN
        {_SQLITE_DELETE_OLD}
    END""",
    f"""CREATE TRIGGER ilab_memory_search_au
    AFTER UPDATE OF id, user_id, title, topic_key, content ON {OBSERVATION_TABLE}
    WHEN old.id IS NOT new.id OR old.user_id IS NOT new.user_id OR old.title IS NOT new.title
      OR old.topic_key IS NOT new.topic_key OR old.content IS NOT new.content
    BEGIN
        {_SQLITE_DELETE_OLD}
        INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id) VALUES ({_SQLITE_ENTRY});
    END""",
    # Rows saved before this migration.
    f"""INSERT INTO {SQLITE_TABLE} (title, topic_key, content, owner, observation_id)
        SELECT title, coalesce(topic_key, ''), content, 'u' || hex(user_id), id FROM {OBSERVATION_TABLE}""",
)
SQLITE_DROP = (
    "DROP TRIGGER IF EXISTS ilab_memory_search_ai",
    "DROP TRIGGER IF EXISTS ilab_memory_search_ad",
    "DROP TRIGGER IF EXISTS ilab_memory_search_au",
    f"DROP TABLE IF EXISTS {SQLITE_TABLE}",
)

# -- PostgreSQL --------------------------------------------------------------------------------

# The separators of the search's folding rule (punctuation, symbols, spaces), written with
# escapes that PostgreSQL's regular expressions read.
_SEPARATOR_CLASS = (
    r"[\u0001-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u00bf\u00d7\u00f7\u2000-\u2bff"
    r"\u2e00-\u2e7f\u3000-\u303f\ufe30-\ufe4f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
    r"\uff5b-\uff65\U0001f000-\U0001faff[:space:]]"
)
PG_CREATE = (
    f"ALTER TABLE {OBSERVATION_TABLE} ADD COLUMN search_vector tsvector",
    # Accents off, lower case, separators to spaces; the ``simple`` configuration then splits
    # words without stemming, so no language and no extension. normalize() is built in
    # (PostgreSQL 13+, UTF8 databases).
    f"""CREATE FUNCTION ilab_memory_search_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT regexp_replace(
            lower(regexp_replace(normalize(coalesce(value, ''), NFD), '[\\u0300-\\u036f]', '', 'g')),
            '{_SEPARATOR_CLASS}+', ' ', 'g')
        $$""",
    """CREATE FUNCTION ilab_memory_search_vector(title text, topic_key text, content text)
        RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(title)), 'A')
            || setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(topic_key)), 'B')
            || setweight(to_tsvector('pg_catalog.simple', ilab_memory_search_fold(content)), 'C')
        $$""",
    """CREATE FUNCTION ilab_memory_search_trigger() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            NEW.search_vector := ilab_memory_search_vector(NEW.title, NEW.topic_key, NEW.content);
            RETURN NEW;
        END
        $$""",
    f"""CREATE TRIGGER ilab_memory_search_insert BEFORE INSERT ON {OBSERVATION_TABLE}
        FOR EACH ROW EXECUTE FUNCTION ilab_memory_search_trigger()""",
    # Only when the text changed: a duplicate bump or a soft delete does not re-parse the text.
    f"""CREATE TRIGGER ilab_memory_search_update BEFORE UPDATE ON {OBSERVATION_TABLE}
        FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title
            OR OLD.topic_key IS DISTINCT FROM NEW.topic_key OR OLD.content IS DISTINCT FROM NEW.content)
        EXECUTE FUNCTION ilab_memory_search_trigger()""",
    f"CREATE INDEX ilab_mem_obs_search ON {OBSERVATION_TABLE} USING gin (search_vector)",
    # Rows saved before this migration.
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

STATEMENTS = {"sqlite": (SQLITE_CREATE, SQLITE_DROP), "postgresql": (PG_CREATE, PG_DROP)}


def _run(schema_editor, which: int) -> None:
    statements = STATEMENTS.get(schema_editor.connection.vendor)
    if statements is None:
        return
    for sql in statements[which]:
        schema_editor.execute(sql, params=None)


def install(apps, schema_editor):
    _run(schema_editor, 0)


def uninstall(apps, schema_editor):
    _run(schema_editor, 1)


class Migration(migrations.Migration):

    dependencies = [
        ("ilab_memory", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(install, uninstall, elidable=False),
    ]
