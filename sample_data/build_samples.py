"""Build the bundled sample files of bias-workbench from the shared benchmark data.

Usage (from anywhere)::

    python sample_data/build_samples.py                     # reads <repo>/../shared/data
    python sample_data/build_samples.py --shared PATH       # another copy of the data
    python sample_data/build_samples.py --out DIR           # write somewhere else

The script is deterministic: the same inputs give byte-identical outputs (gzip headers
carry no time stamp, the simulation uses ``numpy.random.default_rng(20240101)``).
Every file it writes is documented in ``sample_data/README.md``.

Outputs (in ``--out``, default ``<repo>/sample_data``):

- ``bbq_unifiedqa.csv.gz``: BBQ (6 categories) with the real UnifiedQA-T5-11B
  predictions, one row per (example, input format), predictions matched to options
  and classified (``analysis.importers.bbq``) as stereotyped / anti-stereotyped / unknown.
- ``bbq_unifiedqa_bias_scores.csv``: BBQ's own bias scores (s_DIS, s_AMB) per
  category x input format, computed from the file above (also printed).
- ``ssqa_design.csv.gz``: the SocialStigmaQA factor table, unchanged.
- ``ssqa_simulated.csv.gz``: SIMULATED answers of two fictional models on that design.
- ``ssqa_simulated_effects.yaml``: the stated effects the simulation draws from.
- ``judged_simulated.csv.gz``: a SIMULATED judged benchmark (templates x judges x samples
  per judgment) with known facet variances, for the design study ("one more judge or ten
  more templates?"); ``judged_simulated_effects.yaml``: its stated model.
- ``LICENSE-BBQ``: a copy of BBQ's licence (CC-BY-4.0).
"""

from __future__ import annotations

import argparse
import gzip
import io
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make the analysis package importable
    sys.path.insert(0, str(REPO))
DEFAULT_SHARED = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "sample_data"

# --------------------------------------------------------------------------- BBQ

BBQ_CATEGORIES: dict[str, int] = {
    "Age": 3680,
    "Disability_status": 1556,
    "Nationality": 3080,
    "Physical_appearance": 1576,
    "Religion": 1200,
    "Sexual_orientation": 864,
}
INPUT_FORMATS: tuple[str, ...] = ("race", "arc", "qonly")
PRED_COLUMN = "unifiedqa-t5-11b_pred_{}"
UNMATCHED = "unmatched"

#: Columns of the bundled sample: the importer's columns without ``model`` (one model).
BBQ_COLUMNS: tuple[str, ...] = (
    "example_id", "category", "subcategory", "question_index", "template_id",
    "question_polarity", "context_condition", "input_format", "stereotyped_groups",
    "context", "question", "ans0", "ans1", "ans2", "label", "stereotyped_option",
    "unknown_option", "prediction", "predicted_option", "match_method", "answer_type",
    "correct", "biased_answer",
)


def import_bbq(shared: Path):
    """The BBQ importer (``analysis.importers.bbq``) on the 6 categories' files, the
    prediction columns in the order race, arc, qonly."""
    from analysis.importers import import_results

    paths = [shared / "bbq" / f"preds_{category}.jsonl" for category in BBQ_CATEGORIES]
    # tests/data ships gzip-compressed copies (preds_<category>.jsonl.gz)
    paths = [p if p.is_file() else p.with_name(p.name + ".gz") for p in paths]
    return import_results("bbq", paths,
                          prediction_cols=[PRED_COLUMN.format(f) for f in INPUT_FORMATS])


def build_bbq(shared: Path) -> pd.DataFrame:
    """The BBQ x UnifiedQA results table: one row per (example, input format)."""
    return import_bbq(shared).frame[list(BBQ_COLUMNS)]


def bbq_bias_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """BBQ's bias scores per category x input format and over all 6 categories
    (``analysis.importers.bbq.bias_scores`` without the model column), 4 decimals."""
    from analysis.importers.bbq import bias_scores

    return bias_scores(frame).drop(columns="model").round(4)


# -------------------------------------------------------------------------- SSQA

SEED = 20240101
MODELS: tuple[str, ...] = ("sim-model-A", "sim-model-B")

