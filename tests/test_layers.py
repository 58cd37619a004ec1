"""The import layers of docs/architecture.md ("Layers and imports"), enforced.

- the import-linter contracts of pyproject.toml (layers ui -> judges -> analysis; analysis
  imports nothing of judges, ui or Streamlit; judges nothing of ui or Streamlit) are kept;
- no import circle between modules, counting the imports inside functions (they keep
  start-up fast but must not hide a circle) and the pages / app.py;
- no module imports another module's ``_private`` name;
- every module of analysis/, judges/ and ui/ declares ``__all__``, lists only names it
  has, and lists every name other modules import from it.

The checkers read the source with :mod:`ast`; each is also run on a small package written
for the test, so that a circle through a function-level import or a private import is
shown to be caught.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "judges", "ui")


def parsed(path: Path) -> ast.Module:
    """The syntax tree of ``path`` (parsed once per test session while it is unchanged)."""
    return _parse(path, path.read_text(encoding="utf-8"))


@functools.cache
def _parse(path: Path, text: str) -> ast.Module:
    return ast.parse(text, filename=str(path))


def modules_of(root: Path, packages: Iterable[str] = PACKAGES,
               scripts: Iterable[str] = ("pages", "app.py")) -> dict[str, Path]:
    """Dotted module name -> file, for the packages and the page scripts under ``root``."""
    found: dict[str, Path] = {}
    for name in (*packages, *scripts):
        path = root / name
        files = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
        for f in files:
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = f
    return found


def imports_of(name: str, path: Path, modules: Mapping[str, Path]
               ) -> list[tuple[str, str | None, int]]:
    """See :func:`_imports_of` (cached per file content and module set)."""
    return _imports_of(name, path, path.read_text(encoding="utf-8"), frozenset(modules))


@functools.cache
def _imports_of(name: str, path: Path, text: str, modules: frozenset[str]
                ) -> list[tuple[str, str | None, int]]:
    """Every import of a project module in ``path``, wherever it is (module level, inside
    a function, under ``TYPE_CHECKING``): (imported module, imported name or None, line).
    ``from package import module`` counts as an import of the module."""
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(_parse(path, text)):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    out.append((f"{base}.{a.name}", None, node.lineno))
                elif base in modules:
                    out.append((base, a.name, node.lineno))
    return out


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (function-level imports included)."""
    return {m: {t for t, _, _ in imports_of(m, p, modules) if t != m}
            for m, p in modules.items()}


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def private_imports(modules: Mapping[str, Path]) -> list[str]:
    """``importer:line imports _name from module`` for every private name taken from
    another module."""
    found = []
    for m, p in modules.items():
        for target, name, line in imports_of(m, p, modules):
            if name and name.startswith("_") and not name.startswith("__") and target != m:
                found.append(f"{m}:{line} imports {name} from {target}")
    return found


def test_the_import_linter_contracts_are_kept():
    pytest.importorskip("importlinter", reason="import-linter is in the dev extra")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = "import sys; from importlinter.cli import lint_imports_command; " \
             "sys.exit(lint_imports_command())"
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout and "4 kept" in run.stdout


def test_grimp_counts_imports_inside_functions():
    """import-linter's graph (grimp) sees a function-level import: ``analysis.cells``
    imports ``analysis.engines`` only inside ``cell_table``, so the layer contracts also
    cover the lazy imports."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("analysis")
    assert "analysis.engines" in graph.find_modules_directly_imported_by("analysis.cells")
    text = (ROOT / "analysis" / "cells.py").read_text(encoding="utf-8")
    top_level = [n for n in ast.parse(text).body if isinstance(n, ast.ImportFrom)]
    assert not any(n.module == "analysis" or (n.module or "").startswith("analysis.engines")
                   for n in top_level)


def test_no_import_circle_even_through_function_level_imports():
    modules = modules_of(ROOT)
    graph = import_graph(modules)
    assert len(graph) > 200  # every module of the three packages and the pages
    assert "analysis.engines" in graph["analysis.cells"]  # a function-level import counts
    assert circles(graph) == []


def test_no_module_imports_another_modules_private_name():
    assert private_imports(modules_of(ROOT)) == []


def test_statistics_import_nothing_above_them():
    """The rule of docs/architecture.md, spelled out without import-linter: no module of
    analysis/ imports judges, ui, the pages or Streamlit, not even inside a function."""
    modules = modules_of(ROOT)
    upward = []
    for m, p in modules.items():
        layer = m.split(".")[0]
        for node in ast.walk(parsed(p)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level \
                else []
            for imported in names:
                top = imported.split(".")[0]
                if layer == "analysis" and top in ("judges", "ui", "pages", "streamlit") or \
                        layer == "judges" and top in ("ui", "pages", "streamlit"):
                    upward.append(f"{m}:{node.lineno} imports {imported}")
    assert upward == []


def test_the_checkers_find_a_hidden_circle_and_a_private_import(tmp_path):
    pkg = tmp_path / "analysis"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from analysis.b import public\n")
    (pkg / "b.py").write_text("def public():\n    from analysis import a  # lazy\n\n"
                              "def _helper():\n    pass\n")
    (pkg / "c.py").write_text("from .b import _helper\n")
    modules = modules_of(tmp_path, ("analysis",), ())
    assert circles(import_graph(modules)) == [["analysis.a", "analysis.b"]]
    assert private_imports(modules) == ["analysis.c:1 imports _helper from analysis.b"]
    (pkg / "b.py").write_text("def public():\n    pass\n")
    assert circles(import_graph(modules)) == []


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value)) if node.value is not None else []
    return None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node in tree.body:
            names.add(node.name)
    for node in tree.body:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.ClassDef)):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and \
                    not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.id)
    return names


def test_every_module_declares_its_public_names():
    modules = modules_of(ROOT, scripts=())
    trees = {m: parsed(p) for m, p in modules.items()}
    missing = [m for m, t in trees.items() if _all_of(t) is None]
    assert missing == []
    wrong = []
    for m, tree in trees.items():
        listed = _all_of(tree) or []
        lazy = m == "analysis"  # PEP 562: its names are resolved by __getattr__
        defined = _top_level_names(tree)
        wrong += [f"{m}: {n}" for n in listed
                  if n.startswith("_") or (not lazy and n not in defined)]
    assert wrong == []
    # a name another module (or a test, a page) imports from a module is in its __all__
    everywhere = modules_of(ROOT, scripts=("pages", "app.py", "tests", "benchmarks"))
    listed_in = {m: set(_all_of(t) or ()) for m, t in trees.items()}
    unlisted = set()
    for m, p in everywhere.items():
        for target, name, line in imports_of(m, p, modules):
            if name and target != m and not name.startswith("_") \
                    and name not in listed_in[target]:
                unlisted.add(f"{m}:{line} imports {name} from {target}")
    assert sorted(unlisted) == []
