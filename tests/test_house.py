"""The house rule of issue 37: an analysis is composed once, in :mod:`analysis.api`; the
front-ends (the CLI's commands, the report builders, "Copy as code", ``ui/`` and
``pages/``) present its Result and call no statistics function themselves.

:func:`statistics_imports` walks the front-end files with :mod:`ast` (imports inside
functions too) and lists every function of a statistics module (:data:`STATISTICS`) that
a front-end imports (``from analysis.index import bias_index``) or calls through an
imported module (``dm.homogeneity_test`` after ``from analysis import distribution as
dm``). The count may only go down: :data:`PINNED` is the number on this tree (a change
that converts a front-end lowers it here; one that adds a statistics call fails).

Measured (session of issue 37's remainder): 145 (file, function) pairs in 43 front-end
files before the compare, bias index, disparity and cohorts front-ends became views of
:mod:`analysis.api` (and the Coverage and linear Importance pages went through it); 110
in 39 files after; 0 once the commands and report builders, the Disparity and Coverage
pages, the judges' pages and every other ui/ and pages/ file became views (session 9).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The modules that compute statistics (methods.md) and the cell tables and row filters
#: they count on; their functions are the API's to compose. Not counted: loading, designs,
#: labels and formatting, figures, options.
STATISTICS = tuple(f"analysis.{m}" for m in (
    "bbq_scores", "cell_counts", "cells", "bootstrap", "capsules", "compare", "continuous",
    "coverage", "disparity",
    "distribution", "dixon", "ecdf", "features", "findings", "gate", "importance",
    "importance_linear", "index", "index_published", "judge_noise", "mixed_df",
    "native_scores", "nesting", "planning", "saged_stats", "structure", "subgroups", "testing",
    "judge_stats.agreement", "judge_stats.category_agreement", "judge_stats.metrics",
    "judge_stats.reliability", "judge_stats.samples"))

#: The front-end files.
FRONT_ENDS = ("analysis/commands/*.py", "analysis/report*.py", "analysis/compare_report.py",
              "analysis/reproduce.py", "ui/*.py", "pages/*.py", "app.py")

#: (file, function) pairs on this tree: may only go down.
PINNED = 0


def front_end_files(root: Path = ROOT) -> list[Path]:
    """Every front-end file under ``root`` (:data:`FRONT_ENDS`)."""
    return sorted({p for pattern in FRONT_ENDS for p in root.glob(pattern)})


def _functions(module: str) -> set[str]:
    mod = importlib.import_module(module)
    return {name for name, obj in vars(mod).items()
            if inspect.isfunction(obj) and obj.__module__ == module}


@functools.cache
def statistics_imports(root: Path = ROOT) -> list[tuple[str, str]]:
    """Sorted ``(file, "module.function")`` pairs: each statistics function a front-end
    file imports or calls through an imported statistics module."""
    functions = {m: _functions(m) for m in STATISTICS}
    found: set[tuple[str, str]] = set()
    for path in front_end_files(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        name = str(path.relative_to(root))
        aliases: dict[str, str] = {}  # local name -> statistics module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if node.module in functions and alias.name in functions[node.module]:
                        found.add((name, f"{node.module}.{alias.name}"))
                    full = f"{node.module}.{alias.name}"
                    if full in functions:  # from analysis import distribution as dm
                        aliases[alias.asname or alias.name] = full
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in functions and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases
                    and node.attr in functions[aliases[node.value.id]]):
                found.add((name, f"{aliases[node.value.id]}.{node.attr}"))
    return sorted(found)


def test_the_walk_finds_both_kinds_of_use(tmp_path):
    """A page importing a statistics function and one calling it through its module are
    both counted; a data step and a label are not."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.py").write_text(
        "from analysis.index import bias_index\n"
        "from analysis.cells import filter_rows\n"
        "def f():\n"
        "    from analysis import distribution as dm\n"
        "    return dm.homogeneity_test, dm.MAX_CATEGORIES\n")
    (tmp_path / "pages" / "b.py").write_text("from analysis import api as bw\n")
    assert statistics_imports(tmp_path) == [
        ("pages/a.py", "analysis.distribution.homogeneity_test"),
        ("pages/a.py", "analysis.index.bias_index")]


def test_front_ends_call_no_more_statistics_functions_than_pinned():
    found = statistics_imports()
    if len(found) > PINNED:
        listing = "\n".join(f"{f}: {fn}" for f, fn in found)
        pytest.fail(f"{len(found)} statistics functions used by front-ends, pinned "
                    f"{PINNED}: compose the analysis in analysis.api and present its "
                    f"Result instead.\n{listing}")


