"""The demo's settings with the adapter docs/api.md's worked example describes: the accounts
``support-bot`` and ``coding-assistant`` bound to the scopes ``support`` and ``coding`` by the
site's adapter (``scope_of``). tests/test_docs_api.py serves the demo with it."""

from ilab_memory.adapter import DefaultMemoryAdapter
from project.settings import *
from project.settings import ILAB_MEMORY

BOUND = {"support-bot": "support", "coding-assistant": "coding"}


class BoundAgents(DefaultMemoryAdapter):
    def scope_of(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.get_username() in BOUND:
            return BOUND[user.get_username()]
        return super().scope_of(request)


ILAB_MEMORY = {**ILAB_MEMORY, "ADAPTER": "tests.docs_site.BoundAgents"}
