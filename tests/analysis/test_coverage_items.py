"""Coverage counts the item id (issue 42.3) on the bundled samples, and the bundled
designs agree with the structure inference."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import coverage as cov
from analysis import structure as st
from analysis.columns import N_EMPTY_CELLS, N_ROWS, VALUE, N
from analysis.design import Design
from tests.analysis.cli_helpers import run_json
from tests.conftest import REPO

SAMPLES = REPO / "sample_data"
BBQ = SAMPLES / "bbq_unifiedqa.csv.gz"


@pytest.fixture(scope="module")
def bbq() -> tuple[pd.DataFrame, Design]:
    return pd.read_csv(BBQ), Design.load(SAMPLES / "bbq_unifiedqa.design.yaml")


def test_bbq_categories_are_ranked_by_their_items(bbq):
    table, design = bbq
    cells = cov.coverage_cells(table, design, ["category"], with_unit=True)
    assert cov.counted_unit(cells).columns == ("example_id",)
    marginals = cov.marginal_counts(cells, design, factors=["category"])
    counts = dict(zip(marginals[VALUE], marginals[N], strict=True))
    by_pandas = table.groupby("category")["example_id"].nunique().to_dict()
    assert counts == by_pandas
    assert counts["Age"] == 3_680 == max(counts.values())  # was 12 "prompts", not the most
    assert int((table["category"] == "Age").sum()) == 11_040
    summary = cov.coverage_summary(cells, design, factors=["category"])
    assert summary.iloc[0][N_ROWS] == len(table) == 35_868  # rows are rows
    assert summary.iloc[0][cov.N_COUNTED] == table["example_id"].nunique() == 11_956


def test_bbq_default_grid_counts_prompts_and_no_impossible_empty_cell(bbq):
    table, design = bbq
    factors = cov.default_factors(design)
    cells = cov.coverage_cells(table, design, factors, with_unit=True)
    summary, reasons = cov.coverage_summary(cells, design, factors=factors,
                                            return_reasons=True)
    joint = summary.iloc[0]
    # 1,152 combinations: 924 pair a subcategory with another category's value (nested)
    assert (joint[cov.N_CELLS], joint[cov.N_OBSERVED_CELLS]) == (1_152, 228)
    assert joint[cov.N_IMPOSSIBLE_CELLS] == 924 and joint[N_EMPTY_CELLS] == 0
    assert joint[cov.COVERAGE_OF_POSSIBLE] == 1.0
    assert joint[cov.COVERAGE_PERCENTAGE] == pytest.approx(228 / 1_152)  # the methods' CP
    assert cov.empty_cells(cells, design, factors=factors).empty
    # example_id x input_format: the counts are distinct prompts, every row here one
    assert joint[cov.N_COUNTED] == len(table[["example_id", "input_format"]].drop_duplicates())
    reading = cov.describe_coverage(summary, cov.marginal_counts(cells, design,
                                                                 factors=factors),
                                    counted=cells.unit, impossible_reasons=reasons)
    assert reading[0].startswith("Every one of the 228 possible combinations of category x "
                                 "subcategory x question_polarity x context_condition x "
                                 "input_format (of 1,152; 924 are impossible: 924 by nesting")
    assert cov.counted_noun(cells) == "prompts"
    assert "example_id x input_format" in cov.counted_unit(cells).label


def test_bbq_empty_cells_without_the_nesting(bbq):
    """A combination the nesting does not rule out stays empty: drop every
    Age x nonneg x ambig row and that combination is listed."""
    table, design = bbq
    gone = ~((table["category"] == "Age") & (table["question_polarity"] == "nonneg"))
    factors = ["category", "question_polarity"]
    cells = cov.coverage_cells(table[gone], design, factors)
    summary = cov.coverage_summary(cells, design, factors=factors)
    assert summary.iloc[0][N_EMPTY_CELLS] == 1
    assert cov.empty_cells(cells, design, factors=factors).astype(str).values.tolist() == [
        ["Age", "nonneg"]]


def test_cli_coverage_on_bbq_states_rows_and_items(bbq, capsys):
    out = run_json(capsys, "coverage", BBQ, "--design",
                   SAMPLES / "bbq_unifiedqa.design.yaml", "--factors", "category,subcategory")
    assert out["n_rows"] == 35_868 and out["n_counted"] == 11_956
    assert out["n_impossible_cells"] == 77 and out["n_empty_cells"] == 0
    assert out["reading"][0].startswith("Every one of the 19 possible combinations of "
                                        "category x subcategory (of 96; 77 are impossible")
    assert out["reading"][-1].endswith("'SkinAppearance' has 32 items, 'none' 8,824.")


#: The SIMULATED judged sample (docs/measurement_error.md) is a design study's example, not
#: a benchmark's results: a prompt is template x attribute (no item id column), and its
#: judge and sample (the replicate index of a judgment) are declared as facets to analyse.
NOT_A_BENCHMARK = ("judged_simulated.design.yaml",)


@pytest.mark.parametrize("design_file", sorted(p.name for p in SAMPLES.glob("*.design.yaml")
                                               if p.name not in NOT_A_BENCHMARK))
def test_bundled_designs_agree_with_the_structure_inference(design_file):
    design = Design.load(SAMPLES / design_file)
    data = SAMPLES / design_file.replace(".design.yaml", ".csv.gz")
    table = pd.read_csv(data)
    outcome = design.outcome.column if design.outcome else None
    found = st.infer_structure(table, outcome=outcome)
    roles = {c.column: c.role for c in found.columns}
    assert found.item_id is not None and found.item_id not in design.names
    assert design.cluster == found.cluster
    for f in design.names:  # a factor, or the template also analysed as a factor
        assert roles[f] in (st.FACTOR, st.TEMPLATE), (f, roles[f])
    # no response, replicate, text or id is a factor of a bundled design
    assert not {f for f in design.names if roles[f] in (st.RESPONSE, st.REPLICATE,
                                                        st.ITEM_TEXT, st.ROW_ID)}
    # coverage counts the structure's items on each bundled sample
    counted = cov.count_unit(table, design)
    assert counted.noun == "items" and counted.columns == (found.item_id,)
