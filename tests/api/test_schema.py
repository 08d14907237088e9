"""The OpenAPI schema: generated and validated, served with a CDN-free docs page, and fuzzed.

Schemathesis drives every operation in-process (WSGI) with a bounded number of generated
requests, as an agent backend that may act for any user_id: no 500s, every answer documented
and matching its schema.
"""

import re

import pytest
import schemathesis
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis import checks

from tests.api.conftest import API

EXAMPLES_PER_OPERATION = 25

# No 500s; every status, content type and body as documented; invalid input refused.
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


def test_schema_generates_and_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for path in (
        "sessions/start/", "sessions/summary/", "sessions/end/", "sessions/{id}/", "observations/",
        "observations/{id}/", "observations/{id}/timeline/", "observations/{id}/revisions/", "observations/search/",
        "context/", "stats/", "export/", "import/", "forget/",
    ):
        assert f"{API}{path}:" in text, path


def test_schema_and_docs_page_are_served_without_a_cdn(as_alice):
    schema = as_alice.get(API + "schema/?format=json")
    assert schema.status_code == 200 and schema.json()["openapi"].startswith("3.")
    page = as_alice.get(API + "docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "swagger-ui" in html and "/static/drf_spectacular_sidecar/" in html
    # Every script and stylesheet comes from this site; the page also carries a random CSRF
    # token, so a plain search for "cdn" in the text would fail by chance.
    loaded = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']+)["\']', html)
    assert loaded and all(url.startswith("/") and not url.startswith("//") for url in loaded), loaded


def _schema():
    generated = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(generated)
    loaded.app = get_wsgi_application()
    return loaded


schema = _schema()


@pytest.fixture
def keep_test_connection():
    """Like Django's test client: a request must not close the test transaction's connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def agent_token(db, keep_test_connection):
    user = User.objects.create_user("schemathesis-agent")
    user.user_permissions.add(Permission.objects.get(codename="act_for_any_user"))
    return Token.objects.create(user=user).key


# One test per operation, named by it: schemathesis' own parametrize gives every operation the
# same node id, and pytest-xdist, which schedules by node id, ran only some of them.
OPERATIONS = {result.ok().label: result.ok() for result in schema.get_all_operations()}


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_every_operation_answers_within_its_schema(label, agent_token):
    @given(case=OPERATIONS[label].as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def answers_within_its_schema(case):
        case.call_and_validate(headers={"Authorization": f"Token {agent_token}"}, checks=CHECKS)

    answers_within_its_schema()
