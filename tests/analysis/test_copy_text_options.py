"""The Copy as CLI text of the disparity, cohorts and compare views parses back (through
the command's own parser) to the options the page computed with."""

from __future__ import annotations

import shlex

from analysis.cli import build_parser
from analysis.options import FROM_DESIGN
from analysis.options.cohorts import CohortsOptions
from analysis.options.compare import CompareOptions
from analysis.options.disparity import DisparityOptions
from analysis.reproduce import api_view, cli_command, cohorts_view, compare_view


def _parsed(view, command: str):
    text = cli_command(view.command, "results.csv", "design.yaml", view.options)
    argv = shlex.split(text)[3:]  # python -m analysis
    assert argv[0] == command and argv[-1] == "--json"
    return build_parser(command).parse_args(argv), text


def disparity_view(page):  # noqa: ANN001, ANN201 - the Disparity page's view
    return api_view(DisparityOptions.from_settings(page), feature=page["feature"],
                    by=list(page["by"]))


def test_disparity_copy_text_round_trips():
    page = {"feature": "sentiment", "by": ["model", "cot"], "statistic": "median",
            "standard": "value", "value": 0.25, "direction": "within", "tolerance": 0.1,
            "polarity": "harmful", "alpha": 0.01, "baseline": None, "quantile": 0.5,
            "quantiles": (0.2, 0.8), "n_resamples": 199, "adaptive": False, "seed": 3,
            "compare": "overall", "comparison": "strict", "conventions": "saged"}
    args, text = _parsed(disparity_view(page), "disparity")
    assert DisparityOptions.from_args(args) == DisparityOptions.from_settings(page)
    assert (args.feature, args.by) == ("sentiment", "model,cot")
    assert "--permutations 199" in text and "--no-adaptive" in text
    assert "--saged-conventions" in text and "--quantiles 0.2,0.8" in text
    assert "--statistic median" in text and "--seed 3" in text
    default = disparity_view({"feature": "f", "by": ["g"]})
    assert [f for f, _ in default.options] == ["feature", "by"]  # defaults: no flags
    # the design's polarity by default: the API resolves it as the command does
    assert default.call == ("feature='f'", "by=['g']") and default.function == "disparity"


def test_cohorts_copy_text_round_trips():
    page = {"category": "answer", "cohort": "model", "by": ["cluster"], "categories": None,
            "method": "monte_carlo", "seed": 5, "renormalise": True}
    view = cohorts_view(page)
    args, text = _parsed(view, "cohorts")
    assert CohortsOptions.from_args(args) == CohortsOptions.from_settings(page)
    assert "--renormalise" in text and "--seed 5" in text and "--resamples" not in text
    assert view.function == "cohorts" and view.call == (
        "category='answer'", "cohort='model'", "by=['cluster']", "renormalise=True",
        "method='monte_carlo'", "seed=5")


def test_compare_copy_text_round_trips():
    page = {"by": "model", "reference": None, "factors": ["stigma"], "level": 1,
            "unit": None, "score": None, "duplicates": "refuse", "test": "auto",
            "adjust": "bh", "n_resamples": 500, "seed": 0, "confidence": 0.95,
            "alpha": 0.05, "cluster": None}
    args, text = _parsed(compare_view(page, design_cluster="template"), "compare")
    assert CompareOptions.from_args(args) == CompareOptions.from_settings(page)
    assert "--no-cluster" in text and "--n-boot 500" in text and "--adjust bh" in text
    # the old page value "design" and no design cluster: no cluster flag at all
    args, text = _parsed(compare_view({**page, "cluster": "design"}), "compare")
    assert CompareOptions.from_args(args).cluster == FROM_DESIGN and "cluster" not in text
    args, text = _parsed(compare_view({**page, "cluster": None}), "compare")
    assert "cluster" not in text  # None without a design cluster: the same analysis
