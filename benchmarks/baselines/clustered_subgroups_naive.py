"""What an analyst writes for cluster-robust subgroup disparities (the baseline of
``benchmarks/bench_clustered_subgroups.py --cli``), written apart from the project's code.

Run: ``python clustered_subgroups_naive.py DATA.parquet DESIGN.yaml LEVEL > out.json``.

Vectorised pandas + numpy + statsmodels, no loop over subgroups: for each factor
combination one ``groupby([*combo, cluster])`` gives every subgroup's rows and deviations
per cluster, ``unstack`` lays them out as subgroups x clusters, and the cluster-robust
(CR1, statsmodels' ``cov_type="cluster"``) variance of the log odds ratio of "in the
subgroup" is the sandwich of the two-group logit written out:
``K sum_c (e1_c / v1 - e0_c / v0)^2`` with ``K = G / (G - 1) (N - 1) / (N - 2)``;
normal reference as statsmodels' GLM gives it; Benjamini-Hochberg by
``statsmodels.stats.multitest.multipletests``. The benchmark checks a few subgroups
against ``statsmodels.api.GLM(...).fit(cov_type="cluster")`` on the rows.
"""

import itertools
import json
import sys

import numpy as np
import pandas as pd
import yaml
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

path, design_path, level = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(design_path) as fh:
    design = yaml.safe_load(fh)
factors = [f["name"] for f in design["factors"]]
cluster = design["cluster"]
df = pd.read_parquet(path, columns=[*factors, cluster, "deviation"])
per_cluster = df.groupby(cluster, observed=True)["deviation"].agg(["size", "sum"])
t_n = per_cluster["size"].to_numpy(float)
t_d = per_cluster["sum"].to_numpy(float)
total_n, total_d, g = t_n.sum(), t_d.sum(), len(t_n)
k_cr1 = g / (g - 1) * (total_n - 1) / (total_n - 2)
z = norm.ppf(0.975)
parts = []
for k in range(1, level + 1):
    for combo in itertools.combinations(factors, k):
        per = df.groupby([*combo, cluster], observed=True)["deviation"].agg(["size", "sum"])
        n = per["size"].unstack(cluster, fill_value=0).reindex(columns=per_cluster.index,
                                                              fill_value=0)
        a = per["sum"].unstack(cluster, fill_value=0).reindex(columns=per_cluster.index,
                                                             fill_value=0)
        n_, a_ = n.to_numpy(float), a.to_numpy(float)
        big_n, big_a = n_.sum(1), a_.sum(1)
        m, c = total_n - big_n, total_d - big_a
        p1, p0 = big_a / big_n, c / m
        ld = np.log(p1 / (1 - p1)) - np.log(p0 / (1 - p0))
        e1 = a_ - p1[:, None] * n_
        e0 = (t_d - a_) - p0[:, None] * (t_n - n_)
        u = e1 / (big_n * p1 * (1 - p1))[:, None] - e0 / (m * p0 * (1 - p0))[:, None]
        se = np.sqrt(k_cr1 * (u * u).sum(1))
        out = n.index.to_frame(index=False)
        out["level"] = k
        out["n"], out["deviations"] = big_n.astype(int), big_a.astype(int)
        out["log_disparity"] = ld
        out["ci_low"], out["ci_high"] = ld - z * se, ld + z * se
        out["p_value"] = 2 * norm.sf(np.abs(ld) / se)
        parts.append(out)
table = pd.concat(parts, ignore_index=True)
table["p_adjusted"] = multipletests(table["p_value"], method="fdr_bh")[1]
records = table.astype(object).where(table.notna(), None).to_dict("records")
json.dump(records, sys.stdout)
