"""The layout rules of ARCHITECTURE.md, checked on the source.

- The packages are layers, :data:`LAYERS` from the bottom up: a module imports
  modules of its own package or of a package below it, never above, counting imports
  inside functions and in ``if TYPE_CHECKING:`` blocks (a type from above is a
  protocol the lower package names for itself).
  The root package is the public API (its names resolve lazily): only the doors
  import it, for ``__version__``.
- No import cycle among pytest_groove's modules; inside ``plugin/`` not even through
  ``TYPE_CHECKING`` imports, so its roles stay layered.
- Every package's ``__init__`` docstring says what it holds and what it may import.
- A library package never imports a door (``plugin/``, ``cli/``).
- The doors open an evaluation only through the library: they never build a run
  fingerprint, read the history or pick a baseline themselves (``groove history``,
  which lists runs, may read the history).
- Folders and functions stay small: at most 15 modules a folder, no function over 60
  lines, no class over 350 lines; the metric names are spelled in a few modules only
  (the metric table and its readers).
- Every module ``ARCHITECTURE.md`` names exists.

The graph is built with :mod:`ast`, without importing anything.  An edge goes from a
module to each module it names in an import statement: ``from a.b import c`` names
``a.b.c`` when that is a module, else ``a.b``.  Importing a submodule also runs its
package's ``__init__``, but that is Python's doing, not a dependency the code
chose, so it is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "pytest_groove"
DOORS = ("pytest_groove.plugin", "pytest_groove.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(
    tree: ast.AST, *, typing_too: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, outside TYPE_CHECKING blocks
    (inside them too with ``typing_too``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing_too:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, *, typing_too: bool = False) -> set[str]:
    path = MODULES[name]
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _runtime_imports(tree, typing_too=typing_too):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH: dict[str, set[str]] = {name: imports_of(name) for name in MODULES}
#: with the imports of ``if TYPE_CHECKING:`` blocks
TYPED_GRAPH: dict[str, set[str]] = {name: imports_of(name, typing_too=True) for name in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``a -> b -> ... -> a``, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle is not None:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle is not None:
                return cycle
    return None


def test_the_graph_sees_function_level_imports() -> None:
    # guards the walker: the plugin entry imports its runner inside pytest_configure
    assert "pytest_groove.plugin.runner" in GRAPH["pytest_groove.plugin"]
    assert "pytest_groove.cli.evaluate" in GRAPH["pytest_groove.cli.commands"]
    assert "pytest_groove.cli.commands" in GRAPH["pytest_groove.cli"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


#: the packages from the bottom up: each may import itself and those before it
LAYERS = (
    "pytest_groove.errors",
    "pytest_groove.shapes",
    "pytest_groove.files",
    "pytest_groove.text",
    "pytest_groove.embed",
    "pytest_groove.scoring",
    "pytest_groove.settings",
    "pytest_groove.kb.source",
    "pytest_groove.kb.store",
    "pytest_groove.kb.derived",
    "pytest_groove.kb",
    "pytest_groove.search",
    "pytest_groove.search.query",
    "pytest_groove.search.pipeline",
    "pytest_groove.search.retrievers",
    "pytest_groove.engine",
    "pytest_groove.evaluation.golden",
    "pytest_groove.evaluation.runs",
    "pytest_groove.evaluation.gate",
    "pytest_groove.evaluation.history",
    "pytest_groove.evaluation.reports",
    "pytest_groove.evaluation",
    "pytest_groove.interop",
    "pytest_groove.tune",
    "pytest_groove.plugin",
    "pytest_groove.cli",
)
ROOT = "pytest_groove"


def layer_of(name: str) -> int:
    """The index in :data:`LAYERS` of the deepest package holding module ``name``."""
    holders = [i for i, layer in enumerate(LAYERS) if name == layer or name.startswith(layer + ".")]
    assert holders, f"{name} is in no layer: add its package to LAYERS"
    return max(holders, key=lambda i: len(LAYERS[i]))


def test_every_module_is_in_a_layer() -> None:
    for name in MODULES:
        if name != ROOT:
            layer_of(name)


def test_imports_only_run_down_the_layers() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in TYPED_GRAPH.items()
        if name != ROOT
        for target in targets
        if (target == ROOT and not name.startswith(DOORS))
        or (target != ROOT and layer_of(target) > layer_of(name))
    )
    assert not upward, upward


def test_the_layer_check_sees_an_upward_import() -> None:
    assert layer_of("pytest_groove.kb.store.schema") < layer_of("pytest_groove.search.hits")
    assert layer_of("pytest_groove.evaluation.finish") > layer_of(
        "pytest_groove.evaluation.gate.compare"
    )


def test_every_package_says_what_it_holds_and_may_import() -> None:
    silent = sorted(
        name
        for name, path in MODULES.items()
        if path.name == "__init__.py"
        and name not in (ROOT, "pytest_groove.plugin", "pytest_groove.cli")
        and "May import" not in (ast.get_docstring(ast.parse(path.read_text("utf-8"))) or "")
    )
    assert not silent, silent


FOLDER_MODULES = 15


def test_at_most_15_modules_a_folder() -> None:
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        folders[path.parent] = folders.get(path.parent, 0) + 1
    crowded = sorted(
        f"{p.relative_to(PACKAGE.parent)}: {n}" for p, n in folders.items() if n > FOLDER_MODULES
    )
    assert not crowded, crowded


def test_no_import_cycle_in_pytest_groove() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_library_module_imports_a_door() -> None:
    def is_door(name: str) -> bool:
        return any(name == door or name.startswith(door + ".") for door in DOORS)

    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if not is_door(name)
        for target in targets
        if is_door(target)
    )
    assert not offenders, offenders


def test_no_import_cycle_inside_the_plugin_even_for_type_checking() -> None:
    plugin = {
        name: {t for t in imports_of(name, typing_too=True) if t.startswith("pytest_groove.plugin")}
        for name in MODULES
        if name.startswith("pytest_groove.plugin")
    }
    cycle = find_cycle(plugin)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _calls(name: str) -> set[str]:
    """The names a module calls (``f(...)``, ``X.f(...)``: ``f`` / ``X.f``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else ""
                found.update({func.attr, f"{owner}.{func.attr}"})
    return found


def test_the_doors_leave_the_evaluation_to_the_library() -> None:
    reserved = {"Fingerprint.build", "load_history", "pick_baseline", "choose_baseline"}
    offenders = sorted(
        f"{name} calls {call}"
        for name in MODULES
        if name.startswith(DOORS) and name != "pytest_groove.cli.history"
        for call in _calls(name) & reserved
    )
    assert not offenders, offenders


FUNCTION_LINES = 60
CLASS_LINES = 350


def test_no_function_over_60_lines_and_no_class_over_350() -> None:
    too_long: list[str] = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert not too_long, too_long


def test_the_metric_names_are_spelled_in_at_most_four_modules() -> None:
    spelled = sorted(
        name
        for name, path in MODULES.items()
        if any(word in path.read_text(encoding="utf-8") for word in ("recall@", "nDCG@"))
    )
    assert len(spelled) <= 4, spelled


def test_every_module_architecture_md_names_exists() -> None:
    import re

    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)", text))
    assert len(named) > 10  # the walker reads the page, not nothing
    folders = ("kb", "embed", "search", "evaluation", "tune", "plugin", "cli")
    missing = sorted(
        path
        for path in named
        if not (PACKAGE / path).is_file()
        and not (PACKAGE.parent / path).is_file()
        and not any((PACKAGE / folder / path).is_file() for folder in folders)
    )
    assert not missing, missing
