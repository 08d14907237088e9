"""docs/clients.md's worked examples run as written: each section's ``python`` block in a fresh
interpreter, against the demo site's data and accounts, and what it prints is the ``text`` block
after it."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "clients.md"


def example(section: str) -> tuple[str, str]:
    """The worked example of a ``## section``: its code and the output the page says it prints."""
    text = PAGE.read_text()
    body = re.search(rf"^## {section}\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL).group(1)
    worked = body.split("### A worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", worked, flags=re.DOTALL).group(1)
    printed = re.search(r"It prints[^\n]*:\n\n```text\n(.*?)```", worked, flags=re.DOTALL).group(1)
    return code, printed


def run(code: str, cwd: Path, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    environment.update(PYTHONPATH=str(ROOT), **env)
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=cwd, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def demo(live_db):
    """The demo's data and accounts (``ilab_memory_demo``), committed; the accounts are removed after."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    before = set(User.objects.values_list("pk", flat=True))
    call_command("ilab_memory_demo", stdout=io.StringIO())
    yield
    User.objects.exclude(pk__in=before).delete()


def token_of(username: str) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user__username=username, defaults={"user": user(username)})[0].key


def user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


def test_the_python_example_prints_what_the_page_says_on_the_demo(api_url, demo, tmp_path):
    code, printed = example("Python")
    assert run(code, tmp_path, MEMORY_URL=api_url, MEMORY_TOKEN=token_of("agent-backend")) == printed


def test_the_langgraph_example_prints_what_the_page_says(tmp_path):
    code, printed = example("LangGraph")
    assert run(code, tmp_path) == printed
    assert (tmp_path / "memory.db").exists()
