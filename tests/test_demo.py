"""The demo command loads a useful, idempotent mix of sessions and an operator login; the
demo's launcher checks its port before it says where the site is."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from ilab_memory.models import Observation, Session


@pytest.mark.django_db
def test_demo_data_is_idempotent_and_covers_every_summary_kind():
    call_command("ilab_memory_demo", verbosity=0)
    snapshot = (Session.objects.count(), Observation.objects.count())
    call_command("ilab_memory_demo", verbosity=0)
    assert (Session.objects.count(), Observation.objects.count()) == snapshot
    assert Session.objects.filter(status="active").count() == 3
    assert Session.objects.filter(is_auto_generated=True).exists()
    assert Session.objects.filter(status="completed", is_auto_generated=False).exists()
    assert Session.objects.filter(summary="Memories: (none)").exists()
    assert not Observation.objects.filter(content__contains="abc123").exists()  # private block redacted
    operator = get_user_model().objects.get(username="operator")
    assert operator.is_superuser and operator.check_password("operator")


@pytest.mark.django_db
def test_the_demo_gives_agents_plain_accounts_and_one_service_account_granted_on_purpose():
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    call_command("ilab_memory_demo", verbosity=0)
    call_command("ilab_memory_demo", verbosity=0)  # idempotent
    users = get_user_model().objects
    agent, backend = users.get(username="agent"), users.get(username="agent-backend")
    for account in (agent, backend):
        assert not account.is_superuser and not account.is_staff and not account.has_usable_password()
    grant = Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
    assert list(agent.user_permissions.all()) == [] and list(backend.user_permissions.all()) == [grant]
    as_agent, as_backend = APIClient(), APIClient()
    as_agent.force_authenticate(agent)
    as_backend.force_authenticate(backend)
    assert as_agent.get("/api/memory/context/", {"user_id": "alice"}).status_code == 403
    assert as_agent.get("/api/memory/context/").status_code == 200  # its own memory
    titles = [m["title"] for m in as_backend.get("/api/memory/context/", {"user_id": "alice"}).json()]
    assert "Prefers to be called Ali" in titles


@pytest.mark.django_db
def test_the_plain_agent_token_finds_its_own_demo_memory_in_the_docs_first_calls():
    """docs/api.md's first calls, with the token of the demo's plain ``agent`` (its primary key is
    its user_id): a new session with a past one's summary and memories, search hits, sessions."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    call_command("ilab_memory_demo", verbosity=0)
    agent = get_user_model().objects.get(username="agent")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=agent).key}")

    started = client.post("/api/memory/sessions/start/", {}, format="json")
    assert started.status_code == 201 and started.json()["is_new"] is True
    assert [c["summary"] for c in started.json()["sessions_context"]] == [
        "Wrote down the deploy stack and how the team likes its answers."]
    assert len(started.json()["memories"]) == 3
    found = client.get("/api/memory/observations/search/", {"q": "postgresql"}).json()
    assert found[0]["title"] == "PostgreSQL 16 on the database host"
    assert len(client.get("/api/memory/context/").json()) == 3
    assert len(client.get("/api/memory/sessions/").json()["results"]) == 2
    assert Session.objects.filter(user_id=str(agent.pk)).count() == 2


@pytest.mark.django_db
def test_a_demo_database_loaded_before_the_agent_had_memories_gets_them():
    call_command("ilab_memory_demo", verbosity=0)
    agent_id = str(get_user_model().objects.get(username="agent").pk)
    Session.objects.filter(user_id=agent_id).delete()
    call_command("ilab_memory_demo", verbosity=0)
    assert Observation.objects.filter(user_id=agent_id).count() == 3


@pytest.mark.engine_independent
def test_the_demo_on_a_busy_port_says_so_and_names_port_before_any_banner():
    root = Path(__file__).resolve().parents[1]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "project", "demo", "--port", str(port)], cwd=root,
                                capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"Port {port} on 127.0.0.1 is in use" in result.stderr
    assert f"python3 -m project demo --port {port + 1}" in result.stderr
    assert "Demo site:" not in result.stdout


@pytest.mark.engine_independent
def test_the_demo_refuses_a_port_that_is_not_a_number():
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-m", "project", "demo", "--port", "eighty"], cwd=root,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--port takes a port number" in result.stderr


@pytest.mark.engine_independent
@pytest.mark.parametrize(("argv", "parallel"), [
    ([], True),
    (["-q", "--durations=40"], True),
    (["-k", "min_score"], True),
    (["tests/test_sessions.py"], False),
    (["tests/test_search.py::test_type_filter", "-q"], False),
    (["-n", "0"], False),
    (["-n4"], False),
    (["--version"], False),
    (["-p", "no:xdist"], False),
])
def test_the_test_command_runs_the_whole_suite_on_workers_and_named_tests_serially(argv, parallel):
    from project.__main__ import parallel_options

    assert parallel_options(argv) == (["-n", "auto", "--dist", "loadfile"] if parallel else [])
