"""MCP over Streamable HTTP, for a Django site: an ASGI application to mount at a path.

Stateless (the SDK's ``stateless=True``, JSON responses): no session lives in a process, so any
replica behind a load balancer answers any request. Each HTTP request is checked, in order:

1. authentication, as the API: DRF ``TokenAuthentication``, sent as ``Authorization: Bearer
   <token>`` (``Token <token>`` is accepted too). None or a bad one: 401 with
   ``WWW-Authenticate: Bearer`` and the API's ``{"detail", "code"}`` body;
2. body size: at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (413), as the API;
3. Host and Origin against ``ALLOWED_HOSTS`` (the SDK's DNS-rebinding protection: 421 / 403);

authentication also settles the one scope the request acts in, by the API's rule
(``access.acting_scope``, the endpoint's ``scope`` standing for the scope a request names):
the account's binding (the adapter's ``scope_of``), else the endpoint's scope, else the shared
space; an account bound to another scope than the endpoint's is refused (403, ``scope_bound``).
Then each tool call resolves its user_id by ``access.acting_user_id`` (the adapter's
``user_id_of``; a ``user_id`` argument naming someone else needs ``may_act_for_any_user``) and
counts against the API's per-user throttle (``ILAB_MEMORY["API_THROTTLE_RATE"]``, the same bucket
as the API's).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import (
    APIException,
    MethodNotAllowed,
    NotAuthenticated,
    PermissionDenied,
    Throttled,
)

from ..access import BearerTokenAuthentication
from .server import ToolRefusal

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

logger = logging.getLogger("ilab_memory.mcp")

PRINCIPAL_SCOPE_KEY = "ilab_memory.principal"


DEFAULT_AUTHENTICATION_CLASSES = (BearerTokenAuthentication, TokenAuthentication)


@dataclass
class _Serving:
    """One start of the server: the SDK's session manager, the task that runs it, and the
    events that say it is ready and ask it to stop."""

    manager: StreamableHTTPSessionManager
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] = field(init=False)


async def _run(serving: _Serving) -> None:
    try:
        async with serving.manager.run():
            serving.ready.set()
            await serving.stop.wait()
    finally:
        serving.ready.set()


def api_exception_body(exc: APIException) -> dict[str, Any]:
    codes = exc.get_codes()
    return {"detail": str(exc.detail), "code": codes if isinstance(codes, str) else exc.default_code}


class RequestUser:
    """The principal of one HTTP request: its DRF request, authenticated as the API's would be,
    and the scope it acts in."""

    def __init__(self, request, scope: str = ""):
        self.request = request
        self.scope = scope

    def acting_user_id(self, requested: str | None) -> str:
        from ..access import NOT_NAMED, acting_user_id

        try:
            return acting_user_id(self.request, NOT_NAMED if requested is None else requested)
        except PermissionDenied as exc:
            raise ToolRefusal(api_exception_body(exc)) from None

    def may_act_for_any_user(self) -> bool:
        from ..adapter import get_adapter

        return get_adapter().may_act_for_any_user(self.request.user)

    def check_throttle(self) -> None:
        from ..access import MemoryUserRateThrottle

        throttle = MemoryUserRateThrottle()
        if not throttle.allow_request(self.request, None):
            raise ToolRefusal(api_exception_body(Throttled(throttle.wait())))


def transport_security_from_settings():
    """The SDK's Host/Origin protection, allowing the site's ``ALLOWED_HOSTS`` (any port, http or https).

    Origins listed in ``CSRF_TRUSTED_ORIGINS`` are allowed too. ``"*"`` turns the check off, as it
    turns off Django's. The SDK matches exact names, so a ``.example.com`` entry allows
    ``example.com`` only; pass ``transport_security=`` to ``MemoryMCPApp`` to list subdomains.
    """
    from django.conf import settings
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(settings.ALLOWED_HOSTS)
    if not hosts and settings.DEBUG:
        # What Django allows then is ".localhost", 127.0.0.1 and [::1]; the SDK cannot match
        # subdomains, so localhost itself stands for the first (nothing the operator wrote to warn about).
        hosts = ["localhost", "127.0.0.1", "[::1]"]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = list(getattr(settings, "CSRF_TRUSTED_ORIGINS", []))
    for entry in hosts:
        if entry.startswith("."):
            logger.warning("MCP endpoint: ALLOWED_HOSTS entry %r allows %r but not its subdomains", entry, entry[1:])
        host = entry.lstrip(".").lower()
        allowed_hosts += [host, f"{host}:*"]
        allowed_origins += [f"{scheme}://{host}{port}" for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
    )


class MemoryMCPApp:
    """ASGI application serving the memory tools over Streamable HTTP, on whatever path it is mounted.

    ``memory``: the ``ILabMemory`` to serve (default ``ILabMemory()``, the site's default
    database). ``scope``: the scope every call acts in (checked when the app starts); None
    (default) leaves it to the account's binding (the adapter's ``scope_of``), else the shared space.
    ``authentication_classes``: DRF authentication classes tried in order (default:
    bearer tokens, then ``Token`` tokens; session cookies are deliberately not among them, so a
    browser page cannot call tools with a logged-in operator's cookie). ``transport_security``:
    the SDK's ``TransportSecuritySettings`` (default: from ``ALLOWED_HOSTS``).

    Settings are read when the app starts (ASGI lifespan startup, or its first request when the
    server sends no lifespan events).
    """

    def __init__(self, *, memory=None, scope: str | None = None, authentication_classes=None,
                 transport_security=None):
        self._memory = memory
        self.scope = scope
        self.authentication_classes = tuple(authentication_classes or DEFAULT_AUTHENTICATION_CLASSES)
        self._transport_security = transport_security
        self._serving: _Serving | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def _build_manager(self) -> StreamableHTTPSessionManager:
        from django.conf import settings
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from ..conf import get_config
        from ..facade import ILabMemory
        from ..scopes import clean_write_scope
        from .server import build_server

        if self.scope is not None:
            clean_write_scope(self.scope, config=get_config())  # a bad one stops the start, not every call
        memory = self._memory if self._memory is not None else ILabMemory()
        server = build_server(memory, _principal_from_scope)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            json_response=True,
            security_settings=self._transport_security or transport_security_from_settings(),
            max_request_body_size=limit if limit is not None else sys.maxsize,
        )

    async def start(self) -> None:
        """Start serving (idempotent); ASGI lifespan startup calls it, or the first request."""
        await self._started()

    async def _started(self) -> _Serving:
        if self._serving is None:
            serving = _Serving(self._build_manager())  # raises on a bad configuration, before anything starts
            self._serving = serving
            # The SDK's manager needs a long-lived task group; it lives in a task of its own so a
            # request that happens to start it does not own it.
            serving.runner = asyncio.get_running_loop().create_task(_run(serving))
        serving = self._serving
        await serving.ready.wait()
        if serving.runner.done():
            serving.runner.result()  # the manager failed to start: raise its error here
        return serving

    async def stop(self) -> None:
        """Stop serving; a later request or lifespan startup starts it afresh (settings re-read)."""
        serving = self._serving
        if serving is not None:
            serving.stop.set()
            try:
                await serving.runner
            finally:
                self._serving = None

    # -- requests --------------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan([self], receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: not served (closing without accepting refuses them)
        serving = await self._started()
        principal, refusal = await sync_to_async(self._authenticate, thread_sensitive=False)(scope)
        if refusal is not None:
            await _send_json(send, *refusal)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to open with GET, no session to end with DELETE.
            await _send_json(send, 405, api_exception_body(MethodNotAllowed(scope["method"])), [(b"allow", b"POST")])
            return
        await serving.manager.handle_request({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)

    def _authenticate(self, scope):
        """(RequestUser, None) for an authenticated request, else (None, (status, body, headers))."""
        from django.core.handlers.asgi import ASGIRequest
        from django.db import close_old_connections
        from rest_framework.request import Request

        from ..access import NOT_NAMED, acting_scope

        close_old_connections()
        try:
            authenticators = [cls() for cls in self.authentication_classes]
            request = Request(ASGIRequest(scope, io.BytesIO()), authenticators=authenticators)
            try:
                user = request.user
                if not (user and user.is_authenticated):
                    raise NotAuthenticated()
            except APIException as exc:
                # As DRF's APIView: 401 with the first authenticator's challenge, 403 without one.
                challenge = authenticators[0].authenticate_header(request) if authenticators else None
                status = 401 if challenge else 403
                headers = [(b"www-authenticate", challenge.encode())] if challenge else []
                return None, (status, api_exception_body(exc), headers)
            try:
                scope = acting_scope(request, NOT_NAMED if self.scope is None else self.scope)
            except PermissionDenied as exc:
                return None, (403, api_exception_body(exc), [])
            return RequestUser(request, scope), None
        finally:
            close_old_connections()


def _principal_from_scope(ctx) -> RequestUser:
    request = getattr(ctx, "request", None)
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if principal is None:  # not reachable through MemoryMCPApp, which authenticates every request
        raise ToolRefusal(api_exception_body(NotAuthenticated()))
    return principal


async def _lifespan(endpoints: list[MemoryMCPApp], receive, send) -> None:
    """The ASGI lifespan protocol for ``endpoints``: start them all, and stop them at shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                for endpoint in endpoints:
                    await endpoint.start()
            except Exception as exc:
                logger.exception("MCP endpoint failed to start")
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            for endpoint in endpoints:
                await endpoint.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _send_json(send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    payload = json.dumps(body).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                    *headers],
    })
    await send({"type": "http.response.body", "body": payload})


