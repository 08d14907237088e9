"""Demo site settings. SQLite file by default; ``DATABASE_URL`` switches to PostgreSQL."""

import os
import tempfile
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "ilab_memory",
    "project",  # the demo site's own command, ilab_memory_demo (not in the wheel)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The console in the browser's language (English or Spanish, ilab_memory/locale).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"  # Django plus the MCP endpoint at /mcp/

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

SQLITE_OPTIONS = {
    # Writers take the lock when they begin and wait for each other instead of failing.
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}

# Connections live across requests under WSGI (gunicorn), as docs/deploy.md advises: a new one
# per request costs a connection set-up. Under ASGI (project/asgi.py, the demo's uvicorn) each
# request runs in a thread of its own, so kept connections would pile up, one per thread, until
# PostgreSQL refuses more: Django's docs say to turn them off there.
conn_max_age = 0 if os.environ.get("ILAB_MEMORY_DEMO_ASGI") == "1" else 60

if os.environ.get("DATABASE_URL"):
    DATABASES = {
        "default": dj_database_url.parse(
            os.environ["DATABASE_URL"], conn_max_age=conn_max_age, conn_health_checks=True
        )
    }
    # One test database per run, so two runs on one server never clobber each other.
    DATABASES["default"]["TEST"] = {"NAME": f"test_ilab_memory_{os.getpid()}"}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("ILAB_MEMORY_DEMO_DB", str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": SQLITE_OPTIONS,
            "CONN_MAX_AGE": conn_max_age,  # skip opening the file and running init_command per request
            # A file, not memory: tests with several threads need one shared database.
            "TEST": {"NAME": os.path.join(tempfile.gettempdir(), f"ilab_memory_test_{os.getpid()}.sqlite3")},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"

LOGIN_URL = "admin:login"

ILAB_MEMORY = {
    # Who embeds new memories off the request: the demo's own thread (the console's backlog
    # clears on its own); "ilab_memory.runners.celery.runner" for workers started with
    # `celery -A project.celery worker`; set but empty: only a search's budget and
    # ilab_memory_embed. These settings are the test suite's too: under pytest (which sets
    # PYTEST_VERSION for itself and its child processes) no thread starts unless a test asks.
    "EMBEDDING_RUNNER": os.environ.get(
        "ILAB_MEMORY_EMBEDDING_RUNNER", "" if "PYTEST_VERSION" in os.environ else "ilab_memory.runners.thread.runner"
    ) or None,
    # The embedder ("default": multilingual-e5-small, or a dotted path) and a worker's lease on
    # a batch, in seconds: the library's defaults unless set (tests/runners/test_celery.py starts its
    # Celery workers with its own).
    "EMBEDDER": os.environ.get("ILAB_MEMORY_EMBEDDER", "default") or None,  # set but empty: words only
    "EMBED_LEASE_SECONDS": int(os.environ.get("ILAB_MEMORY_EMBED_LEASE_SECONDS", "300")),
    # A search's time for embedding its user's newest memories: the library's 150 ms, none under
    # pytest, whose tests count what a search embeds (tests/test_search_backlog.py limits it).
    "SEARCH_EMBED_MILLISECONDS": None if "PYTEST_VERSION" in os.environ else 150,
}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "ilab_memory")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# A Redis that accepts connections but never answers (hung, failing over, a dead NAT path) would
# otherwise block the write that enqueues a task on commit forever: socket reads wait without a
# limit by default. With these the publish fails within seconds; the write logs it and goes on.
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 3, "socket_connect_timeout": 3}

# The memory API (ilab_memory.api) takes authentication from here; its views set the rest.
REST_FRAMEWORK = {
    # Token first: an anonymous request then gets 401 with a WWW-Authenticate header, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "ilab_memory.api.authentication.BearerTokenAuthentication",  # the same token as "Bearer <key>"
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "ilab_memory API",
    "DESCRIPTION": "Durable, per-user memory for AI agents.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page's assets are served from drf-spectacular-sidecar: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Request bodies above this are refused with 413 by the API (Django's default, 2.5 MB, stated
# here because imports of a large history are the one request that approaches it).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# Requests that act for another user_id (a service account naming one) are logged here, and a
# server error's traceback whatever DEBUG says (Django's default shows it only with DEBUG on).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "ilab_memory.access": {"handlers": ["console"], "level": "INFO"},
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}
