"""``python -m analysis``: see :mod:`analysis.cli`."""

import sys

from analysis.cli import main

__all__: list[str] = []


sys.exit(main())
