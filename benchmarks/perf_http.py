"""The HTTP API through the demo site's WSGI handler, beside DRF's generic views of the same rows.

The demo site (``project.settings``, DEBUG off, token authentication) on a new database with
``ACCOUNTS`` accounts of 1,000 memories each, every memory with a vector. Requests go through
Django's ``WSGIHandler`` in this process (the whole middleware, DRF and view stack a server
runs; no sockets, so no load generator competes for the two cores), round the accounts, one
after another. ``per_second`` is what one worker process serves, one request at a time.

Reads are timed in turns with ``benchmarks.drf_views``: the list of observations (a page of
10) and one observation, served by the same handler. Then what a client calls most: start (the
active session reused), context, hybrid search (the query embedded by the real model) and save,
with ``EMBEDDING_RUNNER = None``, so no background thread runs while requests are timed.
"""

from __future__ import annotations

import io
import json

from .perf_data import analyze, rare_term, write_history
from .perf_timing import line, measure, step

ACCOUNTS = 4
MEMORIES = 1_000
API = "/api/memory"


class Client:
    """Requests straight into a WSGI handler; every answer's status is checked."""

    def __init__(self, handler):
        self.handler = handler

    def __call__(self, method: str, path: str, token: str, body: dict | None = None, expect=(200,)) -> bytes:
        path, _, query = path.partition("?")
        data = json.dumps(body).encode() if body is not None else b""
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(data), "wsgi.errors": io.StringIO(), "CONTENT_LENGTH": str(len(data)),
            "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Token {token}",
            "HTTP_ACCEPT": "application/json",
        }
        status = []
        answer = b"".join(self.handler(environ, lambda code, headers, *exc: status.append(int(code[:3]))))
        if status[0] not in expect:
            raise RuntimeError(f"{method} {path}: {status[0]} {answer[:300]!r}")
        return answer


def accounts() -> list[dict]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from ilab_memory.conf import get_config
    from ilab_memory.models import Observation
    from ilab_memory.services.embedding import embedder_for

    embedder = embedder_for(get_config())
    vectors = (embedder.model_id, embedder.dimensions) if embedder is not None else None
    made = []
    for k in range(ACCOUNTS):
        user = get_user_model().objects.create_user(username=f"bench-{k}")
        user_id = str(user.pk)
        write_history(user_id, MEMORIES, vectors=vectors)
        observations = Observation.objects.filter(user_id=user_id)
        ids = [str(pk) for pk in observations.values_list("pk", flat=True)[:50]]
        made.append({"user_id": user_id, "token": Token.objects.create(user=user).key, "ids": ids})
    analyze()
    return made


def run(*, iterations: int) -> list[dict]:
    from django.core.handlers.wsgi import WSGIHandler

    from . import drf_views

    class Handler(WSGIHandler):
        def get_response(self, request):
            request.urlconf = drf_views.__name__  # Django's own per-request override of ROOT_URLCONF
            return super().get_response(request)

    step(f"{ACCOUNTS} accounts of {MEMORIES:,} memories with vectors")
    users = accounts()
    client = Client(Handler())

    def call(method, path_of, body_of=None, expect=(200,)):
        def one(i):
            a = users[i % len(users)]
            client(method, path_of(a, i), a["token"], body_of(a, i) if body_of else None, expect)
        return one

    pick = lambda a, i: a["ids"][(i // len(users)) % len(a["ids"])]
    reads = {
        "GET observations/ (ours)": call("GET", lambda a, i: f"{API}/observations/?page_size=10"),
        "GET observations/ (DRF ListAPIView)": call("GET", lambda a, i: "/drf/observations/?page_size=10"),
        "GET observations/<id>/ (ours)": call("GET", lambda a, i: f"{API}/observations/{pick(a, i)}/"),
        "GET observations/<id>/ (DRF RetrieveAPIView)": call(
            "GET", lambda a, i: f"/drf/observations/{pick(a, i)}/"),
    }
    # Saves last: the rows they queue would otherwise be embedded by the searches' budget.
    others = {
        "POST sessions/start/ (reuse)": call("POST", lambda a, i: f"{API}/sessions/start/", lambda a, i: {},
                                             (200, 201)),
        "GET context/": call("GET", lambda a, i: f"{API}/context/"),
        "GET observations/search/ (rare term)": call(
            "GET", lambda a, i: f"{API}/observations/search/?q={rare_term(a['user_id'], (i * 37) % 250)}"),
    }
    note = lambda a, i: {"title": f"http {i}", "content": f"note {i} about the service"}
    saves = {"POST observations/": call("POST", lambda a, i: f"{API}/observations/", note, (201,))}
    results = []
    for group, calls in (("http reads", reads), ("http", others), ("http", saves)):
        # Warm-up: every account's first request (its vectors read into the process's cache).
        for name, got in measure(calls, iterations=iterations, warmup=ACCOUNTS).items():
            results.append({"group": group, "op": name, **got})
            step(line(name, got))
    return results
