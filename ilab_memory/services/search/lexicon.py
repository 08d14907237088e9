"""Whether a query is made of words at all: letter strings no supported language spells find nothing.

A query of keyboard mash ("asdkjh qwpeo") or made-up words ("blorft") has no meaning to search
by, yet an embedding model puts its vector near every memory. So a query none of whose words is
a word is answered by words alone (``observation_search``): what a memory holds literally, and
nothing by meaning.

What a word is comes from a lexicon, not from the letters: ``wordfreq``'s frequency lists of
the languages our users write (``LANGUAGES``), which hold everyday words, names, places,
acronyms and technical terms ("GDPR", "HTTPS", "oauth", "canguro"). A token is also a word when
the lexicon cannot judge it:

* it holds a digit ("v2", "kd7xyz", "1234"): an identifier, a version, a number;
* it is not all Latin letters (another script, a mark the lexicon's tokenizer splits);
* it is written in capitals in the query ("KD7", "BKRT"): an acronym the lexicon may not know;
* it is written as an identifier: punctuation inside or in front (``ERR_CONN_RESET``,
  ``std::vector``, ``-Werror``, ``.env``) or a capital inside (``SettingWithCopyWarning``,
  ``useEffect``).

Without ``wordfreq`` (the ``semantic`` extra brings it) every token is a word: nothing is judged.
"""

from __future__ import annotations

import functools
import re

LANGUAGES = ("en", "es")
# Written as an identifier: punctuation inside or in front of a letter ("ERR_CONN_RESET", "v2.3.1",
# "-Werror", ".env"), or a capital after a small letter ("SettingWithCopyWarning", "useEffect").
_IDENTIFIER = re.compile(r"\w[^\w\s]+\w|^[^\w\s¿¡\"'(\[]+[^\W\d_]|[^\W\d_][a-z]+[A-Z]")


@functools.cache
def _frequency():
    """wordfreq's ``word_frequency``, or None when it is not installed."""
    try:
        from wordfreq import word_frequency
    except ImportError:
        return None
    return word_frequency


def is_word(token: str) -> bool:
    """Whether the folded ``token`` is a word of a supported language, or one the lexicon cannot judge."""
    frequency = _frequency()
    if frequency is None or not (token.isascii() and token.isalpha()):
        return True
    return any(frequency(token, language) > 0 for language in LANGUAGES)


def has_words(text: str) -> bool:
    """Whether the query ``text`` holds at least one word (``is_word``), an identifier or an acronym."""
    from .query import tokens

    for raw in text.split():
        if _IDENTIFIER.search(raw) or any(part.isupper() for part in re.findall(r"[^\W\d_]{2,}", raw)):
            return True
        if any(is_word(token) for token in tokens(raw)):
            return True
    return False
