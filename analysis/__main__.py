"""``python -m analysis``: see :mod:`analysis.cli`."""

import sys

from analysis.cli import main

sys.exit(main())
