"""Defer two numpy submodules that SciPy's import touches but no analysis uses.

``import scipy.special`` (the t and F tails of every clustered p-value: ``stdtr``,
``stdtrit``, ``fdtrc``) builds SciPy's array-API layer over numpy, which copies every
public name of numpy with ``hasattr(numpy, name)``. For ``numpy.testing`` and
``numpy.f2py`` that attribute access *imports* them (numpy loads them on first use):
unittest, email, difflib, the Fortran wrapper generator and charset detection, about
0.05-0.08 s of CPU, half of what ``scipy.special`` costs a ``python -m analysis``
command (issue 44; docs/performance.md, "CLI importance, session 11").

:func:`defer_unused_numpy_modules` registers both as lazy modules (the standard library's
:class:`importlib.util.LazyLoader`, the recipe of the :mod:`importlib` documentation):
each is found as usual but its code runs only when one of its attributes is first used,
so ``numpy.testing.assert_allclose`` and ``from numpy.testing import ...`` work as
before. Nothing else changes: no number, no output.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["DEFERRED", "defer_unused_numpy_modules"]

#: The numpy submodules made lazy (attribute name on ``numpy``).
DEFERRED = ("testing", "f2py")


def defer_unused_numpy_modules() -> None:
    """Register :data:`DEFERRED` as lazy submodules of numpy (imported if needed); those
    already imported, or that cannot be found, are left as they are. Call it once before
    SciPy is first imported (:func:`analysis.cli.main` does)."""
    import numpy

    for name in DEFERRED:
        full = f"numpy.{name}"
        if full in sys.modules or name in vars(numpy):
            continue
        spec = importlib.util.find_spec(full)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)  # runs the module's code on first attribute use
        setattr(numpy, name, module)  # as the import system binds a loaded submodule