#: The stated model of the simulation, written verbatim to ssqa_simulated_effects.yaml.
#: Single source of truth: the simulation below reads its numbers from here.
EFFECTS: dict[str, Any] = {
    "data_origin": "simulated",
    "description": (
        "SIMULATED outcomes of two fictional models (sim-model-A, sim-model-B) on the "
        "SocialStigmaQA design. Not real model output. Built by "
        "sample_data/build_samples.py with numpy.random.default_rng(20240101)."
    ),
    "seed": SEED,
    "models": list(MODELS),
    "deviation": {
        "link": "logit",
        "formula": ("logit P(deviation = 1) = intercept + sum over factors of effect[factor]"
                    "[value of the row]"),
        "rule": ("A value not listed under a factor's effects has effect 0: the reference "
                 "and the base-prompt values (prompt_style 'base', pachankis_cluster "
                 "'no stigma', gender 'no gender'), so a base prompt has the log-odds of an "
                 "'original' prompt in the reference cluster with a gender-neutral person."),
        "intercept": -1.2,
        "effects": {
            "model": {"reference": "sim-model-A", "effects": {"sim-model-B": 0.6}},
            "cot": {"reference": "no", "effects": {"yes": -0.5}},
            "prompt_style": {"reference": "original",
                             "effects": {"positive": -0.7, "doubt": 0.5}},
            "pachankis_cluster": {"reference": "Innocuous Persistent",
                                  "effects": {"Awkward": 0.5, "Threatening": 1.1,
                                              "Unappealing Persistent": 0.8,
                                              "Sociodemographic": 0.0}},
            "gender": {"reference": "gender neutral",
                       "effects": {"female": 0.3, "male": 0.0}},
        },
    },
    "identifiable_specification": {
        "rows": "prompt_style != 'base' (drop the 74 x 2 base prompts)",
        "formula": "deviation ~ model + cot + prompt_style + pachankis_cluster + gender",
        "coding": "treatment coding against the references above",
        "coefficients": ("the intercept and effects above are the true coefficients of this "
                         "logistic regression"),
        "why": ("In SSQA prompt_style == 'base' <=> stigma == 'no stigma' <=> "
                "pachankis_cluster == 'no stigma' <=> gender == 'no gender', so the three "
                "base indicators are aliased; without the base rows every effect is "
                "estimable."),
    },
    "answer": {
        "rule": ("deviation 1 -> answer = biased_answer; deviation 0 -> \"can't tell\" with "
                 "the probability below, else the other of yes/no"),
        "p_cant_tell_when_not_deviating": {"sim-model-A": 0.15, "sim-model-B": 0.3},
    },
    "sentiment": {
        "formula": ("sentiment = clip(intercept + shift[model] + shift[pachankis_cluster] + "
                    "normal(0, noise_sd), -1, 1), rounded to 4 decimals"),
        "rule": "unlisted values (references, 'no stigma') have shift 0",
        "intercept": 0.1,
        "noise_sd": 0.2,
        "shifts": {
            "model": {"reference": "sim-model-A", "shifts": {"sim-model-B": -0.05}},
            "pachankis_cluster": {"reference": "Innocuous Persistent",
                                  "shifts": {"Awkward": -0.1, "Threatening": -0.35,
                                             "Unappealing Persistent": -0.2,
                                             "Sociodemographic": 0.0}},
        },
    },
    "draws": ("one generator, three vectors over the 41,440 output rows in file order "
              "(sim-model-A's 20,720 rows, then sim-model-B's): rng.random(n) for deviation "
              "(1 if below P), rng.random(n) for the answer among non-deviating rows, "
              "rng.normal(0, noise_sd, n) for sentiment"),
}

SSQA_SIM_COLUMNS_EXTRA: tuple[str, ...] = ("model", "answer", "deviation", "sentiment",
                                           "data_origin")


def raw_bytes(path: Path) -> bytes:
    """``path``, or its gzip-compressed copy ``path.gz`` (tests/data ships those)."""
    if path.is_file():
        return path.read_bytes()
    return gzip.decompress(path.with_name(path.name + ".gz").read_bytes())


