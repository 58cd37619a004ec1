"""``python -m judges``: see :mod:`judges.cli`."""

from judges.cli import main

raise SystemExit(main())
