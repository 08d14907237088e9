"""The lexical ranking's collection statistics are the searching user's own, on both engines.

``relevance`` is bm25's shape over the user's live rows (SQLite: computed from the index's term
frequencies; PostgreSQL: idf × ts_rank per alternative), and ``coverage`` is the idf-weighted
share of the query's terms a row holds. Another user's memories never move either.
"""

import math

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from ilab_memory.models import Observation, Session, SessionStatus
from ilab_memory.services.observations import dedupe_hash
from ilab_memory.services.search import parse_query
from ilab_memory.services.search.lexical import matching_rows
from ilab_memory.services.search.query import any_terms, tokens

ALICE = [
    ("Python version", "We pin Python 3.11 in the Dockerfile."),
    ("Deploy checklist: migrations first", "Run the migrations before switching traffic."),
    ("Python deploy script", "scripts/deploy.py builds the wheel and uploads it."),
    ("Virtualenv location", "The python virtualenv lives in .venv next to the code."),
    ("Friday freeze", "No deploy after noon on Friday."),
    ("Standup", "Daily at 9:30 in room B."),
    ("Linting", "Ruff runs in CI for every python file."),
    ("Rollback", "To roll back a deploy, deploy the previous tag again."),
    ("Invoice", "Send the invoice to accounting on the first working day."),
    ("Desk", "Works standing in the mornings."),
]


@pytest.fixture(autouse=True)
def words_only():
    with override_settings(ILAB_MEMORY={"EMBEDDER": None}):
        yield


def save_all(mem, user_id, notes):
    return [mem.mem_save(user_id, title, content).observation for title, content in notes]


def bulk_history(user_id: str, notes) -> None:
    """Many memories at once through the ORM, as an import writes them (the index follows by trigger)."""
    now = timezone.now()
    session = Session.objects.create(user_id=user_id, status=SessionStatus.COMPLETED, started_at=now,
                                     last_activity_at=now, ended_at=now, summary="imported")
    Observation.objects.bulk_create(
        [Observation(user_id=user_id, session=session, type="manual", title=title, content=content,
                     dedupe_hash=dedupe_hash(type="manual", title=title, content=content),
                     created_at=now, updated_at=now, last_seen_at=now)
         for title, content in notes],
        batch_size=500,
    )


def lexical(user_id: str, query: str, *, count: int = 30):
    """The engine's rows for ``query``: (title, relevance, all_terms, coverage), best first."""
    _, rows = matching_rows(parse_query(query), user_id=user_id, type=None, head=100, count=count, using="default")
    return [(row.title, float(row.relevance), bool(row.all_terms), float(row.coverage)) for row in rows]


def idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


# -- another user's history ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_users_ranking_and_values_do_not_move_with_another_users_history(mem, clock):
    save_all(mem, "alice", ALICE)
    before = {query: lexical("alice", query) for query in ("python deploy", "deploy", "migrations first", "python")}
    searched = [(r.title, r.score.breakdown["relevance"]) for r in mem.mem_search("alice", "python deploy")]

    # Bob's long history shares alice's words, and says "deploy" in every memory.
    bulk_history("bob", [(f"Deploy log {k}", f"deploy of build {k} finished; python {k % 7} deploy again")
                         for k in range(3000)])

    assert {query: lexical("alice", query) for query in before} == before
    assert [(r.title, r.score.breakdown["relevance"]) for r in mem.mem_search("alice", "python deploy")] == searched
    # The example: the checklist keeps its place, and "deploy" keeps a weight (global
    # statistics gave it 0 once bob's history held the word in nearly every row).
    deploy = [title for title, *_ in before["python deploy"]]
    assert deploy.index("Deploy checklist: migrations first") == 2
    assert all(relevance > 0 for _, relevance, _, _ in before["python deploy"])


@pytest.mark.django_db
def test_statistics_count_the_users_live_rows_only(mem, clock):
    """A soft-deleted memory and another user's memories change neither N nor a document frequency."""
    save_all(mem, "carol", [("Zebra crossing", "Cross at the zebra."), ("Apple pie", "Bake at 180 degrees.")])
    before = lexical("carol", "zebra apple")
    gone = mem.mem_save("carol", "Zebra sighting", "A zebra at the zoo.").observation
    mem.mem_delete("carol", gone.id)
    save_all(mem, "dave", [("Zebra", "zebra zebra"), ("Apple", "apple")] * 5)
    assert lexical("carol", "zebra apple") == before


# -- coverage ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_coverage_is_the_idf_weighted_share_of_the_terms_held(mem, clock):
    notes = [("Zebra crossing", "Look both ways at the zebra.")]  # the rare term alone
    notes += [(f"Apple note {k}", f"An apple a day, number {k}.") for k in range(10)]  # the common one alone
    notes += [("Zebra and apple", "A zebra ate an apple.")]  # both
    notes += [(f"Other {k}", "Nothing to see here.") for k in range(8)]
    save_all(mem, "carol", notes)
    rows = {title: (all_terms, coverage) for title, _, all_terms, coverage in lexical("carol", "zebra apple")}

    n, rare, common = 20, idf(20, 2), idf(20, 11)  # 20 live rows; "zebra" in 2 of them, "apple" in 11
    assert rows["Zebra and apple"] == (True, 1.0)
    assert rows["Zebra crossing"][0] is False
    assert rows["Zebra crossing"][1] == pytest.approx(rare / (rare + common), rel=1e-9)
    assert rows["Apple note 0"][1] == pytest.approx(common / (rare + common), rel=1e-9)
    assert rows["Zebra crossing"][1] > 0.5 > rows["Apple note 0"][1] > 0  # holding the rare term covers more
    assert n == len(notes)


