"""Subcommands of ``python -m analysis``; each module has ``register(subparsers)``."""

__all__ = ["MODULES", "SUMMARIES"]


#: Module -> (command name, one-line help) for ``python -m analysis --help``: the top-level
#: help and the choice of a command are made from this table, so that only the chosen
#: command's module (and what it imports) is loaded (docs/performance.md). A module
#: missing here is registered in full (slower ``--help``, same behaviour);
#: tests/analysis/test_cli_imports.py checks the table against each ``register`` and
#: against the modules on disk (a new command module needs its row here).
SUMMARIES: dict[str, tuple[str, str]] = {
    "importer": ("import", "import a raw benchmark file or an evaluation log"),
    "prepare": ("prepare", "apply recipe steps (melt, match, recode, threshold, filter) to a "
                           "results file"),
    "describe": ("describe", "columns, suggested factors and nested factors"),
    "cells": ("cells", "rows and deviations per observed factor combination"),
    "coverage": ("coverage", "coverage percentage and Gini index of the factor grid"),
    "subgroups": ("subgroups", "deviation rate and log disparity of every subgroup"),
    "ecdf": ("ecdf", "eCDF of subgroup deviation rates: deviation metric, KS"),
    "importance": ("importance", "logistic regression: risk and protective values"),
    "features": ("features", "numeric text features (VADER sentiment, TextBlob "
                             "polarity/subjectivity, embedding similarity), offline"),
    "disparity": ("disparity", "numeric feature across groups: statistics, impact ratio, "
                               "Dixon's Q"),
    "cohorts": ("cohorts", "categorical outcome across cohorts: percentages, spread, "
                           "chi-square"),
    "compare": ("compare", "paired comparison of models (or settings) on the same prompts"),
    "counterfactual": ("counterfactual", "counterfactual pairs: one factor swapped within its "
                                         "template"),
    "native": ("native-scores", "the benchmark's own scores (s_DIS, s_AMB, pct_stereotype "
                                "...) with cluster intervals"),
    "check": ("check", "the bias gate: criteria with their uncertainty, exit 0 pass / 1 "
                       "fail / 2 bad input / 3 uncertain"),
    "index": ("index", "composite bias index (LLMBI) per model with every component"),
    "power": ("power", "rows needed to detect a log disparity (power analysis)"),
    "plan": ("plan", "prompts to add for coverage; fractional factorials"),
    "generate": ("generate", "prompts for a plan from templates with slots (learned from "
                             "the prompts or given)"),
    "extend": ("extend", "join answered new prompts to the results (added column), "
                         "coverage before / after"),
    "variance": ("variance", "variance components of templates, seeds, judges: "
                             "total-error intervals"),
    "index_published": ("index-published", "LLMBI as published: 0.2 + 2.5 |polarity| per "
                                           "response, aggregated"),
    "report": ("report", "whole-analysis report: HTML, figures ZIP, PDF"),
    "serve": ("serve", "run the app for a team (production settings)"),
}

#: Modules in ``analysis/commands/``, in the order ``--help`` lists them (:data:`SUMMARIES`'
#: order).
MODULES: list[str] = list(SUMMARIES)
