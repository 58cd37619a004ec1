"""``python -m judges``: see :mod:`judges.cli`."""

from judges.cli import main

__all__: list[str] = []


raise SystemExit(main())
