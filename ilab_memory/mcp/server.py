"""One MCP server definition over the ``ILabMemory`` facade, for every transport.

Built on the SDK's low-level ``Server``: the tools are listed with hand-made input schemas (the
limits of the settings) and the output schemas of ``ilab_memory.encoding``, and each call
returns a ``CallToolResult`` with structured content in the API's JSON shape plus a short text.
Every failure of a call is a tool error (``isError``) whose structured content is the API's
error body for the same input (``encoding.error``: ``detail``, ``code``, field ``errors``,
``limit``, ``size``; or the API's 400 for arguments only this face checks); nothing escapes as a
protocol error or a traceback. Unknown tool names are protocol errors, as the MCP spec asks.

Who calls is a *principal* the transport supplies per request (``principal_for(ctx)``): the
HTTP transport's wraps the DRF-authenticated request, stdio's is one fixed user_id. The principal
also names the one scope its calls act in; no tool takes a scope, so an agent cannot
choose another's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types
from asgiref.sync import sync_to_async
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .. import encoding, metrics
from ..exceptions import IlabMemoryError
from . import tools

logger = logging.getLogger("ilab_memory.mcp")

SERVER_NAME = "ilab-memory"


class ToolRefusal(Exception):
    """A call refused before it reached the memory (permission, throttle); ``body`` as the API's."""

    def __init__(self, body: dict[str, Any]):
        super().__init__(body["detail"])
        self.body = body


class Principal(Protocol):
    """Who is calling, as far as a tool call needs to know."""

    scope: str
    """The scope every call acts in: writes land in it, reads see it and the shared space."""

    def acting_user_id(self, requested: str | None) -> str:
        """The user_id the call acts for; raises ToolRefusal when ``requested`` is not allowed."""

    def check_throttle(self) -> None:
        """Raises ToolRefusal when the caller is over its rate."""

    def may_act_for_any_user(self) -> bool:
        """Whether the caller may name another user_id."""


# The caller's identity, as the API's me/ answers it: what a client reads before its first call.
ME_URI = "ilab-memory://me"


def error_body(exc: IlabMemoryError | ToolRefusal | tools.InvalidArguments) -> dict[str, Any]:
    """The API's error body for one of the app's exceptions, a refusal, or refused arguments."""
    if isinstance(exc, (ToolRefusal, tools.InvalidArguments)):
        return exc.body
    return encoding.error(exc)


def error_text(body: dict[str, Any]) -> str:
    """``Error (<code>): <detail>``, then each field's messages the detail does not already say
    (the API's "Invalid input." names no field; the model must learn which one)."""
    text = f"Error ({body['code']}): {body['detail']}"
    for field, messages in body.get("errors", {}).items():
        for message in messages:
            if f"{field}: {message}" not in text:
                text += f" {field}: {message}"
    return text


def error_result(body: dict[str, Any]) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=error_text(body))],
        structured_content=body,
        is_error=True,
    )


INTERNAL_ERROR_BODY = {"detail": "The memory server failed to answer this call; it has been logged.",
                       "code": "internal_error"}


def build_server(memory, principal_for: Callable[[Any], Principal]) -> Server:
    """The MCP server over ``memory`` (an ``ILabMemory``); ``principal_for(ctx)`` names the caller."""
    from ..conf import get_config

    config = get_config()
    specs = {spec.name: spec for spec in tools.tool_specs(config)}
    listing = mcp_types.ListToolsResult(
        tools=[
            mcp_types.Tool(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                input_schema=spec.input_schema,
                output_schema=spec.output_schema,
                annotations=spec.annotations,
            )
            for spec in specs.values()
        ]
    )

    def call(principal: Principal, spec: tools.ToolSpec,
             arguments: dict[str, Any] | None) -> mcp_types.CallToolResult:
        # Runs in a worker thread: the ORM is synchronous. Connections are recycled around each
        # call as Django does around each request (CONN_MAX_AGE, health checks).
        from django.db import close_old_connections

        close_old_connections()
        try:
            principal.check_throttle()
            args = tools.check_arguments(spec.input_schema, arguments)
            user_id = principal.acting_user_id(args.pop("user_id", None))
            with metrics.face("mcp"):  # the tools call the facade, which times saves and searches
                structured, text = spec.run(memory, user_id, principal.scope, args)
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)],
                                            structured_content=structured)
        except (IlabMemoryError, ToolRefusal, tools.InvalidArguments) as exc:
            body = error_body(exc)
            logger.info("Tool %s refused: %s", spec.name, body["code"])
            return error_result(body)
        except Exception:
            # A bug: the traceback stays in the server's log, the caller gets a generic error.
            logger.exception("Tool %s failed", spec.name)
            return error_result(dict(INTERNAL_ERROR_BODY))
        finally:
            close_old_connections()

    async def on_list_tools(ctx, params) -> mcp_types.ListToolsResult:
        return listing

    resources = mcp_types.ListResourcesResult(resources=[mcp_types.Resource(
        uri=ME_URI, name="me", title="Who am I",
        description="The caller's user_id (what every tool acts for when it names none), the scope its "
                    "calls act in, and whether it may name another user_id.",
        mime_type="application/json",
    )])

    async def on_list_resources(ctx, params) -> mcp_types.ListResourcesResult:
        return resources

    def identity(principal: Principal) -> dict[str, Any]:
        from django.db import close_old_connections

        close_old_connections()
        try:
            return {"user_id": principal.acting_user_id(None), "scope": principal.scope,
                    "may_act_for_any_user": principal.may_act_for_any_user()}
        finally:
            close_old_connections()

    async def on_read_resource(ctx, params: mcp_types.ReadResourceRequestParams) -> mcp_types.ReadResourceResult:
        if str(params.uri) != ME_URI:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown resource: {str(params.uri)[:100]}")
        try:
            principal = principal_for(ctx)
        except ToolRefusal as exc:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=error_text(exc.body)) from None
        body = await sync_to_async(identity, thread_sensitive=False)(principal)
        return mcp_types.ReadResourceResult(contents=[mcp_types.TextResourceContents(
            uri=ME_URI, mime_type="application/json", text=json.dumps(body))])

    async def on_call_tool(ctx, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown tool: {params.name[:100]}")
        try:
            principal = principal_for(ctx)
        except ToolRefusal as exc:
            return error_result(exc.body)
        arguments = params.arguments
        if arguments is not None and not isinstance(arguments, dict):
            return error_result(tools.InvalidArguments.not_an_object(arguments).body)
        return await sync_to_async(call, thread_sensitive=False)(principal, spec, arguments)

    return Server(
        SERVER_NAME,
        version=_version(),
        title="ilab_memory",
        description="Durable, per-user memory for AI agents.",
        instructions=tools.instructions(config),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ilab-memory")
    except PackageNotFoundError:
        return "0"
