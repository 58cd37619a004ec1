"""``python -m analysis``: see :mod:`analysis.cli`."""

from analysis.cli import run

__all__: list[str] = []


run()
