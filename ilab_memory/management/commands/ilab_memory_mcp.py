from django.core.management.base import CommandError

from ilab_memory.exceptions import ValidationError
from ilab_memory.extras import MissingExtra, require

from ..base import DatabaseCommand


class Command(DatabaseCommand):
    database_help = "Database alias of the memory."
    help = (
        "Serve one user's memory to an agent over MCP stdio, on this site's database. stdout carries "
        "only the protocol; logs go to stderr. Over HTTP, mount ilab_memory.mcp.http instead (docs/mcp.md)."
    )
    # System checks print to stderr only, but a host's warnings have no place before the protocol.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The user_id whose memory this process serves.")
        parser.add_argument("--scope", default="",
                            help="The scope (this agent's part of the user's memory) every call acts in; it also "
                                 "reads the shared space. Default: the shared space itself.")
        super().add_arguments(parser)  # --database, last as before

    def handle(self, *args, **options):
        try:
            require("mcp")
        except MissingExtra as error:
            raise CommandError(f"ilab_memory_mcp: {error}") from None
        from ilab_memory import ILabMemory
        from ilab_memory.conf import get_config
        from ilab_memory.mcp import stdio
        from ilab_memory.scopes import clean_write_scope

        try:
            user_id = stdio.clean_user(options["user"])
        except ValidationError as error:
            raise CommandError(f"--user {error.message}") from None
        try:
            scope = clean_write_scope(options["scope"], config=get_config())
        except ValidationError as error:
            raise CommandError(f"--scope {error.message}") from None
        stdio.serve(ILabMemory(using=options["database"]), user_id, scope)
