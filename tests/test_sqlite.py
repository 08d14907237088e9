"""ilab_memory.services.search.sqlite: the FTS5 statement's reading of a token."""

import sqlite3

from ilab_memory.services.search.query import tokens
from ilab_memory.services.search.sqlite import fts5_reads_as_is


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
