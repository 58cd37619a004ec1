"""analysis.special (the fits' special functions without SciPy) against SciPy itself."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special as sp

from analysis import special

REPO = Path(__file__).resolve().parents[2]


def test_logistic_functions_equal_scipys():
    x = np.concatenate([np.linspace(-800, 800, 4001), [-1e-300, 0.0, 1e-300, 37.5, -37.5]])
    np.testing.assert_allclose(special.expit(x), sp.expit(x), rtol=1e-15, atol=0)
    np.testing.assert_allclose(special.log_expit(x), sp.log_expit(x), rtol=1e-15, atol=0)
    p = np.concatenate([np.linspace(1e-12, 1 - 1e-12, 2001), [0.0, 1.0, 1e-300]])
    # near p = 0.5 logit is ill-conditioned: absolute differences of 1e-16 (the fit uses it
    # only for its starting values)
    np.testing.assert_allclose(special.logit(p), sp.logit(p), rtol=2e-15, atol=1e-15)
    assert special.expit(np.array([-1000.0]))[0] == 0.0  # no overflow warning escapes


def test_normal_tail_and_quantile_equal_scipys():
    z = np.concatenate([np.linspace(-37, 37, 2001), [np.nan, np.inf, -np.inf]])
    got, want = special.normal_sf2(z), 2 * sp.ndtr(-np.abs(z))
    normal = want > 1e-300  # below: denormal numbers, both tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=5e-13)
    assert np.isnan(got[-3]) and got[-2] == 0.0 == got[-1]
    for q in [1e-300, 1e-20, 1e-8, 0.025, 0.3, 0.5, 0.8, 0.95, 0.975, 0.995, 1 - 1e-12]:
        assert special.normal_ppf(q) == pytest.approx(float(sp.ndtri(q)), rel=1e-13, abs=1e-15)
    assert special.normal_ppf(0.0) == -math.inf and special.normal_ppf(1.0) == math.inf
    assert math.isnan(special.normal_ppf(1.5))


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 29, 30, 99, 150, 400])
def test_chi2_tail_equals_scipys(df):
    x = np.concatenate([np.geomspace(1e-8, 3000, 400), [df - 1e-9, float(df), df + 0.5]])
    got = np.array([special.chi2_sf(df, v) for v in x])
    want = sp.chdtrc(df, x)
    normal = want > 1e-290
    np.testing.assert_allclose(got[normal], want[normal], rtol=5e-13)
    assert np.all(got[~normal] < 1e-280)


def test_chi2_tail_edges_and_handover():
    assert special.chi2_sf(3, 0.0) == 1.0 and special.chi2_sf(3, -1.0) == 1.0
    assert special.chi2_sf(3, math.inf) == 0.0
    assert math.isnan(special.chi2_sf(3, math.nan)) and math.isnan(special.chi2_sf(0, 1.0))
    assert math.isnan(special.chi2_sf(2.5, 1.0))
    df = special.CLOSED_FORM_MAX_DF + 1  # handed to scipy: the same value
    assert special.chi2_sf(df, 450.0) == pytest.approx(float(sp.chdtrc(df, 450.0)), rel=1e-15)
    # hand-computed: chi2(2) tail is exp(-x/2); chi2(1) tail at 3.841458820694124 is 0.05
    assert special.chi2_sf(2, 5.0) == pytest.approx(math.exp(-2.5), rel=1e-15)
    assert special.chi2_sf(1, 3.841458820694124) == pytest.approx(0.05, rel=1e-12)


def test_the_importance_command_imports_no_scipy(tmp_path):
    """The point of the module: ``importance`` on an unclustered design starts without
    SciPy (measured by benchmarks/bench_cli.py part 3)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 2_000
    frame = pd.DataFrame({"model": rng.choice(["a", "b"], n),
                          "style": rng.choice(["x", "y", "z"], n),
                          "deviation": (rng.random(n) < 0.3).astype(int)})
    path = tmp_path / "r.csv"
    frame.to_csv(path, index=False)
    code = ("import sys\nfrom analysis.cli import main\n"
            "assert main(['importance', sys.argv[1], '--factors', 'model,style', "
            "'--outcome', 'deviation', '--json']) == 0\n"
            "print('SCIPY' if any(m.startswith('scipy') for m in sys.modules) else 'NONE')")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""},
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "NONE"
    assert '"likelihood_ratio"' in out.stdout or '"tests"' in out.stdout
