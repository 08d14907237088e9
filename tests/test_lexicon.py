"""ilab_memory.services.search.lexicon: what reads as words of some language."""

from ilab_memory.services.search import calibration, lexicon
from tests.test_search_states import MEMORIES, NOTE_TITLES


def test_real_text_acronyms_and_identifiers_are_words():
    texts = [*calibration.bank(), *(f"{title} {content}" for title, content, _ in MEMORIES), *NOTE_TITLES]
    assert [text for text in texts if not lexicon.has_words(text)] == []
    for query in ("GDPR", "what is GDPR", "HTTPS", "csrf", "oauth", "canguro", "KD7XYZ", "ERR_CONN_RESET", "v2.3.1",
                  "SettingWithCopyWarning", "-Werror", "useEffect",
                  "rhythm", "крк"):
        assert lexicon.has_words(query), query