def read_ssqa_design(shared: Path) -> pd.DataFrame:
    """The SSQA factor table with every column as written in the file (strings)."""
    return pd.read_csv(io.BytesIO(raw_bytes(shared / "ssqa" / "ssqa_factor_table.csv")),
                       dtype=str, keep_default_na=False)


def linear_predictor(frame: pd.DataFrame, spec: dict[str, Any]) -> np.ndarray:
    """``intercept + sum of effects`` per row, for the ``deviation`` or ``sentiment`` spec."""
    key, inner = ("effects", "effects") if "effects" in spec else ("shifts", "shifts")
    eta = np.full(len(frame), float(spec["intercept"]))
    for factor, block in spec[key].items():
        eta += frame[factor].map(block[inner]).fillna(0.0).to_numpy(dtype=float)
    return eta


def build_ssqa_simulated(design: pd.DataFrame) -> pd.DataFrame:
    """The simulated results table: the design once per model, outcomes drawn from EFFECTS."""
    frame = pd.concat([design.assign(model=m) for m in MODELS], ignore_index=True)
    n = len(frame)
    rng = np.random.default_rng(SEED)
    u_dev = rng.random(n)
    u_ans = rng.random(n)
    noise = rng.normal(0.0, EFFECTS["sentiment"]["noise_sd"], n)

    p = 1.0 / (1.0 + np.exp(-linear_predictor(frame, EFFECTS["deviation"])))
    deviation = (u_dev < p).astype(int)
    p_cant = frame["model"].map(EFFECTS["answer"]["p_cant_tell_when_not_deviating"]).to_numpy()
    biased = frame["biased_answer"].to_numpy()
    other = np.where(biased == "yes", "no", "yes")
    answer = np.where(deviation == 1, biased, np.where(u_ans < p_cant, "can't tell", other))

    mean = linear_predictor(frame, EFFECTS["sentiment"])
    sentiment = np.round(np.clip(mean + noise, -1.0, 1.0), 4) + 0.0  # + 0.0: no "-0.0"

    frame["answer"] = answer
    frame["deviation"] = deviation
    frame["sentiment"] = sentiment
    frame["data_origin"] = "simulated"
    return frame[[*design.columns, *SSQA_SIM_COLUMNS_EXTRA]]


# ------------------------------------------------------------------ judged (SIMULATED)

JUDGED_SEED = 20260401
JUDGED_TEMPLATES = 40
JUDGED_JUDGES = 5
JUDGED_SAMPLES = 2
JUDGED_ATTRIBUTES: tuple[str, ...] = ("man", "non-binary person", "person", "woman")

#: The stated model of the judged simulation, written to judged_simulated_effects.yaml
#: (with the drawn effects' realised variances added by :func:`build_judged_simulated`).
JUDGED_EFFECTS: dict[str, Any] = {
    "data_origin": "simulated",
    "description": (
        "SIMULATED judged benchmark: two fictional models (sim-model-A, sim-model-B) answer "
        f"{JUDGED_TEMPLATES} fictional templates x {len(JUDGED_ATTRIBUTES)} attribute "
        f"values; {JUDGED_JUDGES} fictional judges score each answer {JUDGED_SAMPLES} times "
        "(samples per judgment). Not real model or judge output. Built by "
        f"sample_data/build_samples.py with numpy.random.default_rng({JUDGED_SEED})."),
    "seed": JUDGED_SEED,
    "models": list(MODELS),
    "design": {"template": JUDGED_TEMPLATES, "attribute": list(JUDGED_ATTRIBUTES),
               "judge": JUDGED_JUDGES, "sample": JUDGED_SAMPLES,
               "rows": 2 * JUDGED_TEMPLATES * len(JUDGED_ATTRIBUTES) * JUDGED_JUDGES
               * JUDGED_SAMPLES},
    "biased": {
        "link": "identity (a linear probability model: the scale of the deviation rate)",
        "formula": ("P(biased = 1) = intercept + model[m] + attribute[a] + u_template[t] + "
                    "v_template_x_model[t, m] + judge[j], clipped to [0.02, 0.98]; every "
                    "judgment (row) an independent Bernoulli draw given these"),
        "intercept": 0.30,
        "effects": {
            "model": {"reference": "sim-model-A", "effects": {"sim-model-B": 0.08}},
            "attribute": {"reference": "person",
                          "effects": {"man": 0.0, "woman": 0.05, "non-binary person": 0.10}},
            # the five judges' leniencies, stated (not drawn): their variance (ddof 1) is
            # the judge variance under random
            "judge": {"reference": "judge-3",
                      "effects": {"judge-1": -0.08, "judge-2": -0.03, "judge-3": 0.0,
                                  "judge-4": 0.03, "judge-5": 0.08}},
        },
        "random": {  # true variances on the probability scale
            "template": 0.010,
            "template x model": 0.0025,
            "judge": 0.00365,
            "judge x model": 0.0,
            "sample": 0.0,
            "sample x model": 0.0,
        },
        "residual": ("Bernoulli: p (1 - p) of each row; its mean over the design is "
                     "written under realised.residual"),
    },
    "draws": ("one generator: rng.normal for the 40 template effects, the 40 x 2 "
              "template x model effects (model-major order: sim-model-A's 40, then "
              "sim-model-B's), then rng.random(n) over the rows in "
              "file order (model, template, attribute, judge, sample: the last varies "
              "fastest); biased = 1 where below P"),
}


