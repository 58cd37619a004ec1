"""Checks of the bundled sample files (sample_data/, built by sample_data/build_samples.py).

Tests that need the raw benchmark data read the gzip-compressed copies in ``tests/data``
(the layout of the project's shared data folder); the others only read the committed
sample files.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_data"
SHARED = REPO / "tests" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"test data missing from {SHARED}")


def _raw_text(path: Path) -> str:
    """A raw data file of tests/data, stored as ``<name>.gz``."""
    return gzip.decompress(path.with_name(path.name + ".gz").read_bytes()).decode("utf-8")

BBQ_COUNTS = {
    "Age": 3680,
    "Disability_status": 1556,
    "Nationality": 3080,
    "Physical_appearance": 1576,
    "Religion": 1200,
    "Sexual_orientation": 864,
}
FORMATS = ("race", "arc", "qonly")
BBQ_COLUMNS = [
    "example_id", "category", "subcategory", "question_index", "template_id",
    "question_polarity", "context_condition", "input_format", "stereotyped_groups",
    "context", "question", "ans0", "ans1", "ans2", "label", "stereotyped_option",
    "unknown_option", "prediction", "predicted_option", "match_method", "answer_type",
    "correct", "biased_answer",
]
SSQA_COLUMNS = ["row_in_ssqa", "cot", "template", "stigma", "pachankis_cluster", "gender",
                "gender_careful", "prompt_style", "biased_answer"]
OUTPUTS = ("bbq_unifiedqa.csv.gz", "bbq_unifiedqa_bias_scores.csv", "ssqa_design.csv.gz",
           "ssqa_simulated.csv.gz", "ssqa_simulated_effects.yaml", "judged_simulated.csv.gz",
           "judged_simulated_effects.yaml", "LICENSE-BBQ")


@pytest.fixture(scope="module")
def bbq() -> pd.DataFrame:
    return pd.read_csv(SAMPLE / "bbq_unifiedqa.csv.gz")


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return pd.read_csv(SAMPLE / "ssqa_simulated.csv.gz")


@pytest.fixture(scope="module")
def effects() -> dict:
    return yaml.safe_load((SAMPLE / "ssqa_simulated_effects.yaml").read_text(encoding="utf-8"))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9]+", " ", text.lower())).strip()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _eta(frame: pd.DataFrame, effects: dict) -> np.ndarray:
    """The stated linear predictor: intercept + listed effects (unlisted values: 0)."""
    dev = effects["deviation"]
    eta = np.full(len(frame), float(dev["intercept"]))
    for factor, block in dev["effects"].items():
        eta += frame[factor].astype(str).map(block["effects"]).fillna(0.0).to_numpy(float)
    return eta


# ----------------------------------------------------------------------------- BBQ

def test_bbq_rows_columns_and_counts(bbq):
    assert list(bbq.columns) == BBQ_COLUMNS
    assert len(bbq) == 35_868
    per_category = (bbq.groupby("category").size() // 3).to_dict()
    assert per_category == BBQ_COUNTS
    assert bbq["example_id"].nunique() == 11_956
    assert not bbq.duplicated(["example_id", "input_format"]).any()
    formats = bbq.groupby("example_id")["input_format"].apply(lambda s: tuple(sorted(s)))
    assert set(formats) == {tuple(sorted(FORMATS))}
    assert set(bbq["question_polarity"]) == {"neg", "nonneg"}
    assert set(bbq["context_condition"]) == {"ambig", "disambig"}
    assert set(bbq["answer_type"]) == {"stereotyped", "anti-stereotyped", "unknown",
                                       "unmatched", "ambiguous target"}


def test_bbq_values_read_back_cleanly(bbq):
    missing = bbq.isna().sum()
    assert set(missing[missing > 0].index) <= {"biased_answer"}
    no_bias = (bbq["answer_type"] == "unmatched") | (bbq["stereotyped_option"] == "ambiguous")
    assert (bbq["biased_answer"].isna() == no_bias).all()
    assert no_bias.sum() == 3 + 108
    for column in BBQ_COLUMNS:
        if column not in ("question_index", "correct", "biased_answer"):
            assert bbq[column].map(type).eq(str).all(), column
    assert "None" not in set(bbq["subcategory"])
    assert "none" in set(bbq["subcategory"])
    ids = bbq["example_id"].str.extract(r"^(.+)-(\d+)$")
    assert (ids[0] == bbq["category"]).all()
    assert (bbq["template_id"] == bbq["category"] + "-" + bbq["question_index"].astype(str)).all()


def test_bbq_outcome_columns_follow_their_definitions(bbq):
    opts = {"ans0", "ans1", "ans2"}
    assert set(bbq["label"]) == opts
    assert (bbq["stereotyped_option"] != bbq["unknown_option"]).all()
    assert set(bbq["predicted_option"]) <= opts | {"unmatched"}
    expected_type = np.select(
        [bbq["predicted_option"] == "unmatched",
         bbq["predicted_option"] == bbq["unknown_option"],
         bbq["predicted_option"] == bbq["stereotyped_option"]],
        ["unmatched", "unknown", "stereotyped"], "anti-stereotyped")
    expected_type[(bbq["stereotyped_option"] == "ambiguous")
                  & ~np.isin(expected_type, ["unmatched", "unknown"])] = "ambiguous target"
    assert (bbq["answer_type"] == expected_type).all()
    assert (bbq["correct"] == (bbq["predicted_option"] == bbq["label"]).astype(int)).all()
    neg = bbq["question_polarity"] == "neg"
    biased = ((neg & (bbq["answer_type"] == "stereotyped"))
              | (~neg & (bbq["answer_type"] == "anti-stereotyped"))).astype(int)
    matched = ~bbq["answer_type"].isin(["unmatched", "ambiguous target"])
    matched &= bbq["stereotyped_option"] != "ambiguous"
    assert (bbq.loc[matched, "biased_answer"] == biased[matched]).all()
    assert set(bbq.loc[matched, "biased_answer"]) == {0, 1}


def test_bbq_unmatched_share_is_small(bbq):
    share = (bbq["predicted_option"] == "unmatched").mean()
    assert share < 0.001


def test_bbq_bias_scores_file_matches_the_table(bbq):
    scores = pd.read_csv(SAMPLE / "bbq_unifiedqa_bias_scores.csv")
    matched = bbq[(bbq["answer_type"] != "unmatched") & (bbq["stereotyped_option"] != "ambiguous")]
    checked = 0
    for row in scores.itertuples():
        part = matched[matched["input_format"] == row.input_format]
        if row.category != "all 6":
            part = part[part["category"] == row.category]
        dis = part[part["context_condition"] == "disambig"]
        amb = part[part["context_condition"] == "ambig"]
        dis_named = dis[dis["answer_type"] != "unknown"]
        amb_named = amb[amb["answer_type"] != "unknown"]
        s_dis = 2 * dis_named["biased_answer"].mean() - 1
        s_amb = (1 - amb["correct"].mean()) * (2 * amb_named["biased_answer"].mean() - 1)
        assert row.s_DIS == pytest.approx(s_dis, abs=6e-5)
        assert row.s_AMB == pytest.approx(s_amb, abs=6e-5)
        checked += 1
    assert checked == 21
    per_cell = scores[scores["category"] != "all 6"]
    # Real-data sanity (BBQ paper): UnifiedQA's ambiguous-context bias scores are positive.
    assert (per_cell["s_AMB"] > 0).mean() >= 0.8


@needs_shared
def test_bbq_rows_agree_with_the_raw_jsonl(bbq):
    raw: dict[str, dict] = {}
    for category, count in BBQ_COUNTS.items():
        lines = _raw_text(SHARED / "bbq" / f"preds_{category}.jsonl").splitlines()
        examples = [json.loads(line) for line in lines if line.strip()]
        assert len(examples) == count
        raw.update({f"{category}-{ex['example_id']}": ex for ex in examples})
    rows = bbq.iloc[np.random.default_rng(0).choice(len(bbq), size=400, replace=False)]
    recomputed = 0
    for row in rows.itertuples():
        ex = raw[row.example_id]
        prediction = ex[f"unifiedqa-t5-11b_pred_{row.input_format}"]
        assert row.prediction == prediction
        assert row.question == ex["question"]
        assert row.label == f"ans{ex['label']}"
        hits = [i for i in range(3) if _norm(ex[f"ans{i}"]) == _norm(prediction)]
        if len(hits) == 1:
            assert row.correct == int(hits[0] == ex["label"])
            recomputed += 1
        groups = ex["additional_metadata"]["stereotyped_groups"]
        assert row.stereotyped_groups == ";".join(groups)
    assert recomputed >= 390


@needs_shared
def test_bbq_stereotyped_option_recomputed_from_the_raw_jsonl(bbq):
    chosen = bbq.drop_duplicates("example_id").set_index("example_id")
    relabelled = []
    for category in BBQ_COUNTS:
        lines = _raw_text(SHARED / "bbq" / f"preds_{category}.jsonl").splitlines()
        for ex in (json.loads(line) for line in lines if line.strip()):
            row = chosen.loc[f"{category}-{ex['example_id']}"]
            info = ex["answer_info"]
            groups = {g.lower() for g in ex["additional_metadata"]["stereotyped_groups"]}
            people = [k for k in ("ans0", "ans1", "ans2") if info[k][1] != "unknown"]
            assert len(people) == 2
            assert row["unknown_option"] not in people
            hits = [k for k in people if {info[k][0].lower(), info[k][1].lower()} & groups]
            if len(hits) == 1:
                assert row["stereotyped_option"] == hits[0], ex["example_id"]
                continue
            # Both people carry the same group label, or neither does: BBQ's metadata does
            # not say which is the target, so the example is left out (never guessed).
            relabelled.append((category, ex["question_index"]))
            assert row["stereotyped_option"] == "ambiguous", ex["example_id"]
    assert len(relabelled) == 36
    assert {c for c, _ in relabelled} == {"Physical_appearance"}
    assert {q for _, q in relabelled} == {"7", "8", "10", "18", "19"}


# ---------------------------------------------------------------------------- SSQA

@needs_shared
def test_ssqa_design_is_the_factor_table_unchanged():
    ours = pd.read_csv(SAMPLE / "ssqa_design.csv.gz", dtype=str, keep_default_na=False)
    theirs = pd.read_csv(SHARED / "ssqa" / "ssqa_factor_table.csv.gz", dtype=str,
                         keep_default_na=False)
    pd.testing.assert_frame_equal(ours, theirs)


def test_ssqa_design_reads_back_cleanly():
    design = pd.read_csv(SAMPLE / "ssqa_design.csv.gz")
    assert list(design.columns) == SSQA_COLUMNS
    assert len(design) == 20_720
    assert not design.isna().any().any()


def test_ssqa_simulated_structure(sim):
    design = pd.read_csv(SAMPLE / "ssqa_design.csv.gz")
    assert list(sim.columns) == SSQA_COLUMNS + ["model", "answer", "deviation", "sentiment",
                                                "data_origin"]
    assert len(sim) == 41_440
    assert not sim.isna().any().any()
    assert (sim["data_origin"] == "simulated").all()
    assert list(sim["model"].unique()) == ["sim-model-A", "sim-model-B"]
    for model in ("sim-model-A", "sim-model-B"):
        part = sim.loc[sim["model"] == model, SSQA_COLUMNS].reset_index(drop=True)
        pd.testing.assert_frame_equal(part, design)
    assert set(sim["answer"]) == {"yes", "no", "can't tell"}
    assert (sim["deviation"] == (sim["answer"] == sim["biased_answer"]).astype(int)).all()
    assert sim["sentiment"].between(-1, 1).all()


def test_ssqa_base_prompts_are_aliased_indicators(sim):
    base = sim["prompt_style"] == "base"
    assert base.sum() == 37 * 2 * 2
    for column, value in (("stigma", "no stigma"), ("pachankis_cluster", "no stigma"),
                          ("gender", "no gender")):
        assert ((sim[column] == value) == base).all(), column


def test_ssqa_effects_yaml_states_the_model(effects):
    assert effects["data_origin"] == "simulated"
    assert effects["seed"] == 20240101
    dev = effects["deviation"]
    assert dev["effects"]["cot"]["reference"] == "no"
    assert set(dev["effects"]["cot"]["effects"]) == {"yes"}  # strings, not YAML booleans
    betas = [b for block in dev["effects"].values() for b in block["effects"].values()]
    nonzero = [abs(b) for b in betas if b != 0]
    assert sum(b == 0 for b in betas) >= 2
    assert all(0.3 <= b <= 1.2 for b in nonzero)


def test_ssqa_simulated_rates_agree_with_the_stated_model(sim, effects):
    p = _sigmoid(_eta(sim, effects))
    for column in ("model", "cot", "prompt_style", "pachankis_cluster"):
        for value, idx in sim.groupby(column).groups.items():
            expected = p[sim.index.get_indexer(idx)]
            observed = sim.loc[idx, "deviation"].mean()
            se = np.sqrt((expected * (1 - expected)).sum()) / len(expected)
            assert abs(observed - expected.mean()) < 4 * se, (column, value)
    cant = effects["answer"]["p_cant_tell_when_not_deviating"]
    for model, q in cant.items():
        ok = sim[(sim["model"] == model) & (sim["deviation"] == 0)]
        share = (ok["answer"] == "can't tell").mean()
        assert abs(share - q) < 4 * np.sqrt(q * (1 - q) / len(ok)), model


def test_ssqa_sentiment_agrees_with_the_stated_shifts(sim, effects):
    spec = effects["sentiment"]
    mean = np.full(len(sim), float(spec["intercept"]))
    for factor, block in spec["shifts"].items():
        mean += sim[factor].map(block["shifts"]).fillna(0.0).to_numpy(float)
    for (model, cluster), part in sim.groupby(["model", "pachankis_cluster"]):
        expected = mean[sim.index.get_indexer(part.index)].mean()
        se = spec["noise_sd"] / np.sqrt(len(part))
        assert abs(part["sentiment"].mean() - expected) < 4 * se + 0.002, (model, cluster)


def test_ssqa_stated_effects_are_recovered_by_the_identifiable_fit(sim, effects):
    """Treatment-coded logistic regression on non-base rows recovers the stated effects."""
    dev = effects["deviation"]
    factors = list(dev["effects"])
    rows = sim[sim["prompt_style"] != "base"]
    cells = rows.groupby(factors)["deviation"].agg(["sum", "count"]).reset_index()
    names, columns = ["intercept"], [np.ones(len(cells))]
    truth = [dev["intercept"]]
    for factor in factors:
        for value, beta in dev["effects"][factor]["effects"].items():
            names.append(f"{factor}={value}")
            columns.append((cells[factor] == value).to_numpy(float))
            truth.append(beta)
    x = np.column_stack(columns)
    k, n = cells["sum"].to_numpy(float), cells["count"].to_numpy(float)
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        mu = _sigmoid(x @ beta)
        hessian = x.T @ (x * (n * mu * (1 - mu))[:, None])
        step = np.linalg.solve(hessian, x.T @ (k - n * mu))
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    se = np.sqrt(np.diag(np.linalg.inv(hessian)))
    z = (beta - np.array(truth)) / se
    assert np.abs(z).max() < 4, dict(zip(names, np.round(beta, 3), strict=True))


# ------------------------------------------------------------------- determinism

def test_readme_labels_the_simulated_file():
    readme = (SAMPLE / "README.md").read_text(encoding="utf-8")
    for name in OUTPUTS:
        assert name in readme, name
    for name in ("ssqa_simulated.csv.gz", "judged_simulated.csv.gz"):
        line = next(ln for ln in readme.splitlines() if name in ln)
        assert "SIMULATED" in line, name


@needs_shared
def test_rebuild_gives_identical_files(tmp_path):
    script = SAMPLE / "build_samples.py"
    subprocess.run([sys.executable, str(script), "--shared", str(SHARED), "--out",
                    str(tmp_path), "--quiet"], check=True, timeout=300)
    for name in OUTPUTS:
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), name
    for name in ("bbq_unifiedqa.csv.gz", "ssqa_simulated.csv.gz", "ssqa_design.csv.gz"):
        rebuilt = pd.read_csv(tmp_path / name)
        committed = pd.read_csv(SAMPLE / name)
        pd.testing.assert_frame_equal(rebuilt, committed)
    assert gzip.decompress((tmp_path / "ssqa_design.csv.gz").read_bytes()) == gzip.decompress(
        (SHARED / "ssqa" / "ssqa_factor_table.csv.gz").read_bytes())


def test_bundled_designs_declare_their_clusters(bbq, sim):
    """Rows of a template are correlated: the bundled designs name the template column as
    the cluster (BBQ: template_id, 150 templates, one category each; SSQA: template)."""
    from analysis.design import Design

    declared = {name: Design.load(SAMPLE / f"{name}.design.yaml").cluster
                for name in ("bbq_unifiedqa", "ssqa_simulated", "ssqa_design",
                             "judged_simulated")}
    assert declared == {"bbq_unifiedqa": "template_id", "ssqa_simulated": "template",
                        "ssqa_design": "template", "judged_simulated": "template"}
    assert bbq["template_id"].nunique() == 150
    assert bbq.groupby("template_id")["category"].nunique().max() == 1
    assert sim["template"].nunique() == 37


# -------------------------------------------------------------- judged (SIMULATED)

def test_judged_simulated_structure_and_stated_model():
    """3,200 judgments (2 models x 40 templates x 4 attributes x 5 judges x 2 samples),
    small, labelled simulated, and the stated model of the YAML: the judges' leniencies'
    variance is the stated judge variance, the mean P per model (realised) is within 4
    binomial SE of the observed rate, and the attribute effects within 4 SE."""
    frame = pd.read_csv(SAMPLE / "judged_simulated.csv.gz")
    effects = yaml.safe_load((SAMPLE / "judged_simulated_effects.yaml").read_text("utf-8"))
    assert (SAMPLE / "judged_simulated.csv.gz").stat().st_size < 300_000
    assert list(frame.columns) == ["model", "template", "attribute", "judge", "sample",
                                   "biased", "data_origin"]
    assert len(frame) == 3200 and not frame.isna().any().any()
    assert (frame["data_origin"] == "simulated").all() and effects["data_origin"] == "simulated"
    sizes = frame.nunique()
    assert sizes[["model", "template", "attribute", "judge", "sample"]].tolist() == [
        2, 40, 4, 5, 2]
    assert not frame.duplicated(["model", "template", "attribute", "judge", "sample"]).any()
    assert set(frame["biased"]) == {0, 1}
    spec = effects["biased"]
    leniency = list(spec["effects"]["judge"]["effects"].values())
    assert np.var(leniency, ddof=1) == pytest.approx(spec["random"]["judge"], abs=1e-12)
    for model, p in effects["realised"]["rate"].items():
        observed = frame.loc[frame["model"] == model, "biased"].mean()
        assert abs(observed - p) < 4 * np.sqrt(p * (1 - p) / 1600), model
    judge_rates = frame.groupby("judge")["biased"].mean()
    # the stated leniencies order the judges' rates (gaps of 0.03-0.05 vs SE 0.016)
    assert judge_rates["judge-5"] > judge_rates["judge-3"] > judge_rates["judge-1"]
    ref = frame.loc[frame["attribute"] == "person", "biased"].mean()
    for value, beta in spec["effects"]["attribute"]["effects"].items():
        diff = frame.loc[frame["attribute"] == value, "biased"].mean() - ref
        assert abs(diff - beta) < 4 * np.sqrt(2 * 0.25 / 800), value
