"""Cohorts' default category and refusals (issue 42: "Cohorts opens on the 48 prompt texts as
categories; 20 REFUSED answers count as not biased with no note"), in the API, the CLI
and the page (``analysis/cohort_inputs.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import api
from analysis.cohort_inputs import apply_refusals, category_candidates, is_refusal
from analysis.design import suggest_design
from analysis.options import OptionError
from tests.analysis.results_tables import TEMPLATES, results_table

N_REFUSED = 20
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """Issue 42's table on two templates (48 prompt texts: few enough to be offered as
    categories) with 20 answers REFUSED (their 0/1 ``biased`` is 0)."""
    t = results_table()
    t = t[t["template"].isin(list(TEMPLATES)[:2])].reset_index(drop=True)
    idx = np.random.default_rng(5).choice(len(t), N_REFUSED, replace=False)
    t.loc[idx, "response"] = "REFUSED"
    t.loc[idx, "biased"] = 0
    return t


@pytest.fixture(scope="module")
def design(table):
    return suggest_design(table)


def test_the_fixture_has_48_prompt_texts(table):
    assert table["prompt"].nunique() == 48 and (table["response"] == "REFUSED").sum() == 20


def test_the_default_category_is_an_answer_not_the_prompt_text(table, design):
    order = category_candidates(table, design.names, design.prompt_unit_columns())
    assert order[0] == "response"
    # the prompt's own texts (fixed by the prompt) come after every column that varies
    assert order.index("prompt") > order.index("biased")
    assert order.index("question") > order.index("biased")
    result = api.cohorts(table, design, cohort="model")
    assert result.settings["category"] == "response"
    assert any("No category given: the categorical outcome is 'response'" in n
               for n in result.notes)


def test_refusals_as_their_own_category_are_counted_and_said(table, design):
    result = api.cohorts(table, design, category="response", cohort="model")
    wide = result.tables["percentages"].set_index("model")
    expected = pd.crosstab(table["model"], table["response"], normalize="index") * 100
    for model in expected.index:
        assert wide.loc[model, "REFUSED"] == pytest.approx(expected.loc[model, "REFUSED"])
        assert wide.loc[model, "n"] == (table["model"] == model).sum()
    (note,) = [n for n in result.notes if "refusals" in n]
    assert note.startswith(f"{N_REFUSED} of {len(table)} answers are refusals ('REFUSED' in "
                           "response): counted as a category of their own")


def test_refusals_left_out_leave_n_and_shares_to_the_other_answers(table, design):
    result = api.cohorts(table, design, category="response", cohort="model",
                         refusals="leave_out")
    wide = result.tables["percentages"].set_index("model")
    kept = table[table["response"] != "REFUSED"]
    expected = pd.crosstab(kept["model"], kept["response"], normalize="index") * 100
    assert "REFUSED" not in wide.columns
    assert int(wide["n"].sum()) == len(table) - N_REFUSED
    for model in expected.index:
        for answer in expected.columns:
            assert wide.loc[model, answer] == pytest.approx(expected.loc[model, answer])
    assert result.settings["refusals"] == "leave_out"
    assert any("left out (refusals=leave_out)" in n for n in result.notes)


def test_refusals_under_a_0_1_category_are_named_not_silently_not_biased(table, design):
    result = api.cohorts(table, design, category="biased", cohort="model")
    (note,) = [n for n in result.notes if "refusals" in n]
    assert f"counted under the category their rows have (biased = 0: {N_REFUSED})" in note
    assert "although a refusal is neither" in note
    out = api.cohorts(table, design, category="biased", cohort="model", refusals="leave_out")
    assert int(out.tables["percentages"]["n"].sum()) == len(table) - N_REFUSED
    # the test counts the same rows: its n is the kept answers
    assert int(out.tables["homogeneity"]["n"].sum()) == len(table) - N_REFUSED


@pytest.mark.parametrize("value, expected", [
    ("REFUSED", True), ("refusal", True), ("Declined.", True), ("No answer", True),
    ("I cannot answer that.", True), ("I'm sorry, but I can't help with that.", True),
    ("No, I would not.", False), ("Refused entry to the club", False), ("unknown", False),
    (0, False), (None, False)])
def test_what_reads_as_a_refusal(value, expected):
    assert is_refusal(value) is expected


def test_an_unknown_refusal_mode_is_refused(table):
    with pytest.raises(OptionError, match="refusals='drop': use one of count, leave_out"):
        apply_refusals(table, "response", "drop")


def test_no_refusal_no_note():
    frame = pd.DataFrame({"answer": ["a", "b", "a"], "model": ["x", "y", "x"]})
    out, note = apply_refusals(frame, "answer")
    assert note is None and out is frame


def test_cli_says_how_refusals_are_counted_and_leaves_them_out(table, tmp_path):
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    base = [sys.executable, "-m", "analysis", "cohorts", str(path), "--category", "response",
            "--cohort", "model", "--json"]
    counted = subprocess.run(base, capture_output=True, text=True, timeout=300, env=ENV)
    assert counted.returncode == 0, counted.stderr
    assert "counted as a category of their own" in counted.stderr
    assert "Leave them out with --refusals leave_out" in counted.stderr
    left = subprocess.run([*base, "--refusals", "leave_out"], capture_output=True, text=True,
                          timeout=300, env=ENV)
    payload = json.loads(left.stdout)
    assert payload["settings"]["refusals"] == "leave_out"
    assert sum(r["n"] for r in payload["percentages"]) == len(table) - N_REFUSED


def test_chosen_categories_naming_the_refusals_are_kept_without_them(table, design):
    every = ["Yes, I would say so.", "No, I would not.", "REFUSED"]
    out = api.cohorts(table, design, category="response", cohort="model", categories=every,
                      refusals="leave_out")
    assert [c for c in out.tables["percentages"].columns if c in every] == every[:2]


def test_the_report_section_says_how_refusals_count(table, design):
    from analysis.report import Section, _cohorts

    sec = Section("cohorts")
    settings = {"category": "response", "cohort": "model", "by": [], "categories": None,
                "renormalise": False, "method": "chi2", "n_resamples": 99, "seed": 0,
                "refusals": "leave_out", "where": {}}
    from analysis.design import apply_design

    _cohorts(sec, apply_design(table, design), design, settings)
    assert any("left out (refusals=leave_out)" in w for w in sec.warnings)
    wide = dict(sec.tables)["cohorts_percentages"]
    assert int(wide["n"].sum()) == len(table) - N_REFUSED


def test_columns_fixed_by_the_prompt_agree_with_groupby_nunique_past_the_prefix():
    """``_fixed_by`` (each row against its prompt's first row, a prefix first) says what
    a per-prompt ``nunique`` (missing counted as a value) says, also for a column broken
    only after the first rows and for missing values."""

    from analysis.cohort_inputs import _PREFIX, _fixed_by

    rng = np.random.default_rng(3)
    n = 3 * _PREFIX
    u = rng.integers(0, 40, n)
    late = np.array(["a", "b"] * 20)[u].astype(object)
    late[-1] = "other" if late[-1] == "a" else "a"  # broken in the last row only
    table = pd.DataFrame({
        "u": u,
        "fixed": pd.array(np.array([f"t{i}" for i in range(40)])[u], dtype="str"),
        "fixed_missing": pd.array(np.where(u < 5, None, "z").astype(object), dtype="str"),
        "late": pd.array(late, dtype="str"),
        "cat": pd.Categorical(np.where(u % 2 == 0, "even", "odd")),
        "free": pd.array(rng.choice(["p", "q"], n), dtype="str"),
        "missing_sometimes": pd.array(np.where(rng.random(n) < 0.01, None, "w").astype(object),
                                      dtype="str"),
    })
    columns = [c for c in table.columns if c != "u"]
    by_nunique = {c for c in columns
                  if pd.Series(pd.factorize(table[c])[0]).groupby(u).nunique().max() <= 1}
    assert by_nunique == {"fixed", "fixed_missing", "cat"}
    assert _fixed_by(table, columns, ["u"]) == by_nunique


def _candidates_by_definition(table, factors, unit, max_categories=50):
    """``category_candidates`` as written before issue 44 item 3: ``nunique`` per column,
    the prompts by ``groupby().ngroup()`` of the unit's category codes, fixed columns by a
    per-prompt ``nunique`` (missing a value of its own)."""
    import re

    from analysis.cohort_inputs import _CATEGORY_WORDS

    counts = {str(c): int(table[c].nunique(dropna=True)) for c in table.columns
              if table[c].dtype.kind != "f"}
    counts = {c: k for c, k in counts.items() if 2 <= k <= max_categories}
    unit = [u for u in unit if u in table.columns]
    codes = table[unit].astype("category").apply(lambda s: s.cat.codes)
    groups = codes.groupby(unit, sort=False, observed=True).ngroup().to_numpy() if unit \
        else np.arange(len(table))
    fixed = set() if groups.max() + 1 == len(table) else {
        c for c in counts if c not in unit and c not in factors
        and pd.Series(pd.factorize(table[c], use_na_sentinel=False)[0])
        .groupby(groups).nunique().max() <= 1}

    def rank(c):
        tokens = re.split(r"[^a-z0-9]+", c.lower())
        words = [i for i, w in enumerate(_CATEGORY_WORDS) if any(t.startswith(w)
                                                                  for t in tokens)]
        return (c in fixed or c in unit, c in factors, min(words, default=len(_CATEGORY_WORDS)),
                -counts[c])

    return sorted(counts, key=rank)


@pytest.mark.parametrize("seed", range(4))
def test_candidates_from_one_pass_of_codes_are_those_of_the_definition(seed):
    """The candidates and their order (the prefix checks and the fixed-by-prompt test by
    first rows) are those of ``nunique`` and a per-prompt ``groupby``, with a unit of two
    columns with missing values, categorical and text columns, a column broken in its
    last row and one over the limit."""
    rng = np.random.default_rng(seed)
    n = 20_000
    t = rng.integers(0, 30, n)
    f = rng.integers(0, 3, n)
    broken = np.array([f"b{i % 4}" for i in t], dtype=object)
    broken[-1] = "b9"
    table = pd.DataFrame({
        "template": pd.array(np.where(t == 3, None, t.astype(str)).astype(object),
                             dtype="str"),
        "format": pd.Categorical(np.array(["x", "y", "z"])[f]),
        "prompt_type": pd.array([f"p{i % 5}" for i in t], dtype="str"),  # fixed
        "answer_type": pd.array(rng.choice(["a", "b", None], n).tolist(), dtype="str"),
        "group": pd.Categorical(rng.choice(["g1", "g2", "g3"], n)),
        "broken_label": pd.array(broken.tolist(), dtype="str"),
        "many": pd.array((rng.integers(0, 80, n)).astype(str).tolist(), dtype="str"),
        "count": rng.integers(0, 4, n),
        "score": rng.random(n),
        # a categorical with an unused category and missing rows (counted from its codes)
        "level": pd.Categorical(np.where(t % 7 == 0, None, np.array(["lo", "hi"])[t % 2]),
                                categories=["lo", "mid", "hi"]),
    })
    for factors, unit in ((["format"], ["template", "format"]), ([], ["template"]),
                          (["group"], []), (["format"], ["level", "format"])):
        assert category_candidates(table, factors, unit) == \
            _candidates_by_definition(table, factors, unit), (factors, unit)
