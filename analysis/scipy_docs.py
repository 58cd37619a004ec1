"""``import scipy.special`` without rewriting 94 docstrings (the CLI's start-up, issue 44).

``scipy.special``'s import passes each of its functions through SciPy's
``xp_capabilities`` decorator (``scipy._lib._array_api``), which parses the function's
docstring with SciPy's numpydoc parser (``FunctionDoc``), appends a table of the array
backends it supports to its Notes and writes the docstring back: about a third of the
import's CPU (0.025-0.04 s of 0.085-0.11 s measured in a CLI process; docs/importance.md,
"Threads that only wait"), the largest single cost left in ``python -m analysis
importance``'s own imports, for text that only ``help()`` shows.

:func:`keep_scipy_docstrings` installs a finder (:class:`importlib.abc.MetaPathFinder`,
first on :data:`sys.meta_path`, removed at its first use) that, when ``scipy.special``
is imported, runs its module with ``FunctionDoc`` standing in for a reader that keeps
each docstring as written (:class:`_AsWritten`), and puts SciPy's own back as soon as the
module has run. Everything else the decorator does (the capabilities table SciPy's tests
read) happens as usual; the functions are the same ufuncs computing the same numbers.
Only the docstrings lack the backend table.

It acts only on the SciPy release it was checked against (:data:`CHECKED`, the
decorator's code differs between releases); with any other, or once ``scipy.special``
is imported, or if SciPy's layout is not the expected one, nothing is changed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["CHECKED", "keep_scipy_docstrings"]

#: SciPy releases (major.minor) whose ``xp_capabilities`` decorator this was checked on.
CHECKED = ("1.17",)
_TARGET = "scipy.special"


class _AsWritten:
    """Stands in for ``scipy._lib._docscrape.FunctionDoc`` in SciPy's decorator: a
    function's docstring as written, with a Notes list it may append to, and whose text
    is that docstring after a first (signature) line, which the decorator drops."""

    def __init__(self, func: Any, *args: Any, **kwargs: Any) -> None:
        doc = getattr(func, "__doc__", None) or ""
        if type(func).__name__ == "ufunc" and "\n\n" in doc:  # numpy's generated signature
            doc = doc.split("\n\n", 1)[1]  # first, then the docstring as written
        self._doc = doc
        self._sections: dict[str, list] = {"Notes": []}

    def __getitem__(self, key: str) -> list:
        return self._sections.setdefault(key, [])

    def __str__(self) -> str:
        return "\n" + self._doc


class _Loader(importlib.abc.Loader):
    """Runs ``scipy.special``'s module with :class:`_AsWritten` in place of SciPy's
    docstring parser, then hands the module its own loader back."""

    def __init__(self, loader: importlib.abc.Loader, array_api: Any) -> None:
        self._loader, self._array_api = loader, array_api

    def create_module(self, spec):  # noqa: ANN001, ANN201 - importlib's protocol
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001 - a module
        real = self._array_api.FunctionDoc
        self._array_api.FunctionDoc = _AsWritten
        try:
            self._loader.exec_module(module)
        finally:
            self._array_api.FunctionDoc = real
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``scipy.special`` as the import system would and wraps its loader (once)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None):  # noqa: ANN201
        if fullname != _TARGET:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # one import: from here on the usual finders alone
        scipy = sys.modules.get("scipy")  # the parent package, imported first
        release = ".".join(str(getattr(scipy, "__version__", "")).split(".")[:2])
        if release not in CHECKED:
            return None
        try:
            from scipy._lib import _array_api
        except ImportError:
            return None
        spec = importlib.util.find_spec(fullname)
        if (spec is None or spec.loader is None
                or not isinstance(getattr(_array_api, "FunctionDoc", None), type)):
            return spec
        spec.loader = _Loader(spec.loader, _array_api)
        return spec


def keep_scipy_docstrings() -> bool:
    """Install the finder (module docstring) unless ``scipy.special`` is already imported;
    returns whether it was installed. Nothing is imported here: the finder looks at SciPy's
    release (:data:`CHECKED`) only when ``scipy.special`` is imported. Call it before that
    (:func:`analysis.cli.main` does)."""
    if _TARGET in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _Finder())
    return True
