"""The prompt unit: counts, refusals and the unit that pairs (analysis/prompt_unit.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

import analysis.api as bw
from analysis.design import Design, Factor
from analysis.errors import PairingError, PromptUnitError
from analysis.prompt_unit import check_prompt_unit, did_you_mean, pairing_unit

PROMPT = ["template", "race", "gender", "style", "sample"]


def _results(drop: float = 0.0) -> pd.DataFrame:
    """The issue's second benchmark: 3 models x 6 templates x 4 races x 2 genders x 3
    styles x 2 samples, a row id, the prompt text and the raw response."""
    rng = np.random.default_rng(42)
    rate = {"gpt4omini": 0.2, "llama31": 0.5, "mistral7b": 0.35}
    rows = []
    for i, (m, t, r, g, s, k) in enumerate(itertools.product(
            rate, range(6), ["white", "black", "asian", "hispanic"], ["female", "male"],
            ["plain", "polite", "terse"], [0, 1])):
        b = int(rng.random() < rate[m])
        rows.append({"item_id": i + 1, "model": m, "template": f"tpl{t}", "race": r,
                     "gender": g, "style": s, "sample": k,
                     "prompt": f"Template {t}: a {r} {g} person asks ({s})",
                     "response": "the person is lazy" if b else "cannot be determined",
                     "biased": b})
    frame = pd.DataFrame(rows)
    return frame.sample(frac=1 - drop, random_state=1).sort_index() if drop else frame


def _design() -> Design:
    f = _results()
    kinds = {"model": "model", "template": "prompt", "race": "domain", "gender": "domain",
             "style": "prompt"}
    return Design(factors=tuple(Factor(n, k, tuple(sorted(f[n].unique())),
                                       sorted(f[n].unique())[0]) for n, k in kinds.items()))


def test_the_unit_that_pairs_is_the_prompt_factors_and_the_replicate():
    frame = _results(drop=119 / 864)
    # the design's factors first; the replicate index added; never the row id, the prompt
    # text (equivalent but longer) or the response (it differs between models)
    assert pairing_unit(frame, _design(), "model") == PROMPT
    # without a design: the fewest columns, the prompt text standing for the four factors
    assert pairing_unit(frame, None, "model") == ["sample", "prompt"]
    assert pairing_unit(frame.drop(columns=["sample"]), _design(), "model") is None  # dups


def test_counts_of_a_unit():
    frame = _results()
    s = check_prompt_unit(frame, PROMPT, _design())
    assert (s.n_prompts, s.n_rows, s.missing) == (6 * 4 * 2 * 3 * 2, 864, 0)
    assert s.rows_per_prompt == 3.0 and s.describe() == "288 prompts in 864 rows (3.0 rows each)"
    frame.loc[:9, "sample"] = None
    s = check_prompt_unit(frame, PROMPT, _design())
    assert s.missing == 10 and s.n_prompts == 288  # the other two models keep each prompt


def test_each_bad_unit_has_its_message_and_the_pairing_unit():
    frame, design = _results(), _design()
    with pytest.raises(PromptUnitError, match=r"lacks: 'templat' \(did you mean 'template'\?\)"):
        check_prompt_unit(frame, ["templat"], design)
    with pytest.raises(PromptUnitError, match="makes every row its own prompt "
                       r"\(864 prompts in 864 rows\)") as every:
        check_prompt_unit(frame, ["item_id"], design, by="model")
    assert every.value.suggested_unit == PROMPT
    assert "the rows pair on template x race x gender x style x sample: use it" in \
        str(every.value)
    with pytest.raises(PromptUnitError, match="template does not identify prompts: the "
                       "domain factor 'race' takes several values within one of them "
                       r"\(template = tpl0: asian, black, hispanic, white\)"):
        check_prompt_unit(frame, ["template"], design)
    # one model only: a row id may be the prompt (nothing has to repeat)
    one = frame[frame["model"] == "llama31"]
    assert check_prompt_unit(one, ["item_id"], design).n_prompts == 288


def test_compare_explains_a_failed_pairing_and_pairs_on_the_unit_it_names():
    frame = _results(drop=119 / 864)
    # the inferred unit is the prompt text (the replicate index `sample` averaged, a note)
    inferred = bw.compare(frame, by="model", unit=None)
    assert inferred.settings["unit"] == ["prompt"]
    with pytest.raises(PairingError, match="makes every row its own prompt") as failed:
        bw.compare(frame, by="model", unit=["item_id"])  # the row id, as named by a user
    assert failed.value.suggested_unit == PROMPT
    r = bw.compare(frame, by="model", unit=failed.value.suggested_unit)
    row = r.table.iloc[0]
    # McNemar on the pairs, counted here by hand and tested by statsmodels
    wide = frame.pivot_table(index=PROMPT, columns="model", values="biased")
    a, b = wide[row["model_a"]], wide[row["model_b"]]
    both = a.notna() & b.notna()
    only_a, only_b = int(((a == 1) & (b == 0))[both].sum()), int(((a == 0) & (b == 1))[both].sum())
    assert (row["n_pairs"], row["only_a"], row["only_b"]) == (both.sum(), only_a, only_b)
    ref = mcnemar([[0, only_a], [only_b, 0]], exact=False, correction=True)
    # with the design's cluster (the prompt text) `statistic` is the clustered test; the
    # plain McNemar stays beside it
    stat, p = (("mcnemar_statistic", "mcnemar_p_value") if "mcnemar_statistic" in row
               else ("statistic", "p_value"))
    assert row[stat] == pytest.approx(ref.statistic, rel=1e-12)
    assert row[p] == pytest.approx(ref.pvalue, rel=1e-12)


def test_did_you_mean():
    assert did_you_mean("Gendr", ["gender", "race"]) == " (did you mean 'gender'?)"
    assert did_you_mean("zzz", ["gender", "race"]) == ""
