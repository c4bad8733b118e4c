"""Grep-able facts about the shape of the ``floe`` package (issue #15), read from the source with ``ast``.

Prints one ``name: value`` line per fact, each followed by its offenders (indented):

- ``modules_opening_manifests`` (goal 1-2): modules that call a manifest or manifest-list decoder
  (``read_manifest``, ``iter_manifest``, ``read_manifest_list``, ``read_manifest_header`` of
  ``floe.serde.manifest_avro``). The decoder module itself does no IO and is not counted.
- ``package_import_cycles`` (goal 0): strongly connected groups of packages (a package is a first-level
  name under ``floe/``; ``floe/__init__.py`` is ``floe``). An edge A -> B is a module of A importing a
  module of B at module level or inside a function; imports under ``if TYPE_CHECKING:`` are not run and
  make no edge.
- ``modules_over_800_lines`` (goal 0).
- ``module_import_cycles`` (goal 0): groups of modules that import each other round, counting every
  runtime import (module level or inside a function, and the packages an import runs);
  ``imports_in_functions_closing_module_cycles`` (goal 0): the imports inside functions among them.
- ``folders`` with their modules and lines, and ``largest_folder_share`` (of all lines).
- ``imports_in_functions``: import statements inside a function body (any module, floe's or not), and
  ``imports_in_functions_dodging_cycles``: those of a floe module that would close a cycle if moved to
  module level: for another package, a module-level path from that package back to the importer's; for
  the same package, a module-level path from the imported module back to the importer. Importing
  ``floe.a.b`` runs ``floe/a/__init__.py`` too, so that counts as an import of ``floe.a``, except from a
  module inside ``floe.a``: Python runs a package's ``__init__`` before any module in it, so for that
  module ``floe.a`` is already imported (or being imported) and only ``floe.a.b`` is new; importing a name
  ``floe/a/__init__.py`` defines (``from floe.a import X``) still depends on ``floe.a``. The root
  ``floe/__init__.py`` (the public facade, importing everything) is left out of the graphs. Why an import
  sits in a function is not read: one kept there for cost (sqlglot, the Spark SQL engine) is listed only
  if a module-level import would close a cycle.

    python3 scripts/house_facts.py [--root floe]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DECODERS = frozenset({"read_manifest", "iter_manifest", "read_manifest_list", "read_manifest_header"})
DECODER_MODULE = "floe.serde.manifest_avro"
MAX_LINES = 800


@dataclass(frozen=True)
class Import:
    """One imported floe module (or an outside one) as seen from ``module``."""

    module: str  # importing module, dotted
    target: str  # imported module, dotted (``floe.x.y``; a name imported from a package counts as it)
    line: int
    in_function: bool
    type_only: bool


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``from ... import`` names (relative imports resolved against ``module``)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, is_package: bool, tree: ast.Module, known: set[str]) -> Iterator[Import]:
    """Every import in ``tree`` with whether it runs inside a function or only for type checkers."""

    def walk(node: ast.AST, in_function: bool, type_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, True, type_only)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk_one(stmt, in_function, True)
                for stmt in child.orelse:
                    yield from walk_one(stmt, in_function, type_only)
            else:
                yield from walk_one(child, in_function, type_only)

    def walk_one(child: ast.AST, in_function: bool, type_only: bool) -> Iterator[Import]:
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Import(module, alias.name, child.lineno, in_function, type_only)
        elif isinstance(child, ast.ImportFrom):
            base = _resolve(module, is_package, child)
            for alias in child.names:
                full = f"{base}.{alias.name}"
                # ``from floe.scan import planner`` imports a module; ``from floe.scan import X`` a name.
                yield Import(module, full if full in known else base, child.lineno, in_function, type_only)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from walk(child, True, type_only)
        else:
            yield from walk(child, in_function, type_only)

    yield from walk(tree, False, False)


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _with_parents(target: str, known: set[str]) -> list[str]:
    """Importing ``floe.a.b`` runs ``floe.a`` (its ``__init__``) first: both are dependencies."""
    parts = target.split(".")
    return [m for m in (".".join(parts[:i]) for i in range(2, len(parts) + 1)) if m in known]


def _runs(imp: Import, known: set[str]) -> list[str]:
    """The floe modules ``imp`` may run: its target and the target's packages, less the importer's own
    packages (Python imported those before the importer), unless the target is one of them."""
    own = set(_with_parents(imp.module, known))
    return [t for t in _with_parents(imp.target, known) if t == imp.target or t not in own]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent / "floe"))
    root = Path(parser.parse_args().root).resolve()

    files = sorted(root.rglob("*.py"))
    trees: dict[str, tuple[Path, ast.Module]] = {}
    for path in files:
        trees[module_name(root, path)] = (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    known = set(trees)

    imports: list[Import] = []
    opening: list[str] = []
    for name, (path, tree) in trees.items():
        imports.extend(imports_of(name, path.name == "__init__.py", tree, known))
        if name != DECODER_MODULE and _calls_decoder(tree):
            opening.append(name)

    # Module-level runtime graphs (the ones a cycle at import time would run through).
    module_graph: dict[str, set[str]] = {m: set() for m in known}
    package_graph: dict[str, set[str]] = {}
    edge_examples: dict[tuple[str, str], list[Import]] = {}
    for imp in imports:
        if imp.type_only or imp.module not in known:
            continue
        targets = _runs(imp, known)
        if not targets:
            continue
        a = package_of(imp.module)
        for t in targets:
            b = package_of(t)
            if not imp.in_function:
                module_graph[imp.module].add(t)
            if a != b:
                package_graph.setdefault(a, set()).add(b)
                package_graph.setdefault(b, set())
                edge_examples.setdefault((a, b), []).append(imp)
    module_level_packages: dict[str, set[str]] = {}
    for m, targets in module_graph.items():
        for t in targets:
            if package_of(m) != package_of(t):
                module_level_packages.setdefault(package_of(m), set()).add(package_of(t))

    cycles = _components(package_graph)
    print(f"modules_opening_manifests: {len(opening)}")
    for m in sorted(opening):
        print(f"  {m}")

    print(f"package_import_cycles: {len(cycles)}")
    for group in cycles:
        print(f"  cycle: {' <-> '.join(group)}")
        members = set(group)
        for (a, b), examples in sorted(edge_examples.items()):
            if a in members and b in members:
                where = ", ".join(sorted({f"{i.module}:{i.line}{' (in function)' if i.in_function else ''}" for i in examples})[:4])
                more = len({(i.module, i.line) for i in examples}) - 4
                print(f"    {a} -> {b}: {where}{f' (+{more} more)' if more > 0 else ''}")

    long_modules = []
    for name, (path, _) in trees.items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            long_modules.append((lines, name))
    print(f"modules_over_{MAX_LINES}_lines: {len(long_modules)}")
    for lines, name in sorted(long_modules, reverse=True):
        print(f"  {name}: {lines}")

    # One import statement naming several things of one module counts once.
    in_function = list({(i.module, i.line, i.target): i for i in imports if i.in_function and not i.type_only}.values())
    internal = [i for i in in_function if i.target.split(".")[0] == "floe"]
    dodging: list[Import] = []
    for imp in internal:
        targets = _runs(imp, known)
        if not targets:
            continue
        a = package_of(imp.module)
        if any(package_of(t) != a and _reaches(module_level_packages, package_of(t), a) for t in targets) or any(
            package_of(t) == a and t != imp.module and _reaches(module_graph, t, imp.module) for t in targets
        ):
            dodging.append(imp)
    # Module granularity: every runtime import (module level and inside functions) is an edge; a group of
    # modules that import each other round is a cycle, and an import inside a function that closes one
    # only dodges it.
    full_graph: dict[str, set[str]] = {m: set(ts) for m, ts in module_graph.items()}
    for imp in imports:
        if not imp.type_only and imp.module in known and imp.in_function:
            full_graph[imp.module].update(t for t in _runs(imp, known) if t != imp.module)
    module_cycles = _components(full_graph)
    print(f"module_import_cycles: {len(module_cycles)}")
    for group in module_cycles:
        print(f"  cycle of {len(group)}: {', '.join(group[:12])}{' ...' if len(group) > 12 else ''}")
    # The same with the imports only type checkers read: a circle of types is a circle of concepts.
    typed_graph: dict[str, set[str]] = {m: set(ts) for m, ts in full_graph.items()}
    for imp in imports:
        if imp.type_only and imp.module in known:
            typed_graph[imp.module].update(t for t in _runs(imp, known) if t != imp.module)
    typed_cycles = _components(typed_graph)
    print(f"module_import_cycles_counting_type_imports: {len(typed_cycles)}")
    for group in typed_cycles:
        print(f"  cycle of {len(group)}: {', '.join(group[:14])}{' ...' if len(group) > 14 else ''}")
    in_cycle = {m: i for i, group in enumerate(module_cycles) for m in group}
    closing = sorted(
        {(i.module, i.line, i.target) for i in imports if i.in_function and not i.type_only and i.module in in_cycle
         and any(in_cycle.get(t) == in_cycle[i.module] for t in _runs(i, known))}
    )
    print(f"imports_in_functions_closing_module_cycles: {len(closing)}")
    for module, line, target in closing:
        print(f"  {module}:{line} imports {target}")

    rooms: dict[str, tuple[int, int]] = {}
    total = 0
    for name, (path, _) in trees.items():
        folder = str(path.parent.relative_to(root.parent))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        count, size = rooms.get(folder, (0, 0))
        rooms[folder] = (count + 1, size + lines)
        total += lines
    print(f"folders: {len(rooms)}")
    for folder, (count, size) in sorted(rooms.items()):
        print(f"  {folder}: {count} modules, {size} lines ({100 * size / total:.1f}%)")
    largest = max(rooms.items(), key=lambda kv: kv[1][1])
    print(f"largest_folder_share: {100 * largest[1][1] / total:.1f}% ({largest[0]})")

    print(f"imports_in_functions: {len(in_function)}")
    print(f"imports_in_functions_of_floe_modules: {len(internal)}")
    print(f"imports_in_functions_dodging_cycles: {len(dodging)}")
    for imp in sorted(dodging, key=lambda i: (i.module, i.line)):
        print(f"  {imp.module}:{imp.line} imports {imp.target}")
    return 0


def _calls_decoder(tree: ast.Module) -> bool:
    """Whether the module calls a manifest decoder (by its name or as ``manifest_avro.<decoder>``)."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == DECODER_MODULE:
            imported.update(a.asname or a.name for a in node.names if a.name in DECODERS)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in imported:
            return True
        if isinstance(fn, ast.Attribute) and fn.attr in DECODERS and isinstance(fn.value, ast.Name) and fn.value.id == "manifest_avro":
            return True
    return False


if __name__ == "__main__":
    sys.exit(main())
