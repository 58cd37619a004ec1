"""Write ``subgroup_df_cells.csv``: the cell tables on which ``subgroup_df_clubsandwich.R``
computes clubSandwich's CR2 standard errors and Satterthwaite df of subgroup contrasts.

Columns: ``case``, ``value`` (the subgroup is the rows with this value, against all
others), ``cluster``, ``n``, ``deviations``. Cases: ``bbq`` (the bundled BBQ sample,
subcategory x template_id), ``sim`` (a seeded benchmark of 8 clusters of unequal size with
values on 2, 3, 5 and 8 clusters). Run from the repository root:
``python tests/reference/make_subgroup_df_inputs.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def bbq_cells() -> pd.DataFrame:
    from analysis import api
    from analysis.cells import cell_table

    rows, _, _ = api.prepare_inputs(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz",
                                    ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    cells = cell_table(rows, ["subcategory", "template_id"])
    return pd.DataFrame({"case": "bbq", "value": cells["subcategory"].astype(str),
                         "cluster": cells["template_id"].astype(str),
                         "n": cells["n"], "deviations": cells["deviations"]})


def sim_cells(seed: int = 38) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    homes = {"two": [0, 1], "three": [2, 3, 4], "five": [1, 3, 5, 6, 7],
             "all": list(range(8))}
    out = []
    for c, size in enumerate([30, 45, 60, 25, 80, 35, 50, 40]):
        here = [v for v, cs in homes.items() if c in cs]
        u = rng.normal(0, 0.7)
        for v in here:
            n = int(rng.integers(size // 2, size + 1))
            p = 1 / (1 + np.exp(-(-0.4 + u + rng.normal(0, 0.3))))
            out.append({"case": "sim", "value": v, "cluster": f"c{c}", "n": n,
                        "deviations": int(rng.binomial(n, p))})
    return pd.DataFrame(out)


if __name__ == "__main__":
    table = pd.concat([bbq_cells(), sim_cells()], ignore_index=True)
    table.to_csv(HERE / "subgroup_df_cells.csv", index=False)
    print(f"wrote {len(table)} cells")
