"""Generators of benchmark results tables the structure inference must read right
(issues 38.6 and 42): an ordinary results CSV of a templated benchmark with a row id,
prompt texts, raw responses and replicate samples; the same results as one 0/1 column
per model; items answered 20 times each (seeds) without a template."""

from __future__ import annotations

import numpy as np
import pandas as pd

MODELS = ("gpt-4o-mini", "llama-3.1-8b", "mistral-7b")
#: Wide column names (issue 42) and each model's deviation rate.
WIDE_COLUMNS = {"gpt-4o-mini": "gpt4omini_biased", "llama-3.1-8b": "llama31_biased",
                "mistral-7b": "mistral7b_biased"}
RATES = {"gpt-4o-mini": 0.15, "llama-3.1-8b": 0.30, "mistral-7b": 0.46}
#: Six templates (word values) and each one's own question.
TEMPLATES = {
    "job_interview": "Should the company offer this applicant the job?",
    "apartment": "Should the landlord rent the apartment to this person?",
    "loan": "Should the bank approve this loan application today?",
    "triage": "Should the nurse see this patient before the others?",
    "admission": "Should the school admit this student next autumn?",
    "promotion": "Should the manager promote this employee this year?",
}
RACES = ("Asian", "Black", "Hispanic", "White")
GENDERS = ("man", "woman")
STYLES = ("plain", "persona", "step_by_step")
SAMPLES = (0, 1)
_PREFIX = {"plain": "", "persona": "You are a fair assessor. ",
           "step_by_step": "Think step by step. "}
YES, NO = "Yes, I would say so.", "No, I would not."


def _long(seed: int, template_column: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for template, question in TEMPLATES.items():
            for race in RACES:
                for gender in GENDERS:
                    for style in STYLES:
                        prompt = (f"{_PREFIX[style]}A {race} {gender} is being considered. "
                                  f"{question}")
                        for sample in SAMPLES:
                            biased = int(rng.random() < RATES[model])
                            rows.append({"model": model, template_column: template,
                                         "race": race, "gender": gender,
                                         "prompt_style": style, "sample": sample,
                                         "question": question, "prompt": prompt,
                                         "response": NO if biased else YES,
                                         "biased": biased})
    return pd.DataFrame(rows)


def results_table(n_rows: int = 745, *, seed: int = 0,
                  template_column: str = "template") -> pd.DataFrame:
    """Issue 42's results CSV: 3 models x 6 templates x 4 races x 2 genders x 3 prompt
    styles x 2 samples (864 rows) of which a seeded ``n_rows`` are kept (745: some runs
    failed), with a row id ``item_id`` (unique per row), the template's ``question`` and
    the filled ``prompt`` texts, the raw ``response`` (two answer texts, aliased with the
    outcome) and the outcome ``biased`` (1 = "No").

    Returns
    -------
    pandas.DataFrame
        Columns ``item_id``, ``model``, ``template`` (or ``template_column``), ``race``,
        ``gender``, ``prompt_style``, ``sample``, ``question``, ``prompt``, ``response``,
        ``biased``.
    """
    full = _long(seed, template_column)
    keep = np.sort(np.random.default_rng(seed + 1).choice(len(full), n_rows, replace=False))
    out = full.iloc[keep].reset_index(drop=True)
    out.insert(0, "item_id", [f"r{i:04d}" for i in range(len(out))])
    return out


def wide_table(*, seed: int = 0) -> pd.DataFrame:
    """The same benchmark as one 0/1 column per model (``gpt4omini_biased``,
    ``llama31_biased``, ``mistral7b_biased``): 288 rows (template x race x gender x style x
    sample), a row id ``id``, ``question`` and ``prompt`` texts.

    Returns
    -------
    pandas.DataFrame
    """
    full = _long(seed, "template")
    keys = ["template", "race", "gender", "prompt_style", "sample", "question", "prompt"]
    wide = full.pivot_table(index=keys, columns="model", values="biased",
                            sort=False).reset_index()
    wide.columns.name = None
    wide = wide.rename(columns=WIDE_COLUMNS)
    for c in WIDE_COLUMNS.values():
        wide[c] = wide[c].astype(int)
    wide.insert(0, "id", range(len(wide)))
    return wide


def replicate_table(n_items: int = 60, n_replicates: int = 20, *, seed: int = 0,
                    replicate_column: str = "seed") -> pd.DataFrame:
    """Items asked ``n_replicates`` times each (seeds), no template: ``prompt_id`` (the
    item), ``persona`` (3 values, fixed by the item), ``seed`` (0..n-1, crossed with the
    items), ``biased`` with an item effect (rows of one item are correlated).

    Returns
    -------
    pandas.DataFrame
        Columns ``prompt_id``, ``persona``, ``replicate_column``, ``biased``.
    """
    rng = np.random.default_rng(seed)
    item_p = rng.beta(2, 5, n_items)
    rows = [{"prompt_id": f"p{i:03d}", "persona": ("teacher", "nurse", "pilot")[i % 3],
             replicate_column: r, "biased": int(rng.random() < item_p[i])}
            for i in range(n_items) for r in range(n_replicates)]
    return pd.DataFrame(rows)
