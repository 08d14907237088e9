"""extras.py: a face used without the extra that installs what it needs names the extra and the
install command, in a real interpreter where the extra's modules cannot be imported."""

import subprocess
import sys
from pathlib import Path

from tests.api.test_live_http import site_env  # noqa: F401  (fixture: a database for subprocesses)

ROOT = Path(__file__).resolve().parent.parent


WITHOUT = "import sys\nfor name in {modules!r}:\n    sys.modules[name] = None  # as if the extra were not installed\n"


def run_without(modules, code, **kwargs):
    """``code`` in a fresh interpreter where importing ``modules`` fails, as in a site without
    their extra (the same Python, so nothing else differs)."""
    return subprocess.run([sys.executable, "-c", WITHOUT.format(modules=modules) + code],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False, **kwargs)


def test_the_mcp_command_without_the_mcp_extra_names_the_extra(site_env):  # noqa: F811
    done = run_without(["mcp", "anyio"], "from django.core.management import execute_from_command_line\n"
                       "execute_from_command_line(['manage.py', 'ilab_memory_mcp', '--user', 'alice'])",
                       env=site_env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "CommandError: ilab_memory_mcp: this needs the 'mcp' extra (mcp, anyio not installed): " \
           "pip install 'ilab-memory[mcp]'" in done.stderr


def test_the_api_without_the_api_extra_names_the_extra(site_env):  # noqa: F811
    site = ("from django.conf import settings\n"  # a site that installs the app without the api extra
            "settings.configure(INSTALLED_APPS=['django.contrib.contenttypes', 'django.contrib.auth', 'ilab_memory'],"
            " DATABASES={'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}})\n"
            "import django\ndjango.setup()\nimport ilab_memory.api.urls")
    done = run_without(["rest_framework"], site, env=site_env)
    assert done.returncode == 1
    assert "MissingExtra: this needs the 'api' extra (rest_framework not installed)" in done.stderr
