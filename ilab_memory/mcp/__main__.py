"""``ilab-memory-mcp --db ./mem.db --user alice [--scope coding]`` (or ``python -m ilab_memory.mcp …``):
the embedded memory as an MCP stdio server."""

from __future__ import annotations

import argparse
import os
import sys


def invoked_as() -> str:
    """The command as the user typed it: the console script's name, or ``python -m ilab_memory.mcp``
    (under ``-m`` argv[0] is this file's path, which names nothing one could type)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name in ("__main__.py", "-m", "-c"):
        return "python -m ilab_memory.mcp"
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=invoked_as(),
        description="Serve one user's ilab_memory (a SQLite file) to an agent over MCP stdio.",
    )
    parser.add_argument("--db", required=True, help="the SQLite memory file (created and migrated if new)")
    parser.add_argument("--user", required=True, help="the user_id whose memory this process serves")
    parser.add_argument("--scope", default="",
                        help="the scope (this agent's part of the user's memory) every call acts in; it also "
                             "reads the shared space (default: the shared space itself)")
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    args = parser.parse_args(argv)

    from ..extras import MissingExtra, require

    try:
        require("mcp")
    except MissingExtra as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    from ..conf import DEFAULTS, Config
    from ..exceptions import IlabMemoryError
    from ..scopes import clean_write_scope
    from . import stdio

    stdio.configure_logging(args.log_level)
    try:
        # Checked before the (slower) set-up; embedded mode runs on the default settings.
        user_id = stdio.clean_user(args.user, limit=DEFAULTS["MAX_USER_ID_CHARS"])
        scope = clean_write_scope(args.scope, config=Config(DEFAULTS))
        with stdio.protocol_safe_stdout():
            from ..facade import ILabMemory

            memory = ILabMemory.from_path(args.db)
    except IlabMemoryError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    stdio.serve(memory, user_id, scope)
    return 0


if __name__ == "__main__":
    sys.exit(main())
