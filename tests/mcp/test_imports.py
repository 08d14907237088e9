"""MCP depends on DRF for authentication only: the token, whom it may act for, and its rate.

Shapes, schemas and error bodies come from ``ilab_memory.encoding``, as the API's do; this walks
the imports of every module of the ``mcp`` package to keep it so.
"""

import ast
from pathlib import Path

import ilab_memory.mcp

MCP = Path(ilab_memory.mcp.__file__).parent

# The HTTP transport authenticates a request as the API would (DRF's token authentication and
# request), answers refusals in DRF's words, names whom the token may act for and counts the
# call against the API's per-user rate.
AUTH_MODULES = {
    "rest_framework.authentication",
    "rest_framework.exceptions",
    "rest_framework.request",
    "ilab_memory.api.authentication",
    "ilab_memory.api.identity",
    "ilab_memory.api.throttling",
}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against the ``mcp`` package."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["ilab_memory", "mcp"][: 2 - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            modules.add(module)
            modules |= {f"{module}.{alias.name}" for alias in node.names}
    return modules


def test_mcp_imports_drf_and_the_api_only_for_authentication():
    outside = {
        f"{path.name}: {module}"
        for path in MCP.glob("*.py")
        for module in imported_modules(path)
        if module.split(".")[0] in ("rest_framework", "drf_spectacular")
        or module.startswith("ilab_memory.api")
        if not any(module == allowed or module.startswith(allowed + ".") for allowed in AUTH_MODULES)
    }
    assert outside == set()


def test_the_walk_sees_the_imports_it_allows():
    modules = imported_modules(MCP / "http.py")
    assert {"rest_framework.authentication", "ilab_memory.api.identity"} <= modules
    assert "ilab_memory.encoding" in imported_modules(MCP / "tools.py")
