"""ilab_memory.services.search.sqlite: the FTS5 statement's reading of a token and of the index's entries."""

import sqlite3

import pytest
from django.db.models import Q

from ilab_memory.models import Observation
from ilab_memory.services.search.query import tokens
from ilab_memory.services.search.sqlite import (
    LIVE_ROWS_INDEX,
    SQLITE_CONTENT,
    SQLITE_CONTENT_OBSERVATION,
    SQLITE_TABLE,
    fts5_reads_as_is,
)


def test_fts5_reads_as_is_agrees_with_sqlites_own_tokenizer():
    """Every code point that can end up in a folded query token (``query.tokens``): where
    ``fts5_reads_as_is`` says FTS5 reads the token as itself, FTS5's unicode61 tokenizer (the
    index's) gives exactly that one term. (Where it says no, the statement asks FTS5's MATCH.)"""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    candidates = []
    for code in range(0x20, 0x30000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        folded = tokens("a" + chr(code) + "b")
        if len(folded) == 1 and fts5_reads_as_is(folded[0]):
            candidates.append((code, folded[0]))
    db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", candidates)
    terms = {}
    for doc, term in db.execute("SELECT doc, term FROM v ORDER BY doc, \"offset\""):
        terms.setdefault(doc, []).append(term)
    wrong = [(hex(code), token, terms.get(code)) for code, token in candidates if terms.get(code) != [token]]
    assert not wrong
    assert len(candidates) > 100_000  # letters and digits of every script FTS5 reads as they are


def test_the_index_keeps_each_entrys_observation_in_the_content_column_the_statement_reads(tmem):
    """The ranked statement maps an index entry to its observation through FTS5's content shadow
    table (``SQLITE_CONTENT``, column ``SQLITE_CONTENT_OBSERVATION``): each entry's column there
    is the id of the observation the entry indexes."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 index")
    saved = [tmem.mem_save("alice", f"Note {i}", f"Tea number {i}.").observation.id for i in range(3)]
    with connection.cursor() as cursor:
        cursor.execute(  # raw: the index has no model
            f"SELECT e.rowid, s.{SQLITE_CONTENT_OBSERVATION} FROM {SQLITE_TABLE} e"
            f" JOIN {SQLITE_CONTENT} s ON s.id = e.rowid WHERE e.observation_id = s.{SQLITE_CONTENT_OBSERVATION}"
        )
        mapped = cursor.fetchall()
    assert sorted(str(pk).replace("-", "") for _, pk in mapped) == sorted(pk.replace("-", "") for pk in saved)


def test_the_index_the_statement_counts_through_is_the_models_index_of_a_users_live_rows():
    [index] = [index for index in Observation._meta.indexes if index.name == LIVE_ROWS_INDEX]
    assert index.fields[0] == "user_id" and index.condition == Q(deleted_at__isnull=True)
