"""What the ``python -m analysis`` CLI tests share: a results CSV, a JSON run."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.cli import main


def write_csv(tmp_path: Path, table: pd.DataFrame | list[dict], name: str = "results.csv"
              ) -> Path:
    """Write ``table`` (a frame or a list of row dicts) as ``tmp_path / name``; its path."""
    path = tmp_path / name
    pd.DataFrame(table).to_csv(path, index=False)
    return path


def deviation_rows(cells: Iterable[tuple], factors: Sequence[str], outcome: str,
                   **constant: Any) -> list[dict]:
    """Rows of a 0/1 outcome per cell: ``cells`` holds ``(*factor_values, n, k)``.

    Each cell gives ``n`` rows with its factor values, the ``constant`` columns and the
    outcome 1 in the first ``k`` rows and 0 in the others.
    """
    rows = []
    for *values, n, k in cells:
        rows += [{**dict(zip(factors, values, strict=True)), **constant, outcome: int(i < k)}
                 for i in range(n)]
    return rows


def run_json(capsys, *argv) -> Any:
    """Run ``python -m analysis <argv> --json`` in-process (exit 0) and parse its output."""
    assert main([*map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)
