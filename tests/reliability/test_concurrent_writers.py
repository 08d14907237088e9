"""Writers in several processes racing for the same memories through the HTTP API.

The demo site runs in gunicorn with several worker processes and threads, on a database of its
own (tests/api/test_live_http.py's ``site_env``); ``WRITERS`` processes of api_writer.py upsert,
update, delete, search and erase one user's memories on four shared topic keys. Every answer
must be a success or a documented refusal, and no revision may be lost: the revisions each
acknowledged write reports are distinct, and what survives says what the last acknowledged write said.

``ILAB_MEMORY_CONCURRENCY_RUNS`` (default 1) repeats the run; docs/scaling.md reports 20.
"""

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.api.test_live_http import site_env  # noqa: F401  (fixture: a database for the site)
from tests.gunicorn_site import ROOT, gunicorn_site

from .conftest import SCALE

pytestmark = pytest.mark.slow

WRITERS = 4 * SCALE
OPS = 60
RUNS = max(1, int(os.environ.get("ILAB_MEMORY_CONCURRENCY_RUNS", "1")))
WRITER = Path(__file__).with_name("api_writer.py")
# What a refusal may be: a missing row (deleted or erased by another writer), a topic_key a
# concurrent write took (400 topic_key_taken), a lost race the server could not settle (409).
REFUSALS = {404: {"observation_not_found"}, 400: {"topic_key_taken"}, 409: {"write_conflict"}}
MAKE_ACCOUNT = (
    "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
    "u = User.objects.create_user('racer'); print(Token.objects.create(user=u).key, u.pk)"
)
COUNT_REVISIONS = (
    "import json; from ilab_memory.models import Observation; "
    "print(json.dumps({str(o.pk): [o.revision_count, o.content, sorted(o.revisions.values_list('revision', flat=True))]"
    " for o in Observation.objects.all()}))"
)


def manage(env, *args) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def busy_site(site_env, tmp_path):  # noqa: F811
    """(base URL, token, user id, server log) of the demo site in gunicorn with 3 processes × 2
    threads."""
    manage(site_env, "migrate", "--no-input", "-v", "0")
    token, user_id = manage(site_env, "shell", "--no-imports", "-c", MAKE_ACCOUNT).split()[-2:]
    log = tmp_path / "server.log"
    with gunicorn_site(site_env, workers=3, threads=2, log=log) as root:
        yield root + "/api/memory/", token, user_id, log


def race(base: str, token: str, user_id: str, seed: int) -> list[dict]:
    """Every answer of ``WRITERS`` writer processes started together."""
    writers = [
        subprocess.Popen([sys.executable, str(WRITER), base, token, user_id, str(seed * 100 + n), str(OPS)],
                         stdout=subprocess.PIPE, text=True)
        for n in range(WRITERS)
    ]
    lines = [json.loads(line) for writer in writers for line in writer.communicate(timeout=600)[0].splitlines()]
    assert all(writer.returncode == 0 for writer in writers)
    return lines


def check_answers(answers: list[dict], log: Path) -> Counter:
    statuses = Counter((a["op"], a["status"]) for a in answers)
    unexpected = [a for a in answers
                  if not 200 <= a["status"] < 300 and a["code"] not in REFUSALS.get(a["status"], ())]
    assert not unexpected, (unexpected[:5], statuses, log.read_text()[-4000:])
    assert len(answers) == WRITERS * OPS
    return statuses


def check_revisions(answers: list[dict], stored: dict) -> None:
    """No acknowledged write lost: each memory's acknowledged revision numbers are distinct, its
    history holds 0 … revision_count − 1, and it says what its last acknowledged write said."""
    acknowledged = defaultdict(list)
    for answer in answers:
        if answer["op"] in ("upsert", "update") and 200 <= answer["status"] < 300 and answer["action"] != "duplicate":
            acknowledged[answer["id"]].append((answer["revision_count"], answer["content"]))
    for pk, writes in acknowledged.items():
        numbers = [number for number, _ in writes]
        assert len(numbers) == len(set(numbers)), f"two writes of {pk} acknowledged the same revision"
        if pk in stored:
            revision_count, content, history = stored[pk]
            assert history == list(range(1, revision_count))  # revision 1 is the first version
            assert max(numbers) <= revision_count
            if max(numbers) == revision_count:
                assert content == max(writes)[1]


@pytest.mark.parametrize("run", range(RUNS))
def test_concurrent_writers_never_get_a_server_error_and_lose_no_revision(busy_site, site_env, run):  # noqa: F811
    base, token, user_id, log = busy_site
    answers = race(base, token, user_id, seed=run + 1)
    statuses = check_answers(answers, log)
    stored = json.loads(manage(site_env, "shell", "--no-imports", "-c", COUNT_REVISIONS).strip().splitlines()[-1])
    check_revisions(answers, stored)
    assert statuses[("update", 200)] > 0 and statuses[("upsert", 200)] + statuses[("upsert", 201)] > 0
