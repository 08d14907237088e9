"""Optional features come as extras; a face whose extra is missing says which one to install."""

from __future__ import annotations

import importlib

from django.core.exceptions import ImproperlyConfigured

# What each extra of pyproject.toml brings that the library imports.
EXTRA_MODULES = {
    "api": ("rest_framework", "drf_spectacular", "django_filters"),
    "mcp": ("mcp", "anyio", "rest_framework"),
    "celery": ("celery",),
}


class MissingExtra(ImproperlyConfigured):
    """An optional face was used without the extra that installs what it needs."""


def require(extra: str) -> None:
    """Raise MissingExtra, naming the extra and the install command, when it is not installed."""
    missing = []
    for module in EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise MissingExtra(
            f"this needs the '{extra}' extra ({', '.join(missing)} not installed): "
            f"pip install 'ilab-memory[{extra}]'"
        )
