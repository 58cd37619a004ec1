"""Plan speed with template variants (issue 41) against the plan inside the observed
structure, in the same run.

Run: ``.venv/bin/python benchmarks/bench_plan_variants.py [--templates 1500]``

1. The SSQA sample (37 templates, 111 candidate variants): ``bw.plan`` over stigma,
   gender, prompt_style, biased_answer and cot with variants, and with
   ``within_structure=True`` (which still ranks them, to report).
2. A synthetic benchmark of ``--templates`` templates that each fix gender and
   biased_answer (40 stigmas and a style each; the female / yes pair never built): the
   variant candidates reach the 2,000 cap and the ranking its 400 steps.

Prints seconds (best of 3) of ``plan_additions`` on the cell table, and the ratio of each
to the plain water-filling plan on the cell table without the template column (no
variant looked for: the plan before issue 41).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import analysis.api as bw  # noqa: E402
from analysis.cells import cell_table  # noqa: E402
from analysis.planning import plan_additions  # noqa: E402

FACTORS = "stigma,gender,prompt_style,biased_answer,cot"


def timed(fn, repeat: int = 3) -> float:
    """Best seconds over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def synthetic(n_templates: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_templates):
        g, b = rng.choice(["f", "m", "x"]), rng.choice(["no", "yes"])
        if g == "f" and b == "yes":
            b = "no"
        rows += [(f"t{t}", g, b, f"s{s}", rng.choice(["a", "b", "c"])) for s in range(40)]
    return pd.DataFrame(rows, columns=["template", "gender", "ans", "stigma", "style"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--templates", type=int, default=1500)
    args = parser.parse_args()
    ssqa = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz", dtype=str)
    cases = {
        "SSQA sample": (ssqa, FACTORS, 500, "template"),
        f"synthetic, {args.templates:,} templates": (synthetic(args.templates),
                                                     "gender,ans,stigma,style", 300,
                                                     "template"),
    }
    for name, (frame, factors, budget, template) in cases.items():
        names = factors.split(",")
        table, design, _ = bw.prepare_inputs(frame, None, factors=factors, need_outcome=False)
        design = design.with_cluster(None)
        plain_cells = cell_table(table, names, with_outcome=False)
        cells = cell_table(table, [*names, template], with_outcome=False)
        def run(cells: pd.DataFrame, design=design, names=names, budget=budget,  # noqa: ANN001
                **kw: object) -> None:
            plan_additions(cells, design, factors=names, budget=budget, **kw)

        plain = timed(lambda run=run, c=plain_cells: run(c))
        variants = timed(lambda run=run, c=cells, t=template: run(c, template=t))
        inside = timed(lambda run=run, c=cells, t=template: run(c, template=t,
                                                                within_structure=True))
        print(f"{name}: plain {plain:.2f} s; with variants {variants:.2f} s "
              f"(x{variants / plain:.1f}); within the structure {inside:.2f} s "
              f"(x{inside / plain:.1f})")

if __name__ == "__main__":
    main()
