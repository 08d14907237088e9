"""Prepare a fresh demo database for the TypeScript client's tests; print the accounts as JSON.

Run with the demo's settings for these tests (``client_test_settings``) and ``ILAB_MEMORY_DEMO_DB``
naming a new SQLite file: migrates, loads the demo (its ``agent`` and ``agent-backend`` accounts),
adds ``support-bot`` (bound to the scope ``support`` by those settings), and gives each account a
token with ``drf_create_token``.
"""

import io
import json
import re

import django

django.setup()

from django.contrib.auth import get_user_model
from django.core.management import call_command

SITE_ACCOUNTS = {"agent": "agent", "backend": "agent-backend", "supportBot": "support-bot"}


def account(username: str) -> dict:
    out = io.StringIO()
    call_command("drf_create_token", username, stdout=out)
    token = re.search(r"Generated token (\w+)", out.getvalue()).group(1)
    user_id = str(get_user_model().objects.get(username=username).pk)  # the default USER_ID_RESOLVER
    return {"token": token, "user_id": user_id}


call_command("migrate", interactive=False, verbosity=0)
call_command("ilab_memory_demo", stdout=io.StringIO())
support_bot, _ = get_user_model().objects.get_or_create(username="support-bot")
support_bot.set_unusable_password()
support_bot.save()
print(json.dumps({name: account(username) for name, username in SITE_ACCOUNTS.items()}))
