"""The decision table (``fusion.RULES``): each rule on hand-made evidence, with and without it.

Pure functions: no database, no model. Each test shows what its rule changes by running the
same evidence with the rule in force and without it."""

import pytest

from ilab_memory.services.search import fusion
from ilab_memory.services.search.fusion import Context, CosinePool, Evidence, decide, judge

pytestmark = pytest.mark.engine_independent

ENGINE = "sqlite-fts5-bm25"
POOL = CosinePool(mean=0.80, deviation=0.02)  # standing = (cosine - 0.80) / 0.02
NULL = 0.84


def evidence(*, relevance=None, all_terms=False, coverage=0.0, cosine=None, recency=1.0, in_period=False):
    return Evidence(relevance, all_terms, coverage, cosine, recency, in_period)


def without(rule):
    return fusion.ACTIVE - {rule}


HYBRID = Context(ENGINE, POOL, NULL)


def test_every_rule_has_a_test_here():
    tested = {name.removeprefix("test_rule_").replace("_", "-") for name in globals() if name.startswith("test_rule_")}
    assert tested == set(fusion.RULES)


def test_rule_exact_match():
    exact = evidence(relevance=5.0, all_terms=True, coverage=1.0, cosine=0.79)  # its vector lies below the mean
    assert judge(exact, HYBRID).semantic == 1.0
    assert judge(exact, HYBRID, without("exact-match")).semantic == 0.0


def test_rule_waiting_by_words():
    waiting = evidence(relevance=5.0, coverage=0.5)  # no vector yet
    judged = judge(waiting, HYBRID)
    assert judged.semantic == judged.lexical > 0
    assert judge(waiting, HYBRID, without("waiting-by-words")).semantic == 0.0


def test_rule_period():
    named = HYBRID._replace(names_period=True)
    inside = evidence(relevance=1.0, coverage=0.2, cosine=0.81, in_period=True)
    outside = inside._replace(in_period=False)
    counted, plain = judge(inside, named), judge(inside, named, without("period"))
    assert counted.in_period and not plain.in_period
    assert judge(outside, named).value < plain.value < counted.value  # out of the period weighs less
    parts = fusion.LEXICAL_WEIGHT * counted.lexical + fusion.SEMANTIC_WEIGHT * counted.semantic
    total = fusion.LEXICAL_WEIGHT + fusion.SEMANTIC_WEIGHT + fusion.PERIOD_WEIGHT
    assert counted.value == pytest.approx((parts + fusion.PERIOD_WEIGHT) / total)
    # A memory of the period with neither words nor meaning is a result by its period alone.
    only_then = evidence(cosine=0.79, in_period=True)
    assert judge(only_then, named).kind == "period" and judge(only_then, named).value > 0
    assert judge(only_then, named, without("period")).kind is None
    # Recency scales words and meaning, not the period: a period every candidate shares keeps their order.
    older, newer = inside._replace(recency=0.8, cosine=0.84), inside._replace(recency=1.0)
    both = fusion.LEXICAL_WEIGHT + fusion.SEMANTIC_WEIGHT
    assert judge(older, named).value - judge(newer, named).value == pytest.approx(
        (judge(older, HYBRID).value - judge(newer, HYBRID).value) * both / (both + fusion.PERIOD_WEIGHT))
    # A query that names no period is valued as before: the period's weight is not in it.
    assert judge(inside, HYBRID).value == pytest.approx(plain.value)
    words_only = Context(ENGINE, names_period=True)
    assert judge(inside, words_only).value > judge(outside, words_only).value == pytest.approx(
        judge(outside, Context(ENGINE)).value * fusion.LEXICAL_WEIGHT / (fusion.LEXICAL_WEIGHT + fusion.PERIOD_WEIGHT))


def test_rule_weak_meaning():
    near = evidence(cosine=0.85)  # above the null: stands on its meaning
    beside = evidence(cosine=0.83)  # stands out of its pool, below the user's null
    thin_words = evidence(relevance=1.0, coverage=0.1, cosine=0.83)  # one common word of many
    enough_words = evidence(relevance=4.0, coverage=fusion.WORDS_ENOUGH, cosine=0.81)
    assert [judge(e, HYBRID).weak for e in (near, beside, thin_words, enough_words)] == [False, True, True, False]
    assert judge(beside, HYBRID).kind == "meaning" and judge(thin_words, HYBRID).kind == "words+meaning"
    assert not judge(beside, HYBRID, without("weak-meaning")).weak
    # Before the model's null is known, meaning alone is weak.
    assert judge(near, Context(ENGINE, POOL, None)).weak
    # Words-only search and memories without a vector are judged by their words: never weak.
    assert not judge(evidence(relevance=1.0, coverage=0.1), HYBRID).weak
    assert not judge(thin_words, Context(ENGINE)).weak


def test_rule_weak_cap():
    strong = [(evidence(cosine=0.90), "strong")]
    weak = [(evidence(cosine=0.835 - i * 0.001), f"weak{i}") for i in range(fusion.WEAK_CAP + 1)]
    kept = [item for _, item in decide(strong + weak, HYBRID, limit=None)]
    assert kept == ["strong", *[f"weak{i}" for i in range(fusion.WEAK_CAP)]]
    assert len(decide(strong + weak, HYBRID, limit=None, rules=without("weak-cap"))) == fusion.WEAK_CAP + 2
    # Results standing on their own evidence are never capped.
    many = [(evidence(cosine=0.85 + i * 0.001), f"strong{i}") for i in range(8)]
    assert len(decide(many + weak, HYBRID, limit=None)) == 8 + fusion.WEAK_CAP


def test_no_evidence_is_no_result():
    assert decide([(evidence(cosine=0.79), "below the mean")], HYBRID, limit=None) == []
    assert decide([(evidence(), "nothing")], Context(ENGINE), limit=None) == []


def test_value_lies_in_zero_one_and_ties_keep_their_order():
    best = evidence(relevance=1e9, all_terms=True, coverage=1.0, cosine=1.0, in_period=True)
    for context in (HYBRID, HYBRID._replace(names_period=True), Context(ENGINE, names_period=True)):
        assert judge(best, context).value == pytest.approx(1.0) and judge(best, context).value <= 1.0
    same = [(evidence(cosine=0.85), "first"), (evidence(cosine=0.85), "second")]
    assert [item for _, item in decide(same, HYBRID, limit=None)] == ["first", "second"]
    assert [item for _, item in decide(same, HYBRID, limit=1)] == ["first"]


def test_the_breakdown_says_the_evidence_and_the_mark():
    score = judge(evidence(cosine=0.83), HYBRID).score(engine=ENGINE, mode="any", terms=2, model_id="m", scope="")
    assert score.breakdown["evidence"] == "meaning" and score.breakdown["weak"] is True
    words = judge(evidence(relevance=3.0, coverage=1.0, all_terms=True), Context(ENGINE))
    assert words.score(engine=ENGINE, mode="all", terms=1, model_id=None, scope="").breakdown["evidence"] == "words"
