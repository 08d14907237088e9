"""MCP over stdio: one process serves one user's memory, in one scope, to the agent that started it.

stdout carries only the protocol: the SDK's ``stdio_server`` points file descriptor 1 at stderr
while it serves, and the bootstrap before it (Django set-up, migrations) runs with
``sys.stdout`` sent to stderr too. Logs go to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any


class FixedUser:
    """The principal of a stdio server: the one user_id (and scope) it was started for."""

    def __init__(self, user_id: str, scope: str = ""):
        self.user_id = user_id
        self.scope = scope

    def acting_user_id(self, requested: str | None) -> str:
        from .server import ToolRefusal

        if requested is None or clean_user(requested) == self.user_id:
            return self.user_id
        raise ToolRefusal({
            "detail": "This memory server serves one user_id, the one it was started with (--user); "
                      "another user_id needs a server started for it.",
            "code": "act_for_any_user_required",
        })

    def check_throttle(self) -> None:
        """A local process serving its own agent is not throttled."""

    def may_act_for_any_user(self) -> bool:
        return False  # one user per process


def serve(memory, user_id: str, scope: str = "") -> None:
    """Serve ``memory`` for ``user_id`` in ``scope`` (a cleaned one) on stdin/stdout until stdin closes."""
    import anyio
    from mcp.server.stdio import stdio_server

    from .server import build_server

    principal = FixedUser(user_id, scope)
    server = build_server(memory, lambda ctx: principal)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


@contextlib.contextmanager
def protocol_safe_stdout():
    """While setting up, anything printed goes to stderr, so stdout stays the protocol's."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def configure_logging(level: str = "WARNING") -> None:
    """Log lines to stderr (stdout belongs to the protocol)."""
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def clean_user(user_id: Any, *, limit: int | None = None) -> str:
    """The --user value as every face stores it (stripped, checked); ValidationError when unusable.

    ``limit`` defaults to the site's ``MAX_USER_ID_CHARS`` (Django must be set up then).
    """
    from ..validation import clean_user_id

    if limit is None:
        from ..conf import get_config

        limit = get_config().MAX_USER_ID_CHARS
    return clean_user_id(user_id, limit=limit)