def build_judged_simulated() -> tuple[pd.DataFrame, dict[str, Any]]:
    """The simulated judged table and its stated model (with the realised variances)."""
    spec = JUDGED_EFFECTS["biased"]
    rng = np.random.default_rng(JUDGED_SEED)
    sd = {k: float(np.sqrt(v)) for k, v in spec["random"].items()}
    leniency = list(spec["effects"]["judge"]["effects"].values())
    assert abs(np.var(leniency, ddof=1) - spec["random"]["judge"]) < 1e-12
    n_t, n_m = JUDGED_TEMPLATES, len(MODELS)
    u = rng.normal(0.0, sd["template"], n_t)
    v = rng.normal(0.0, sd["template x model"], (n_m, n_t))
    index = pd.MultiIndex.from_product(
        [range(n_m), range(n_t), range(len(JUDGED_ATTRIBUTES)), range(JUDGED_JUDGES),
         range(JUDGED_SAMPLES)], names=["m", "t", "a", "j", "s"]).to_frame(index=False)
    m, t, j = (index[c].to_numpy() for c in ("m", "t", "j"))
    frame = pd.DataFrame({
        "model": np.asarray(MODELS)[m],
        "template": [f"T{k + 1:02d}" for k in t],
        "attribute": np.asarray(JUDGED_ATTRIBUTES)[index["a"].to_numpy()],
        "judge": [f"judge-{k + 1}" for k in j],
        "sample": index["s"].to_numpy() + 1,
    })
    fixed = np.full(len(frame), float(spec["intercept"]))
    for factor, block in spec["effects"].items():
        fixed += frame[factor].map(block["effects"]).fillna(0.0).to_numpy(dtype=float)
    raw = fixed + u[t] + v[m, t]
    p = np.clip(raw, 0.02, 0.98)
    frame["biased"] = (rng.random(len(frame)) < p).astype(int)
    frame["data_origin"] = "simulated"
    effects = {**JUDGED_EFFECTS, "realised": {
        "note": ("the variances of the effects actually drawn (ddof 1), beside the "
                 "stated ones under biased.random; a G-study of this table estimates these"),
        "template": round(float(np.var(u, ddof=1)), 6),
        "template x model": round(float(np.var(v, ddof=1)), 6),
        "residual": round(float(np.mean(p * (1 - p))), 6),
        "clipped_rows": int(np.sum(p != raw)),
        "rate": {mm: round(float(p[m == k].mean()), 6) for k, mm in enumerate(MODELS)},
    }}
    return frame, effects


# ------------------------------------------------------------------------ output

def csv_gz_bytes(frame: pd.DataFrame, float_format: str | None = None) -> bytes:
    """CSV text (UTF-8, "\\n" line ends) gzip-compressed without a time stamp."""
    text = frame.to_csv(index=False, lineterminator="\n", float_format=float_format)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def write(path: Path, data: bytes, quiet: bool) -> None:
    path.write_bytes(data)
    if not quiet:
        print(f"wrote {path} ({len(data):,} bytes)")


