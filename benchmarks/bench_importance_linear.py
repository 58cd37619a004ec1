"""Continuous outcomes: the linear fit on cell sufficient statistics vs the logistic fit
and vs statsmodels OLS on the rows (``docs/importance.md``, "Continuous outcomes").

Run from the repository root::

    .venv/bin/python benchmarks/bench_importance_linear.py [--rows 1000000]

Prints measured times and ratios (not a timed test), on the same simulated table (the
factors of ``bench_importance.py``, a 0/1 deviation and a continuous score, 10 clusters):

1. ``linear_importance`` (cluster-robust) vs ``factor_importance`` (cluster-robust, no LR
   tests) on the same rows: target ratio <= 2 (as fast as the logistic fit).
2. ``linear_importance`` vs statsmodels ``OLS(...).fit(cov_type="cluster")`` on the rows
   with the design matrix built beforehand (its fit only); the largest coefficient
   difference.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_importance import SIZES, best_of, design, simulate  # noqa: E402

from analysis.design import Outcome, apply_design  # noqa: E402
from analysis.importance import factor_importance  # noqa: E402
from analysis.importance_linear import linear_importance  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    frame = simulate(args.rows)
    rng = np.random.default_rng(1)
    frame["g"] = pd.Categorical(rng.integers(0, 10, len(frame)).astype(str))
    frame["score"] = frame["deviation"] + rng.normal(0, 1, len(frame))
    d = design().with_cluster("g")
    applied = apply_design(frame, d)
    dc = d.with_outcome(Outcome("score", "above", threshold=0.5, type="continuous"))
    t_log, _ = best_of(lambda: factor_importance(applied, d, likelihood_ratio=False), 3)
    t_lin, fit = best_of(lambda: linear_importance(frame, dc), 3)
    print(f"{len(frame):,} rows, {len(SIZES)} factors, 10 clusters, {fit.n_cells:,} cells")
    print(f"logistic (cluster-robust): {t_log:.3f} s; linear (cluster-robust): {t_lin:.3f} s; "
          f"ratio linear / logistic = {t_lin / t_log:.2f} (target <= 2)")
    import statsmodels.api as sm

    X = pd.get_dummies(frame[list(SIZES)], drop_first=True).astype(float)
    X.insert(0, "const", 1.0)
    groups = frame["g"].cat.codes.to_numpy()
    t_sm, ref = best_of(lambda: sm.OLS(frame["score"].to_numpy(), X.to_numpy()).fit(
        cov_type="cluster", cov_kwds={"groups": groups}), 1)
    diff = np.max(np.abs(fit.terms["coef"].to_numpy() - ref.params))
    print(f"statsmodels OLS cluster on the rows (fit only): {t_sm:.3f} s; "
          f"ratio statsmodels / linear = {t_sm / t_lin:.1f}; max |coef difference| = "
          f"{diff:.2e}")


if __name__ == "__main__":
    main()