@pytest.mark.django_db
def test_coverage_is_one_exactly_when_every_term_is_held(mem, clock):
    save_all(mem, "alice", ALICE)
    for query in ("python deploy", "deploy the previous tag", '"roll back" deploy', "python deploy nowhere",
                  "scripts/deploy.py", "migrations"):
        rows = lexical("alice", query)
        assert rows, query
        for title, _, all_terms, coverage in rows:
            assert (coverage == 1.0) == all_terms, (query, title, coverage)
            assert 0.0 <= coverage <= 1.0


@pytest.mark.django_db
def test_a_phrase_counts_only_where_its_words_follow_each_other(mem, clock):
    save_all(mem, "alice", [("Pool", "connection pool size 20, connection pool in transaction mode"),
                            ("Reversed", "pool connection is not the phrase"),
                            ("Once", "one connection pool here")])
    rows = {title: (relevance, all_terms, coverage) for title, relevance, all_terms, coverage
            in lexical("alice", '"connection pool"')}
    assert rows["Pool"][1:] == rows["Once"][1:] == (True, 1.0)
    assert rows["Reversed"][1:] == (False, 0.0)  # found by its words, not holding the phrase
    assert rows["Pool"][0] > rows["Once"][0] > rows["Reversed"][0]


@pytest.mark.django_db
def test_a_word_fts5_splits_otherwise_is_still_held_and_ranked(mem, clock):
    """Devanagari keeps combining marks that FTS5's tokenizer splits at: FTS5's own MATCH decides."""
    save_all(mem, "alice", [("नमस्ते दुनिया", "पहला नोट"), ("Hello", "world")])
    (title, relevance, all_terms, coverage), = lexical("alice", "नमस्ते")
    assert title == "नमस्ते दुनिया" and all_terms and coverage == 1.0 and relevance > 0


# -- the two engines -----------------------------------------------------------------------

AGREEMENT = [
    ("Celery retry policy", "Tasks retry with exponential backoff, at most five times."),
    ("Retry budget", "The API client gives up after three attempts."),
    ("Postgres connection pool", "pgbouncer in transaction mode, pool size 20."),
    ("Swimming pool", "The pool opens at seven; bring a towel."),
    ("Deploy checklist", "Run migrations first, then switch traffic, then watch the errors."),
    ("Friday freeze", "No deploy after noon on Friday."),
    ("Flaky test", "test_orders fails one run in twenty on the CI runners."),
    ("Standup", "Daily at 9:30 in room B with the whole team."),
]


@pytest.mark.django_db
@pytest.mark.parametrize("query, expected", [
    ("retry backoff", "Celery retry policy"),
    ("pool pgbouncer", "Postgres connection pool"),  # every term
    ("pgbouncer", "Postgres connection pool"),
    ("towel pool", "Swimming pool"),
    ("deploy friday", "Friday freeze"),
    ("migrations traffic", "Deploy checklist"),
    ("flaky runners", "Flaky test"),
    ("retry attempts", "Retry budget"),
    ("standup team", "Standup"),
])
def test_both_engines_give_the_same_first_result(mem, clock, query, expected):
    """The suite runs on SQLite and, with DATABASE_URL, on PostgreSQL: the same expectation on both,
    with another user's history that shares the words."""
    save_all(mem, "alice", AGREEMENT)
    bulk_history("bob", [(f"Pool {k}", f"retry deploy pool friday traffic {k}") for k in range(300)])
    assert lexical("alice", query)[0][0] == expected
    assert mem.mem_search("alice", query)[0].title == expected


# -- SQLite: bm25 from the user's own rows, and the tokenizer it relies on ----------------------


def sqlite_only():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's statement; PostgreSQL ranks each alternative with ts_rank")


def reference_bm25(notes, query):
    """bm25 as docs/scoring.md states it, over ``notes`` (the user's live rows): {title: relevance}."""
    alternatives = any_terms(parse_query(query))
    fields = [((tokens(title), 10.0), (tokens(""), 4.0), (tokens(content), 1.0)) for title, content in notes]

    def frequency(doc, alternative):
        prefix = alternative[-1:] == ("*",)
        words = alternative[:-1] if prefix else alternative
        found = 0.0
        for field, weight in doc:
            for start in range(len(field) - len(words) + 1):
                window = field[start:start + len(words)]
                if window == list(words) or (prefix and window[0].startswith(words[0])):
                    found += weight
        return found

    table = [[frequency(doc, a) for a in alternatives] for doc in fields]
    matched = [k for k, row in enumerate(table) if any(row)]
    lengths = {k: len(notes[k][0]) + len(notes[k][1]) for k in matched}
    average = sum(lengths.values()) / len(lengths)
    result = {}
    for k in matched:
        score = 0.0
        for i in range(len(alternatives)):
            f = table[k][i]
            if f:
                df = sum(1 for j in matched if table[j][i])
                score += idf(len(notes), df) * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * lengths[k] / average))
        result[notes[k][0]] = score
    return result


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["python deploy", "deploy", "deployments python", '"roll back"', "previous tag"])
def test_sqlite_relevance_is_bm25_over_the_users_rows(mem, clock, query):
    sqlite_only()
    save_all(mem, "alice", ALICE)
    bulk_history("bob", [(f"Deploy {k}", "python deploy deploy roll back") for k in range(50)])
    got = {title: relevance for title, relevance, _, _ in lexical("alice", query)}
    assert got == pytest.approx(reference_bm25(ALICE, query), rel=1e-9)
