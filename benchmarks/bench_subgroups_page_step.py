"""The Subgroups page's analysis step before and after the codes grid (issue 44.3).

Run: ``PYTHONPATH=. python benchmarks/bench_subgroups_page_step.py [N_FACTORS]``.

The bundled BBQ sample (its design: cluster ``template_id``) cut to 10,000 rows and
repeated to 1,004,304 rows, the design applied; level 2 over the page's default factors
(or the design's first ``N_FACTORS`` factors). "before": the page's cached factors x
cluster cell table, then ``api.subgroups(..., cells=)`` (the cell path); "after":
``api.subgroups`` on the rows (the rows' codes grid, ``analysis/subgroup_codes.py``), what
the page calls now. CPU seconds of this process, interleaved, median of 5 rounds after a
warm-up; the tables are compared exactly.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_app_pages as b  # noqa: E402

from analysis import api  # noqa: E402
from analysis.cells import cell_table  # noqa: E402
from analysis.design import Design, apply_design  # noqa: E402
from analysis.factor_defaults import default_factors  # noqa: E402


def sample_and_design() -> tuple[pd.DataFrame, Design]:
    """The bundled BBQ sample and its curated design."""
    return (pd.read_csv(ROOT / "sample_data" / b.SAMPLE),
            Design.load(ROOT / "sample_data" / b.SAMPLE.replace(".csv.gz", ".design.yaml")))


def main() -> None:
    sample, design = sample_and_design()
    frames = {"10k": apply_design(b.tiled(sample, 10_000), design),
              "1M": apply_design(b.tiled(sample, 28 * len(sample)), design)}
    if len(sys.argv) > 1:
        factors = [f for f in design.names if f != design.cluster][:int(sys.argv[1])]
    else:
        factors = list(default_factors(frames["10k"], design, 2))
    print("factors", factors, "cluster", design.cluster)

    def before(rows: pd.DataFrame) -> api.Result:
        cells = cell_table(rows, [*factors, design.cluster])
        return api.subgroups(rows, design, factors=factors, level=2, cells=cells,
                             applied=True)

    def after(rows: pd.DataFrame) -> api.Result:
        return api.subgroups(rows, design, factors=factors, level=2, applied=True)

    times: dict[tuple[str, str], list[float]] = {}
    for r in range(6):
        for k, rows in frames.items():
            for f in ((before, after) if r % 2 else (after, before)):
                c = time.process_time()
                res = f(rows)
                dt = time.process_time() - c
                if r:
                    times.setdefault((k, f.__name__), []).append(dt)
                if r == 0 and f is after:
                    other = before(rows).table
                    pd.testing.assert_frame_equal(res.table, other, check_exact=True)
                    print(k, "tables identical (check_exact):", len(other), "subgroups")
    for k in frames:
        mb, ma = (statistics.median(times[(k, n)]) for n in ("before", "after"))
        print(f"{k}: before {mb:.3f} s CPU, after {ma:.3f} s CPU (median of 5), "
              f"after / before {ma / mb:.2f}")


if __name__ == "__main__":
    main()
