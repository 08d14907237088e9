"""From the user's text to search terms, the same for both engines.

* **Folding** (``fold`` / ``tokens``): accents stripped (NFD, combining marks U+0300–U+036F
  dropped), lowercased, split on punctuation and symbols. The PostgreSQL function
  ``ilab_memory_search_fold`` (``postgresql.py``) is the same rule in SQL; SQLite's FTS5
  tokenizer ``unicode61 remove_diacritics 2`` is the same rule for every Latin-script text.
* **Parsing** (``parse_query``): words and "quoted phrases" become phrase terms of folded
  tokens; connectors are skipped, and a question's function words dropped beside other terms.
* **The fallback's alternatives** (``any_terms``): the terms, their words, and prefixes cut by
  ``stem``, for the "any term" query when "all terms" finds nothing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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
    [
        "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do", "does", "for", "from", "had",
        "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our",
        "should", "so", "than", "that", "the", "their", "them", "then", "there", "these", "this", "those", "to",
        "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
        "your", "al", "como", "con", "cual", "cuando", "de", "del", "donde", "el", "en", "es", "esta", "este", "la",
        "las", "lo", "los", "mas", "para", "pero", "por", "porque", "que", "se", "sin", "sobre", "su", "sus", "un",
        "una", "unos", "unas", "y", "o",
    ]
)


@dataclass(frozen=True)
class ParsedQuery:
    """Terms, each a phrase of one or more folded tokens, in query order without repeats."""

    terms: tuple[tuple[str, ...], ...]

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
    function_words: list[tuple[str, ...]] = []
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
                function_words.append(phrase)
            else:
                required.append(phrase)
    if not required:  # a query of only "OR" or "the who" still searches for those words
        return ParsedQuery(tuple(dict.fromkeys(function_words or connectors)))
    # Beside other terms a question's function words are neither required nor searched.
    return ParsedQuery(tuple(dict.fromkeys(required)))


# -- the "any term" fallback ---------------------------------------------------------------

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


def any_terms(parsed: ParsedQuery) -> list[tuple[str, ...]]:
    """The fallback's alternatives: every phrase, every word of a multi-word phrase, and a
    prefix (marked by a trailing ``*`` token) for words with a common suffix. A question's
    function words are not among them: a memory that shares only "the" or "what" with a query
    has not matched it (a query of nothing but such words has them as its terms)."""
    alternatives = list(parsed.terms)
    alternatives += [(word,) for word in parsed.words if (word,) not in parsed.terms]
    alternatives += [(prefix, "*") for prefix in dict.fromkeys(filter(None, map(stem, parsed.words)))]
    return alternatives
