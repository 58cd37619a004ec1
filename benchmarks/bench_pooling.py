"""Benchmark: what the ``pooled`` option costs the subgroups and eCDF analyses (issue 39.4).

Run: ``PYTHONPATH=. python benchmarks/bench_pooling.py [--repeat 3]``.

The table: the bundled SocialStigmaQA sample (``sample_data/ssqa_simulated.csv.gz``, its
design, cluster template) restricted to ``cot = yes``; subgroups of ``stigma x gender``
(94 + 4 level-1 and 280 level-2 subgroups per model, 15-18 rows each at level 2). Timed in
one process, alternating, best of ``--repeat``, CPU seconds (``resource.getrusage``: the
machine is shared):

- baseline: ``analysis.api.subgroups(..., where model = sim-model-A)`` and
  ``analysis.api.ecdf(..., by = model)`` with their defaults (the raw estimates,
  cluster-robust);
- ours: the same with ``pooled=True`` (the raw analysis plus one multilevel model per
  factor combination, and per curve for the eCDF: ``analysis/pooling.py``).

The ratio ours / baseline is printed. Numbers: the raw columns of the pooled run must equal
the baseline's (1e-12), every pooled interval must hold its estimate; exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLE = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"
FACTORS = ["stigma", "gender"]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    from analysis import api as bw

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows, design, _ = bw.prepare_inputs(SAMPLE, DESIGN)
    runs = {
        "subgroups": lambda pooled: bw.subgroups(
            rows, design, factors=FACTORS, applied=True, pooled=pooled,
            where={"model": ["sim-model-A"], "cot": ["yes"]}),
        "ecdf": lambda pooled: bw.ecdf(rows, design, factors=FACTORS, by="model",
                                       applied=True, pooled=pooled, where={"cot": ["yes"]}),
    }
    ok = True
    for name, run in runs.items():
        best = {False: float("inf"), True: float("inf")}
        results = {}
        for _ in range(args.repeat):
            for pooled in (False, True):
                start = cpu()
                results[pooled] = run(pooled)
                best[pooled] = min(best[pooled], cpu() - start)
        raw, pooled = results[False], results[True]
        if name == "subgroups":
            same = np.allclose(raw.table["log_disparity"], pooled.table["log_disparity"],
                               rtol=1e-12, equal_nan=True)
            table = pooled.table
        else:
            same = np.allclose(raw.table["deviation_metric"],
                               pooled.table["deviation_metric_raw"], rtol=1e-12)
            table = pooled.tables["rates"]
        inside = bool(((table["rate_pooled_low"] <= table["rate_pooled"])
                       & (table["rate_pooled"] <= table["rate_pooled_high"])).all())
        ok &= same and inside
        print(f"{name}: baseline {best[False]:.2f} s, pooled {best[True]:.2f} s CPU, ratio "
              f"{best[True] / best[False]:.1f}x ({len(table):,} subgroups; raw columns "
              f"equal: {same}; intervals hold their estimates: {inside})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
