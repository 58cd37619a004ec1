"""Structure inference speed on a million rows, against reading the columns' codes.

Run: ``.venv/bin/python benchmarks/bench_structure.py [--copies 28]``

The bundled BBQ sample (35,868 rows, 23 columns) is copied ``--copies`` times with
distinct example ids (28 copies: 1,004,304 rows, 335k items, 150 templates). Timed:

1. the baseline: ``pandas.factorize`` of every column (what any inference must read);
2. :func:`analysis.structure.infer_structure` on the same table.

Printed: both times and their ratio (the inference's work beyond reading the codes: one
sort per pair of columns tested), and that the inference is the same as on the sample
(item id, template, prompt unit). Measured on the shared 2-core development machine:
about 11 s for the inference, 4.3 times the baseline (2.7 s).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.structure import infer_structure  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=28)
    args = parser.parse_args()
    sample = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    big = pd.concat([sample.assign(example_id=sample["example_id"] + f"-{k}")
                     for k in range(args.copies)], ignore_index=True)
    t = time.perf_counter()
    for c in big.columns:
        pd.factorize(big[c], use_na_sentinel=False)
    base = time.perf_counter() - t
    t = time.perf_counter()
    s = infer_structure(big)
    took = time.perf_counter() - t
    small = infer_structure(sample)
    same = (s.item_id, s.cluster, s.prompt_unit) == (small.item_id, small.cluster,
                                                     small.prompt_unit)
    print(f"{len(big):,} rows x {big.shape[1]} columns: factorize {base:.2f} s, "
          f"infer_structure {took:.2f} s (ratio {took / base:.1f}); same inference as on "
          f"the sample: {same} ({s.item_id}, {s.cluster}, {', '.join(s.prompt_unit)})")


if __name__ == "__main__":
    main()