class MCPMount:
    """ASGI router: MCP at ``path`` (with or without its trailing slash), everything else to ``app``.

    It answers the ASGI lifespan protocol itself (Django's ASGI handler speaks none), starting
    and stopping the MCP endpoint, and those of the mounts ``app`` is made of (one per scope).
    """

    def __init__(self, app, mcp: MemoryMCPApp, path: str = "/mcp/"):
        self.app = app
        self.mcp = mcp
        self.path = "/" + path.strip("/")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(self.endpoints(), receive, send)
        elif scope["type"] == "http" and self._matches(scope):
            await self.mcp(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def endpoints(self) -> list[MemoryMCPApp]:
        """This mount's MCP endpoint and those mounted inside ``app``, outermost first."""
        inner = self.app.endpoints() if isinstance(self.app, MCPMount) else []
        return [self.mcp, *inner]

    def _matches(self, scope) -> bool:
        path = scope["path"]
        root = scope.get("root_path") or ""
        if root and path.startswith(root):
            path = path[len(root):]
        return path.rstrip("/") == self.path


def with_mcp(app, *, path: str = "/mcp/", **options) -> MCPMount:
    """``app`` (the site's ASGI application) with the memory's MCP endpoint at ``path``.

    ``options`` go to ``MemoryMCPApp`` (``memory``, ``scope``, ``authentication_classes``,
    ``transport_security``). Mount it once per scope to serve several agents' scopes::

        application = with_mcp(with_mcp(django_app, path="/mcp/"), path="/mcp/support/", scope="support")
    """
    return MCPMount(app, MemoryMCPApp(**options), path=path)
