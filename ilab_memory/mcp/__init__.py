"""ilab_memory as an MCP server: the facade's operations as tools, for agents.

- ``ilab_memory.mcp.server.build_server``: the one server definition (tools over ``ILabMemory``).
- ``ilab_memory.mcp.http``: Streamable HTTP (stateless) for a site: ``MemoryMCPApp`` and
  ``with_mcp(django_asgi_app, path="/mcp/")``; DRF token authentication.
- ``ilab_memory.mcp.stdio``: stdio, for ``python -m ilab_memory.mcp --db PATH --user ID`` and
  ``manage.py ilab_memory_mcp --user ID``.

Nothing is imported here, so ``python -m ilab_memory.mcp`` can set Django up first.
See docs/mcp.md.
"""
