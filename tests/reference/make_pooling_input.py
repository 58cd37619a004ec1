"""Write ``pooling_input.csv``: the subgroup logits on which ``pooling_metafor.R`` fits
the pooling model with ``metafor::rma.mv`` (the reference of
``tests/analysis/test_pooling.py``).

A seeded unbalanced a x b table (12 x 3 values, 4 cells missing): ``a``, ``b``, ``ab``
(the cell), ``y`` (the empirical logit of a binomial count of ``n`` rows) and ``vi``
(its sampling variance ``1 / (a + 0.5) + 1 / (n - a + 0.5)``). Run from the repository
root: ``python tests/reference/make_pooling_input.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def pooling_input() -> pd.DataFrame:
    rng = np.random.default_rng(20261202)
    a_eff = rng.normal(0, 0.6, 12)
    b_eff = np.array([-0.3, 0.0, 0.4])
    rows = []
    for i in range(12):
        for j in range(3):
            if (i, j) in {(0, 2), (3, 1), (7, 0), (11, 2)}:
                continue
            n = int(rng.choice([6, 10, 15, 25, 40]))
            p = 1 / (1 + np.exp(-(-1.0 + a_eff[i] + b_eff[j] + rng.normal(0, 0.4))))
            d = int(rng.binomial(n, p))
            rows.append({"a": f"a{i:02d}", "b": f"b{j}", "ab": f"a{i:02d}:b{j}", "n": n,
                         "deviations": d,
                         "y": np.log((d + 0.5) / (n - d + 0.5)),
                         "vi": 1 / (d + 0.5) + 1 / (n - d + 0.5)})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    pooling_input().to_csv(HERE / "pooling_input.csv", index=False, float_format="%.17g")
