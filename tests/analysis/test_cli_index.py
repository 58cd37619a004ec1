"""``python -m analysis index``: LLMBI per model equals the API; options reach it."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from tests.analysis.cli_helpers import write_csv


@pytest.fixture
def results_csv(tmp_path):
    rows = []
    for model, g, n, k in [("m1", "a", 10, 2), ("m1", "b", 10, 5), ("m2", "a", 10, 1),
                           ("m2", "b", 10, 1)]:
        rows += [{"model": model, "g": g, "dev": int(i < k), "s": float(i % 4)}
                 for i in range(n)]
    return write_csv(tmp_path, rows)


def test_json(results_csv, capsys):
    assert main(["index", str(results_csv), "--outcome", "dev", "--dimensions", "g",
                 "--model", "model", "--penalty", "0.25", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    totals = {r["model"]: r for r in out["totals"]}
    assert totals["m1"]["weighted_bias"] == pytest.approx((0.2 + 0.5) / 2)
    assert totals["m1"]["llmbi"] == pytest.approx(0.35 + 0.25)
    assert totals["m2"]["llmbi"] == pytest.approx(0.1 + 0.25)
    assert totals["m2"]["rank"] == 1
    assert {r["component"] for r in out["components"]} == {
        "dimension", "diversity_penalty", "sentiment"}


def test_scores_weights_sentiment(results_csv, capsys):
    assert main(["index", str(results_csv), "--outcome", "dev", "--dimensions", "g",
                 "--scores", "one_minus_impact_ratio", "--model", "model", "--sentiment", "s",
                 "--lambda", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    totals = {r["model"]: r for r in out["totals"]}
    assert totals["m1"]["weighted_bias"] == pytest.approx(1 - 0.5 / 0.8)
    assert totals["m1"]["sentiment_scale"] == 2.0
    assert totals["m1"]["sentiment_term"] == pytest.approx(2 * totals["m1"]["sentiment_score"])


def test_error(results_csv, capsys):
    assert main(["index", str(results_csv), "--outcome", "dev", "--dimensions", "g",
                 "--weights", "1,2"]) == 2
    assert "one weight per" in capsys.readouterr().err
