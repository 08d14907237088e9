"""The library's imports, read from its source: data flows one way (faces → services →
selectors → models and the shared foundations), no module imports itself back through
another, and no module reaches for another's private names."""

import ast
import pathlib

import ilab_memory

ROOT = pathlib.Path(ilab_memory.__file__).parent
PACKAGE = ROOT.name

# Lower numbers sit lower; a module may import its own layer or any lower one.
FOUNDATION, SELECTORS, SERVICES, FACES = range(4)
FACE_PREFIXES = ("admin", "api", "mcp", "management", "facade", "runners", "tasks", "background", "apps",
                 "client", "integrations")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py") if "migrations" not in p.parts}


def layer(module: str) -> int:
    inside = module.split(".")[1:]
    if not inside or inside[0] in FACE_PREFIXES:
        return FACES  # the package itself re-exports the facade
    if inside[0] == "services":
        return SERVICES
    if inside[0] == "selectors":
        return SELECTORS
    return FOUNDATION


def imports(module: str) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import of ``module``, at any depth."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule, []) if submodule in MODULES else (base, [alias.name]))
    return [(target if target in MODULES else target.rsplit(".", 1)[0], names) for target, names in found]


GRAPH = {module: {target for target, _ in imports(module)} - {module} for module in MODULES}


def test_no_module_imports_a_higher_layer():
    upward = [(module, target) for module, targets in GRAPH.items() for target in targets
              if layer(target) > layer(module)]
    assert upward == []


def test_the_import_graph_has_no_cycle():
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " → ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for target in sorted(GRAPH[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)


def test_no_module_takes_another_modules_private_names():
    taken = []
    for module, path in MODULES.items():
        for target, names in imports(module):
            taken += [(module, f"{target}.{name}") for name in names if name.startswith("_") and target != module]
        # Names bound to the library's modules (``from . import sql``): their ``_x`` is private.
        aliases = {(node.asname or node.name).split(".")[-1] for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.alias) and any(m.endswith("." + node.name) for m in MODULES)}
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                taken.append((module, f"{node.value.id}.{node.attr}"))
    assert taken == []


def test_the_walk_sees_the_layers_it_checks():
    assert GRAPH[f"{PACKAGE}.services.observations"] >= {f"{PACKAGE}.services.sessions", f"{PACKAGE}.sql"}
    assert layer(f"{PACKAGE}.api.views") == FACES and layer(f"{PACKAGE}.services.search.fusion") == SERVICES


def test_table_names_have_one_home():
    """The hand-written SQL names tables through ``models``' constants, read from ``_meta.db_table``."""
    assert [module for module, path in MODULES.items() if "_meta.db_table" in path.read_text()] == [
        f"{PACKAGE}.models"
    ]
