"""The demo site as one ASGI application: Django at every path, the memory's MCP endpoints at
/mcp/ (the shared space) and /mcp/coding/ (the "coding" scope).

Serve it with an ASGI server: ``.venv/bin/python -m uvicorn project.asgi:application``
(``python3 -m project demo`` does). Static files are served too while DEBUG is on, as
``runserver`` does.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
# Read by the settings: under ASGI each request runs in a thread of its own, so connections
# kept across requests would pile up (one per thread) instead of being reused.
os.environ["ILAB_MEMORY_DEMO_ASGI"] = "1"
django_application = get_asgi_application()

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from ilab_memory.mcp.http import with_mcp

if settings.DEBUG:
    django_application = ASGIStaticFilesHandler(django_application)

# /mcp/ serves the shared space; /mcp/coding/ an agent bound to the "coding" scope (docs/mcp.md).
application = with_mcp(with_mcp(django_application, path="/mcp/"), path="/mcp/coding/", scope="coding")

# Memories left waiting by a process that stopped before embedding them (the demo's loader, a
# killed server) are embedded now, so the console's backlog clears without waiting for a save.
from django.db import connections

from ilab_memory.conf import get_config
from ilab_memory.services.embedding import resume_waiting

resume_waiting(config=get_config())
connections.close_all()  # the check's own: requests run in threads of their own
