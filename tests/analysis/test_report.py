"""The whole-analysis report: numbers equal the CLI's, self-contained and escaped HTML,
ZIP of figures and tables, PDF via Chromium, skipped sections, bad input (docs/report.md)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis import report as R
from analysis.cli import main
from analysis.design import Design, apply_design
from analysis.export import browser_available
from analysis.io import load_results
from tests.analysis.cli_helpers import run_json

EVIL = "<script>alert(1)</script>"
needs_browser = pytest.mark.skipif(not browser_available(), reason="no Chromium here")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """model x group x style with a 0/1 outcome, a numeric score and an answer category;
    one group value is an HTML injection attempt."""
    rng = np.random.default_rng(3)
    rows = []
    for model, base in (("m1", 0.2), ("m2", 0.45)):
        for g, extra in (("alpha", 0.0), (EVIL, 0.2), ("gamma", 0.1)):
            for style in ("plain", "polite"):
                for i in range(24):
                    dev = int(rng.random() < base + extra + (0.1 if style == "polite" else 0))
                    rows.append({"model": model, "group": g, "style": style, "dev": dev,
                                 "score": float(np.round(rng.normal(extra, 1), 4)),
                                 "answer_type": ["stereo", "anti", "unknown"][i % 3]})
    folder = tmp_path_factory.mktemp("report")
    data = folder / "results.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    design = {"version": 1, "name": "toy", "factors": [
        {"name": "group", "kind": "domain", "reference": "alpha",
         "values": ["alpha", EVIL, "gamma"]},
        {"name": "style", "kind": "prompt", "reference": "plain", "values": ["plain", "polite"]},
        {"name": "model", "kind": "model", "reference": "m1", "values": ["m1", "m2"]}],
        "outcome": {"column": "dev", "mapping": "binary"}}
    dpath = folder / "results.design.yaml"
    dpath.write_text(yaml.safe_dump(design))
    return data, dpath


@pytest.fixture(scope="module")
def built(files):
    data, dpath = files
    design = Design.load(dpath)
    results = apply_design(load_results(data), design)
    rep = R.build_report(results, design, [
        "coverage", ("subgroups", {"factors": ["group", "style"], "level": 2}),
        ("ecdf", {"factors": ["group", "style"]}),
        ("importance", {"factors": ["group", "style", "model"]}),
        ("disparity", {"feature": "score", "by": ["group"], "n_resamples": 99}),
        "index", ("cohorts", {"category": "answer_type", "cohort": "model"}), "judges"],
        source="results.csv")
    html_text = R.report_html(rep)
    return rep, html_text


def _section(rep, name):
    return next(s for s in rep.sections if s.name == name)


def _zip_tables(data: bytes) -> dict[str, pd.DataFrame]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: pd.read_csv(zf.open(n)) for n in zf.namelist() if n.endswith(".csv")}


def test_numbers_equal_the_cli_json(files, built, capsys):
    data, dpath = files
    rep, _ = built
    tables = _zip_tables(R.report_zip(rep, "<html></html>"))
    cov = tables["tables/01_coverage_coverage_summary.csv"].iloc[0]
    out = run_json(capsys, "coverage", data, "--design", dpath, "--factors", "group,style")
    assert cov["coverage_percentage"] == pytest.approx(out["coverage_percentage"])
    assert cov["gini_index"] == pytest.approx(out["gini_index"])

    sub = tables["tables/02_subgroups_subgroups.csv"]
    out = run_json(capsys, "subgroups", data, "--design", dpath, "--factors", "group,style",
                   "--level", "2")
    cli = pd.DataFrame(out["subgroups"] if isinstance(out, dict) else out)
    assert len(sub) == len(cli) == 3 + 2 + 6
    assert sorted(sub["log_disparity"].dropna()) == pytest.approx(
        sorted(cli["log_disparity"].dropna()))
    assert sorted(sub["p_value"].dropna()) == pytest.approx(sorted(cli["p_value"].dropna()))

    ecdf = tables["tables/03_ecdf_ecdf_summary.csv"].set_index("model")
    out = run_json(capsys, "ecdf", data, "--design", dpath, "--factors", "group,style",
                   "--by", "model")
    for m in ("m1", "m2"):
        assert ecdf.loc[m, "deviation_metric"] == pytest.approx(
            out["groups"][m]["deviation_metric"])

    terms = tables["tables/04_importance_factor_importance.csv"].set_index("term")
    out = run_json(capsys, "importance", data, "--design", dpath)
    cli = pd.DataFrame(out["terms"] if isinstance(out, dict) else out).set_index("term")
    # the CLI renames the factor 'group' (also an output column's name) to group_factor
    # (analysis.names.clash_free); the report keeps the design's names
    assert cli.index.str.startswith("group_factor[").sum() == 2
    cli.index = cli.index.str.replace("group_factor[", "group[", regex=False)
    assert len(terms) == len(cli) and len(terms) >= 5
    for term in cli.index:
        assert terms.loc[term, "odds_ratio"] == pytest.approx(cli.loc[term, "odds_ratio"])

    summ = tables["tables/05_disparity_disparity_summary.csv"]
    out = run_json(capsys, "disparity", data, "--feature", "score", "--by", "group",
                   "--permutations", "99")
    cli = pd.DataFrame(out["summary"])
    assert sorted(summ["mean"]) == pytest.approx(sorted(cli["mean"]))

    totals = tables["tables/06_index_bias_index_totals.csv"].set_index("model")
    out = run_json(capsys, "index", data, "--design", dpath, "--dimensions", "group",
                   "--model", "model")
    cli = pd.DataFrame(out["totals"]).set_index("model")
    for m in ("m1", "m2"):
        assert totals.loc[m, "llmbi"] == pytest.approx(cli.loc[m, "llmbi"])


def test_html_is_self_contained_and_escaped(built):
    rep, html_text = built
    assert "<script src" not in html_text.lower()
    assert "http://" not in html_text.split("<body>", 1)[1].split("<script>")[0]
    from plotly.offline import get_plotlyjs

    marker = get_plotlyjs()[:200].replace("</script", "<\\/script")
    assert html_text.count(marker) == 1  # plotly.js inlined once, not per figure
    n_figures = sum(len(s.figures) for s in rep.sections)
    assert n_figures >= 8 and html_text.count("Plotly.newPlot(") == n_figures
    assert EVIL not in html_text  # neither in tables nor in the figures' JSON
    assert "<script>alert(1)" not in html_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text  # the tables
    # the figures: labels escaped by the builders (analysis.safe_text.escaped_labels), then
    # '&', '<' and '>' of the JSON escaped inside <script>; no label reaches plotly raw
    assert "\\u0026lt;script\\u0026gt;alert(1)" in html_text
    assert "\\u003cscript" not in html_text
    for title in ("Coverage", "Subgroups", "eCDF", "Factor importance", "Disparity",
                  "Bias index", "Cohorts", "Judges"):
        assert f"<h2>{title}</h2>" in html_text
    assert f"bias workbench {R.package_version()}" in html_text and " UTC" in html_text
    assert "Skipped: the table is not a judged four-stage file" in html_text
    json.dumps([s.settings for s in rep.sections])  # settings are serialisable


def test_warnings_reach_the_report(files):
    data, dpath = files
    design = Design.load(dpath)
    results = apply_design(load_results(data), design)
    rep = R.build_report(results, design, [("subgroups", {"factors": ["group", "style"],
                                                           "level": 2, "min_n": 50})])
    assert "6 subgroups have fewer than 50 rows (small n)." in rep.sections[0].warnings
    # an aliased model is a refusal stated in the report, not an error
    results = results.assign(copy=results["style"].astype(str))
    design2 = Design.from_dict({**design.to_dict(), "factors": [
        *design.to_dict()["factors"],
        {"name": "copy", "kind": "prompt", "reference": "plain", "values": ["plain", "polite"]}]})
    sec = R.build_section("importance", apply_design(results, design2), design2,
                          {"factors": ["style", "copy"]})
    assert sec.skipped is None and sec.warnings[0].startswith("The model was not fitted")
    assert "<h2>Factor importance</h2>" in R.report_html(R.build_report(
        apply_design(results, design2), design2, [("importance", {"factors": ["style", "copy"]})]))


def test_sections_the_design_cannot_support_are_skipped(files):
    data, dpath = files
    frame = load_results(data)[["group", "style", "dev"]]
    frame["dev"] = frame["dev"].map({1: "yes", 0: "no"})
    spec = Design.load(dpath).subset(["group", "style"]).to_dict()
    design = Design.from_dict({**spec, "outcome": {"column": "dev", "mapping": "values",
                                                   "values": ["yes"]}})
    rep = R.build_report(apply_design(frame, design), design, ["ecdf", "disparity"])
    reasons = {s.name: s.skipped for s in rep.sections}
    assert reasons["ecdf"] == "the design has no model factor to compare curves by."
    assert reasons["disparity"].startswith("the table has no numeric column")
    html_text = R.report_html(rep)
    assert "Skipped: the design has no model factor" in html_text
    no_outcome = Design.from_dict({k: v for k, v in spec.items() if k != "outcome"})
    sec = R.build_section("subgroups", apply_design(frame, no_outcome), no_outcome)
    assert sec.skipped.startswith("the design has no outcome")


def test_unknown_setting_is_a_typed_error(built, files):
    data, dpath = files
    design = Design.load(dpath)
    results = apply_design(load_results(data), design)
    with pytest.raises(R.AnalysisError, match="unknown setting"):
        R.build_section("subgroups", results, design, {"levle": 2})
    with pytest.raises(R.AnalysisError, match="Unknown report section"):
        R.build_section("tarot", results, design)
    with pytest.raises(R.AnalysisError, match="Report section 'subgroups': bad settings"):
        R.build_section("subgroups", results, design, {"level": "two"})
    with pytest.raises(R.AnalysisError, match="Report section 'coverage': .*nope"):
        R.build_section("coverage", results, design, {"factors": ["nope"]})


@needs_browser
def test_zip_holds_each_figure_as_png_svg_pdf_and_each_table(built):
    rep, html_text = built
    with zipfile.ZipFile(io.BytesIO(R.report_zip(rep, html_text))) as zf:
        names = set(zf.namelist())
        for i, sec in enumerate(rep.sections, start=1):
            for stem, _ in sec.figures:
                base = f"figures/{i:02d}_{sec.name}_{stem}"
                assert zf.read(base + ".png")[:4] == b"\x89PNG"
                assert b"<svg" in zf.read(base + ".svg")[:400]
                assert zf.read(base + ".pdf")[:4] == b"%PDF"
            for stem, table in sec.tables:
                assert len(pd.read_csv(zf.open(f"tables/{i:02d}_{sec.name}_{stem}.csv"))) \
                    == len(table)
        assert "report.html" in names and "README.txt" in names


def test_zip_without_a_browser_says_so(built, monkeypatch):
    import analysis.export as export

    monkeypatch.setattr(export, "browser_available", lambda: False)
    rep, html_text = built
    with zipfile.ZipFile(io.BytesIO(R.report_zip(rep, html_text))) as zf:
        assert not [n for n in zf.namelist() if n.startswith("figures/")]
        assert "Figures are not included as images" in zf.read("README.txt").decode()
        assert zf.read("report.html").decode() == html_text
        assert any(n.endswith(".csv") for n in zf.namelist())


def test_cli_writes_html_zip_pdf(files, tmp_path, capsys):
    data, dpath = files
    out, zpath, pdf = tmp_path / "r.html", tmp_path / "f.zip", tmp_path / "r.pdf"
    argv = ["report", str(data), "--design", str(dpath), "--out", str(out), "--zip",
            str(zpath), "--sections", "subgroups,ecdf"]
    if R.chromium_path():
        argv += ["--pdf", str(pdf)]
    assert main(argv) == 0
    text = out.read_text()
    assert "<h2>Subgroups</h2>" in text and "<h2>eCDF</h2>" in text
    assert "<h2>Coverage</h2>" not in text
    assert zipfile.ZipFile(zpath).read("report.html").decode() == text
    if R.chromium_path():
        assert pdf.read_bytes()[:4] == b"%PDF" and pdf.stat().st_size > 10_000
    assert "eCDF: 1 figures" in capsys.readouterr().err


def test_cli_settings_file(files, tmp_path):
    data, dpath = files
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"subgroups": {"factors": ["style"], "level": 1}}))
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--design", str(dpath), "--out", str(out),
                 "--sections", "subgroups", "--settings", str(settings)]) == 0
    assert "<li>factors: style</li><li>level: 1</li>" in out.read_text()


@pytest.mark.parametrize("extra, message", [
    (["--sections", "coverage,tarot"], "unknown section(s) tarot"),
    (["--settings", "SETTINGS", "--sections", "coverage"], "unknown setting(s) levle"),
    (["--zip", "NOFOLDER/f.zip"], "does not exist"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(files, tmp_path, capsys, extra, message):
    data, dpath = files
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"coverage": {"levle": 2}}))
    extra = [str(settings) if e == "SETTINGS" else
             str(tmp_path / "missing" / "f.zip") if e == "NOFOLDER/f.zip" else e for e in extra]
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--design", str(dpath), "--out", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [settings]


def test_cli_pdf_without_chromium_writes_nothing(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(R, "chromium_path", lambda: None)
    data, dpath = files
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--design", str(dpath), "--out", str(out),
                 "--pdf", str(tmp_path / "r.pdf"), "--sections", "coverage"]) == 2
    assert "PDF of the report needs Chromium" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("stem", ["bbq_unifiedqa", "ssqa_simulated", "ssqa_design"])
def test_cli_on_each_bundled_sample(stem, tmp_path):
    """Every section is built or skipped with a reason on the bundled samples."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "sample_data"
    out = tmp_path / "r.html"
    sections = "coverage,subgroups,ecdf,cohorts,judges"
    assert main(["report", str(root / f"{stem}.csv.gz"), "--design",
                 str(root / f"{stem}.design.yaml"), "--out", str(out), "--sections",
                 sections]) == 0
    text = out.read_text()
    assert text.count("<section ") == 5
    assert "Skipped: the table is not a judged four-stage file" in text
    if stem == "bbq_unifiedqa":
        assert "Skipped: the design has no model factor" in text
    if stem == "ssqa_design":
        assert "Skipped: the design has no outcome" in text


def test_judges_section_on_a_judged_file():
    from analysis.design import make_factor
    from analysis.judge_stats.metrics import stage_metrics
    from tests.judges.test_metrics import judged_table

    judged = judged_table()
    design = Design(factors=(make_factor(judged, "model"),))
    sec = R.build_section("judges", judged, design)
    assert sec.skipped is None
    pd.testing.assert_frame_equal(sec.tables[0][1], stage_metrics(judged))
    assert sec.warnings[0].startswith("2 judgments are unscored")
    html_text = R.report_html(R.Report("judged.csv", design, {"nestings": []}, [sec], "x", "t"))
    assert "<h2>Judges</h2>" in html_text and "2 judgments are unscored" in html_text
    # FairMonitor's Figures 4 and 5, the same figures the Judges page shows
    from analysis.judge_stats.metrics import stage_figures

    assert [name for name, _ in sec.figures] == list(stage_figures(judged))
    assert sec.figures[0][1].to_json() == stage_figures(judged)["judge_scores_box"].to_json()