def build(shared: Path, out: Path, quiet: bool = False) -> dict[str, Any]:
    """Write every sample file to ``out``; return summary numbers (also printed)."""
    if not shared.is_dir():
        raise SystemExit(f"error: shared data folder not found: {shared} (use --shared)")
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}

    # BBQ
    bbq = build_bbq(shared)
    write(out / "bbq_unifiedqa.csv.gz", csv_gz_bytes(bbq), quiet)
    scores = bbq_bias_scores(bbq)
    scores_text = scores.to_csv(index=False, lineterminator="\n", float_format="%.4f")
    write(out / "bbq_unifiedqa_bias_scores.csv", scores_text.encode("utf-8"), quiet)
    shutil.copyfile(shared / "bbq" / "LICENSE", out / "LICENSE-BBQ")
    if not quiet:
        print(f"wrote {out / 'LICENSE-BBQ'} (copy of bbq/LICENSE)")
    unmatched = int((bbq["answer_type"] == UNMATCHED).sum())
    summary["bbq_rows"] = len(bbq)
    summary["bbq_unmatched"] = unmatched
    summary["bbq_unmatched_share"] = unmatched / len(bbq)

    # SSQA
    design_bytes = raw_bytes(shared / "ssqa" / "ssqa_factor_table.csv")
    write(out / "ssqa_design.csv.gz", gzip.compress(design_bytes, compresslevel=9, mtime=0),
          quiet)
    design = read_ssqa_design(shared)
    sim = build_ssqa_simulated(design)
    write(out / "ssqa_simulated.csv.gz", csv_gz_bytes(sim, float_format="%.4f"), quiet)
    header = ("# SIMULATED: the stated model behind sample_data/ssqa_simulated.csv.gz.\n"
              "# Generated by sample_data/build_samples.py; edit EFFECTS there, not here.\n")
    effects_text = header + yaml.safe_dump(EFFECTS, sort_keys=False, allow_unicode=True,
                                           width=88)
    write(out / "ssqa_simulated_effects.yaml", effects_text.encode("utf-8"), quiet)

    # judged (SIMULATED)
    judged, judged_effects = build_judged_simulated()
    write(out / "judged_simulated.csv.gz", csv_gz_bytes(judged), quiet)
    header = ("# SIMULATED: the stated model behind sample_data/judged_simulated.csv.gz.\n"
              "# Generated by sample_data/build_samples.py; edit JUDGED_EFFECTS there.\n")
    text = header + yaml.safe_dump(judged_effects, sort_keys=False, allow_unicode=True,
                                   width=88)
    write(out / "judged_simulated_effects.yaml", text.encode("utf-8"), quiet)
    summary["judged_rows"] = len(judged)

    if not quiet:
        print()
        print(f"BBQ rows: {len(bbq):,}; per category (rows / 3):")
        for cat, n in bbq.groupby("category", sort=False).size().items():
            print(f"  {cat:<20} {n // 3:>6,}")
        print(f"unmatched predictions: {unmatched} of {len(bbq):,} "
              f"({100 * unmatched / len(bbq):.4f}%)")
        print("match methods:", bbq["match_method"].value_counts().to_dict())
        print("answer types:", bbq["answer_type"].value_counts().to_dict())
        print()
        print("BBQ bias scores of UnifiedQA-T5-11B (x 100 in the BBQ paper):")
        with pd.option_context("display.width", 160, "display.max_columns", 20):
            print(scores.to_string(index=False))
        print()
        rates = sim.groupby("model")["deviation"].mean().round(4).to_dict()
        print(f"SSQA simulated rows: {len(sim):,}; deviation rate per model: {rates}")
        clipped = int((sim["sentiment"].abs() >= 1.0).sum())
        print(f"sentiment values clipped at -1 or 1: {clipped}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED,
                        help=f"the shared data folder (default: {DEFAULT_SHARED})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write the samples (default: {DEFAULT_OUT})")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    build(args.shared.resolve(), args.out.resolve(), quiet=args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
