"""Deprecated: the former defaults of ``USER_ID_RESOLVER`` and ``SCOPE_RESOLVER``, importable for
one release for settings that name them. The site's hooks are ``adapter.DefaultMemoryAdapter``;
the rules that apply them, ``access.py``."""

from __future__ import annotations

from ..conf import get_config


def user_id_from_request(request) -> str:
    """Deprecated: ``DefaultMemoryAdapter.user_id_of``."""
    return str(request.user.pk)


def scope_from_account(request) -> str | None:
    """Deprecated: ``DefaultMemoryAdapter.scope_of``, reading ``ACCOUNT_SCOPES`` by username."""
    user = request.user
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return get_config().ACCOUNT_SCOPES.get(user.get_username())
