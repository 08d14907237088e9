"""The demo site's settings for the TypeScript client's tests (never a production site's).

The demo's own settings, and: words-only search with no embedder (the client tests need no
vectors, and no model loads), an account bound to one scope, and the API mounted a second time
under another prefix.
"""

from project.settings import *

ILAB_MEMORY = {
    **ILAB_MEMORY,
    "EMBEDDER": None,
    "EMBEDDING_MODE": "inline",
    # An account prepare_site.py adds, bound so the tests meet a 403 scope_bound.
    "ACCOUNT_SCOPES": {"support-bot": "support"},
}

ROOT_URLCONF = "client_test_urls"

# Requests acting for another user_id are logged at INFO by the demo; the tests make hundreds.
LOGGING = {**LOGGING, "loggers": {"ilab_memory.access": {"handlers": ["console"], "level": "WARNING"}}}