@pytest.mark.parametrize("converted", ["pages/disparity.py", "ui/disparity.py",
                                       "ui/saged_stats.py", "pages/coverage.py",
                                       "ui/coverage.py", "ui/coverage_page.py",
                                       "pages/subgroups.py", "ui/subgroups_page.py",
                                       "analysis/commands/compare.py",
                                       "analysis/commands/index.py",
                                       "analysis/commands/cohorts.py",
                                       "analysis/commands/disparity.py",
                                       "analysis/commands/subgroups.py",
                                       "analysis/commands/ecdf.py",
                                       "analysis/compare_report.py",
                                       "pages/bias_index.py", "ui/disparity_index.py",
                                       "pages/cohorts.py"])
def test_converted_front_ends_call_no_statistics_of_their_analysis(converted):
    """The front-ends made views of analysis.api call none of their analysis's
    statistics (those left are another step's: the cohorts command's time capsules,
    the subgroups command's group means of a score, the disparity figure's grouping)."""
    own = {"pages/disparity.py": "analysis.", "ui/disparity.py": "analysis.",
           "ui/saged_stats.py": "analysis.", "pages/coverage.py": "analysis.",
           "ui/coverage.py": "analysis.", "ui/coverage_page.py": "analysis.",
           "pages/subgroups.py": "analysis.", "ui/subgroups_page.py": "analysis.",
           "analysis/commands/compare.py": "analysis.compare.",
           "analysis/commands/index.py": "analysis.index.",
           "analysis/commands/cohorts.py": "analysis.distribution.",
           "analysis/commands/disparity.py": "analysis.disparity.disparity_report",
           "analysis/commands/subgroups.py": "analysis.subgroups.",
           "analysis/commands/ecdf.py": "analysis.ecdf.",
           "analysis/compare_report.py": "analysis.compare.compare",  # (its defaults pair)
           "pages/bias_index.py": "analysis.", "ui/disparity_index.py": "analysis.index.",
           "pages/cohorts.py": "analysis.distribution."}[converted]
    assert [fn for f, fn in statistics_imports() if f == converted
            and fn.startswith(own)] == []


#: Front-ends that call no statistics function at all (issue 37's third pass: the pages
#: and ui helpers outside Coverage, Disparity, the judges' pages and SAGED).
VIEWS = ("ui/cohorts.py", "ui/compare.py", "pages/compare.py", "pages/design.py",
         "pages/importance.py", "ui/importance.py", "ui/importance_linear.py",
         "pages/planner.py", "ui/planner.py", "ui/features.py", "ui/findings.py",
         "ui/defaults.py", "ui/native.py", "ui/subgroups.py", "ui/index_published.py",
         "ui/report.py")


@pytest.mark.parametrize("view", VIEWS)
def test_views_call_no_statistics_function(view):
    assert (ROOT / view).exists()
    assert [fn for f, fn in statistics_imports() if f == view] == []


def test_commands_and_report_builders_call_no_statistics_function():
    """Every CLI command and report builder is a view of analysis.api: none imports a
    statistics function (labels, predicates and defaults live outside STATISTICS)."""
    assert [(f, fn) for f, fn in statistics_imports() if f.startswith("analysis/")] == []


# --- issue 37 item 4: metadata travels in Result fields and typed values, not attrs --------
#: Product code searched for ``DataFrame.attrs`` (``<anything>.attrs`` in the AST).
ATTRS_CODE = ("analysis", "judges", "ui", "pages")

#: ``.attrs`` uses left in the product: may only go down. 60 on main before the change (62
#: lines by ``grep -rn "\.attrs"``, docstrings included); the 5 left carry nothing between
#: modules: ``api.py`` clears a Result's frames, ``ui/inference_pool.py`` ships whatever a
#: frame has to the worker and back (docs/architecture.md, "Metadata is returned").
ATTRS_PINNED = 5


def attrs_uses(root: Path = ROOT) -> list[tuple[str, int]]:
    """``(file, line)`` of every attribute access named ``attrs`` in the product's code
    (comments and docstrings do not count)."""
    files = [p for d in ATTRS_CODE for p in (root / d).rglob("*.py")] + [root / "app.py"]
    found = []
    for path in sorted(p for p in files if p.exists()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(path.relative_to(root).as_posix(), node.lineno) for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "attrs"]
    return sorted(found)


def test_the_attrs_walk_counts_code_not_words(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "m.py").write_text(
        '"""Not counted: frame.attrs in a docstring."""\n'
        "# nor frame.attrs in a comment\n"
        "def f(frame):\n    frame.attrs['a'] = 1\n    return frame.copy().attrs.get('a')\n")
    assert attrs_uses(tmp_path) == [("analysis/m.py", 4), ("analysis/m.py", 5)]


def test_dataframe_attrs_uses_do_not_grow_back():
    found = attrs_uses()
    if len(found) > ATTRS_PINNED:
        listing = "\n".join(f"{f}:{line}" for f, line in found)
        pytest.fail(f"{len(found)} uses of DataFrame.attrs in the product, pinned "
                    f"{ATTRS_PINNED}: return metadata as a value (a frozen dataclass beside "
                    f"the frame, Result.meta / settings, an argument) instead.\n{listing}")
