"""Category values named like a column of the cohorts tables (a ``by`` factor, the cohort,
``n``, ``count``, ``percent``), empty, or differing only by case / surrounding spaces:
hand-computed shares through the API, the CLI JSON and the report's cohorts section."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis import distribution as dm
from analysis.cli import main
from analysis.columns import COUNT, PERCENT, N

#: m1: 5 answers, m2: 5 answers; shares by hand (percent of the cohort's 5 rows).
ANSWERS = {"m1": ["model", "model", "n", "", "A"],
           "m2": [" A", "a", "count", "percent", "prompt"]}
SHARES = {("m1", "model"): 40.0, ("m1", "n"): 20.0, ("m1", ""): 20.0, ("m1", "A"): 20.0,
          ("m2", " A"): 20.0, ("m2", "a"): 20.0, ("m2", "count"): 20.0,
          ("m2", "percent"): 20.0, ("m2", "prompt"): 20.0}
CATEGORIES = ["model", "n", "", "A", " A", "a", "count", "percent", "prompt"]


def clashing_frame() -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "prompt": "p1", "answer": a}
                         for m, answers in ANSWERS.items() for a in answers])


def _share(m: str, c: str) -> float:
    return SHARES.get((m, c), 0.0)


def check_long(dist: pd.DataFrame) -> None:
    """Every (cohort, category) of the long table has its hand-computed share."""
    assert len(dist) == 2 * len(CATEGORIES)  # every category in every cohort, 0 included
    got = {(str(r["model"]), str(r["answer"])): r for r in dist.to_dict(orient="records")}
    assert set(got) == {(m, c) for m in ANSWERS for c in CATEGORIES}
    for (m, c), r in got.items():
        assert r[PERCENT] == pytest.approx(_share(m, c)), (m, c)
        assert r[N] == 5 and r[COUNT] == round(_share(m, c) / 20)


def check_wide(wide: pd.DataFrame, by: list[str]) -> None:
    """The wide table: the cohort and ``by`` columns intact, one prefixed column per
    category (a clash makes every one ``answer=<value>``), ``n`` the cohort size."""
    names = dm.wide_column_names(CATEGORIES, "answer", [*by, "model"])
    assert names["model"] == "answer=model" and names["n"] == "answer=n"
    assert names[""] == 'answer=""' and names[" A"] == 'answer=" A"'
    assert names["A"] == "answer=A" and names["a"] == "answer=a"
    assert list(wide.columns) == [*by, "model", *names.values(), N]
    assert list(wide["model"].astype(str)) == ["m1", "m2"]
    assert list(wide[N]) == [5, 5]
    for i, m in enumerate(["m1", "m2"]):
        for c, col in names.items():
            assert wide[col].iloc[i] == pytest.approx(_share(m, c)), (m, c)


@pytest.mark.parametrize("by", [[], ["prompt"]])
def test_api_shares_with_clashing_categories(by):
    frame = clashing_frame()
    dist = dm.category_distribution(frame, "answer", "model", by=by)
    check_long(dist)
    check_wide(dm.percentage_table(dist, "answer", "model", by=by), by)
    spread = dm.frequency_spread(dist, "answer", "model", by=by)
    assert list(spread["n_categories"]) == [9, 9]
    across = dm.frequency_spread(dist, "answer", "model", by=by, over="cohorts")
    assert set(across["answer"].astype(str)) == set(CATEGORIES)  # 9 distinct categories
    test = dm.homogeneity_test(dist, "answer", "model", by=by, method="chi2")
    assert test["n_categories"].iloc[0] == 9 and test[N].iloc[0] == 10
    # every m1 answer differs from every m2 answer: chi-square = n * (min(shape) - 1)
    assert test["statistic"].iloc[0] == pytest.approx(10.0)


def test_plain_categories_keep_their_names():
    names = dm.wide_column_names(["woman", "man", "Man"], "portrays", ["role", "decade"])
    assert names == {"woman": "woman", "man": "man", "Man": "Man"}
    assert dm.category_label(" x") == '" x"' and dm.category_label("") == '""'
    assert dm.category_label("x y") == "x y"
    # a prefixed name that is itself taken gets an underscore
    names = dm.wide_column_names(["model", "x"], "answer", ["answer=x", "model"])
    assert names == {"model": "answer=model", "x": "answer=x_"}


def test_cli_json(tmp_path, capsys):
    path = tmp_path / "clash.parquet"  # Parquet keeps the empty string and the spaces
    clashing_frame().to_parquet(path)
    assert main(["cohorts", str(path), "--category", "answer", "--cohort", "model",
                 "--by", "prompt", "--method", "chi2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    check_long(pd.DataFrame(out["distribution"]))
    check_wide(pd.DataFrame(out["percentages"]), ["prompt"])
    assert out["homogeneity"][0]["statistic"] == pytest.approx(10.0)
    # the text output (no --json) prints the same wide table
    assert main(["cohorts", str(path), "--category", "answer", "--cohort", "model"]) == 0
    assert 'answer=" A"' in capsys.readouterr().out


def test_report_section():
    from analysis.design import Design, make_factor
    from analysis.report import build_section

    frame = clashing_frame()
    design = Design((make_factor(frame, "model", kind="model"),
                     make_factor(frame, "prompt", kind="domain")))
    sec = build_section("cohorts", frame, design, {"category": "answer", "cohort": "model",
                                                   "by": ["prompt"], "method": "chi2"})
    assert not sec.skipped
    tables = dict(sec.tables)
    check_wide(tables["cohorts_percentages"], ["prompt"])
    legend = {t.name for t in sec.figures[0][1].data}
    assert {'""', '" A"', "A", "a", "model", "n"} <= legend
    from analysis.report import build_report, report_html

    html_text = report_html(build_report(frame, design, [("cohorts", {
        "category": "answer", "cohort": "model", "by": ["prompt"], "method": "chi2"})]))
    assert "<th>answer=model</th>" in html_text and '<th>answer=" A"</th>' in html_text


def test_categories_as_a_json_list(tmp_path, capsys):
    """Values with a comma, surrounding spaces or empty cannot travel in a comma list:
    --categories takes a JSON list verbatim (the page's Copy as CLI writes one)."""
    from analysis.commands.cohorts import categories_option
    from analysis.reproduce import categories_text

    assert categories_text(["a", "b"]) == ["a", "b"]
    assert categories_text(["", " A", "x, y"]) == '["", " A", "x, y"]'
    assert categories_option('["", " A", "x, y"]') == ["", " A", "x, y"]
    assert categories_option(" a, b ") == ["a", "b"]
    path = tmp_path / "clash.parquet"
    clashing_frame().to_parquet(path)
    assert main(["cohorts", str(path), "--category", "answer", "--cohort", "model",
                 "--categories", '["", " A", "model"]', "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {(r["model"], r["answer"]): r["percent"] for r in out["distribution"]}
    assert got == {("m1", ""): 20.0, ("m1", " A"): 0.0, ("m1", "model"): 40.0,
                   ("m2", ""): 0.0, ("m2", " A"): 20.0, ("m2", "model"): 0.0}
    assert main(["cohorts", str(path), "--category", "answer", "--cohort", "model",
                 "--categories", '["", 1]']) == 2
    assert "JSON list must hold strings" in capsys.readouterr().err


@pytest.mark.parametrize("by", [[], ["prompt"]])
def test_capsules_with_subcategories_named_like_columns(by, tmp_path, capsys):
    """Time capsules: subcategories 'model' (the cohort), 'n', 'prompt' (a by factor)."""
    from analysis import capsules as cp

    dist = cp.capsule_distribution(clashing_frame(), "answer", "model",
                                   demographics="g=model,n,A,prompt", by=by)
    got = {(str(r["model"]), str(r["answer"])): (r[PERCENT], r["n_other"])
           for r in dist.to_dict(orient="records")}
    # m1: model 2, n 1, A 1 of 5 ('' is in no subcategory); m2: prompt 1 of 5
    assert got == {("m1", "model"): (40.0, 1), ("m1", "n"): (20.0, 1), ("m1", "A"): (20.0, 1),
                   ("m1", "prompt"): (0.0, 1), ("m2", "model"): (0.0, 4),
                   ("m2", "n"): (0.0, 4), ("m2", "A"): (0.0, 4), ("m2", "prompt"): (20.0, 4)}
    path = tmp_path / "clash.parquet"
    clashing_frame().to_parquet(path)
    assert main(["cohorts", str(path), "--category", "answer", "--cohort", "model",
                 "--by", ",".join(by), "--demographics", "g=model,n,A,prompt", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    table = pd.DataFrame(out["capsule_table"]).set_index("model")
    col = " / ".join(["g", *(["p1"] if by else []), "model"])
    assert table.loc["m1", col] == 40.0 and table.loc["m2", col] == 0.0
