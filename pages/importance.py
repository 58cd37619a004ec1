"""Factor importance page: logistic regression of deviation, risk and protective values."""

import streamlit as st

from analysis.columns import EFFECT, FACTOR, P_ADJUSTED, P_VALUE
from analysis.errors import AnalysisError
from analysis.importance import ImportanceRefusal
from analysis.labels import adjusted_method, is_continuous, subset_caption
from analysis.multiple_testing import NAMES, adjusted_label
from analysis.reproduce import importance_view
from ui.common import require_results, subset_filter, table_download
from ui.drawing import importance_figure_panel
from ui.importance import (
    column_config,
    fix_buttons,
    intercept_note,
    model_options,
)
from ui.importance_linear import continuous_view, logistic_fit
from ui.judge_noise import COLUMN_CONFIG as NOISE_COLUMNS
from ui.judge_noise import page_noise_settings, with_term_noise
from ui.native import native_scores_view
from ui.navigation import route_first_visit
from ui.reproduce import reproduce
from ui.subgroups import missing_outcome_note
from ui.widgets import md, show_table

route_first_visit()

st.title("Factor importance")
results, design = require_results()
st.caption("Logistic regression of deviation on the chosen factors, each coded against its "
           "reference value: a coefficient > 0 (odds ratio > 1) marks a risk value, < 0 a "
           "protective one. Fitted on the cell table, which gives exactly the row-level "
           "estimates.")

where = subset_filter(design, key="importance")
st.caption(md(subset_caption(where)))
missing_outcome_note(results, where)
options = model_options(results, design)
if not options["factors"]:
    st.info("Choose at least one factor.")
    st.stop()

if is_continuous(design):  # a score, not a 0/1 deviation: linear or mixed model
    continuous_view(results, design, where, options)
    st.stop()
cell_factors = list(dict.fromkeys([*options["factors"], *where,
                                   *([options["cluster"]] if options["cluster"] else [])]))
try:  # with numeric covariates (widgets in ui/importance_linear.py) or without
    result, covariates, standardise = logistic_fit(results, design, where, options,
                                                   cell_factors, as_result=True)
except ImportanceRefusal as exc:
    st.error(md(exc.explanation))
    fix_buttons(exc.fixes, design)
    st.stop()
except AnalysisError as exc:
    st.error(md(str(exc)))
    st.stop()

fit, settings = result.raw, result.settings
importance_figure_panel(fit, options, where, covariates, standardise)  # a fragment
p_column = P_VALUE if options["adjust"] == "none" else P_ADJUSTED
m = st.columns(5)
m[0].metric("Rows", f"{fit.n_rows:,}")
m[1].metric("Deviations", f"{fit.n_deviations:,}")
m[2].metric("Cells", f"{fit.n_cells:,}")
m[3].metric("Parameters", fit.n_parameters)
m[4].metric("P(deviation) at references", f"{fit.baseline_probability:.3f}",
            help="1 / (1 + exp(-intercept)): every factor at its reference value")
st.caption(md("Standard errors: " + settings["uncertainty"] + "."))
reproduce(importance_view(options, cell_factors, design_cluster=design.cluster,
                          covariates=covariates, standardise=standardise,
                          noise=None if covariates else page_noise_settings("importance")),
          design, where, "importance_repro")

st.subheader("Coefficients")
terms = fit.terms if covariates else with_term_noise(fit, results, design, where, options)
counts = fit.terms[fit.terms[FACTOR].notna()][EFFECT].value_counts()
method = adjusted_method(settings)
header = adjusted_label(method)
labelled_by = (f"the {NAMES[method]} adjusted p, '{header}'" if p_column == P_ADJUSTED
               else "the unadjusted p")
st.caption(f"{counts.get('risk', 0)} risk and {counts.get('protective', 0)} protective values "
           f"at {labelled_by} < {fit.alpha:g}. 'p' is per term and not adjusted for "
           f"multiple testing; '{header}' is the {NAMES[method]} adjustment over the terms.")
st.dataframe(terms, hide_index=True, column_config=column_config(settings) | NOISE_COLUMNS,
             key="importance_table")
if intercept_note(fit.terms, fit.references):  # what the intercept row's n and rate count
    st.caption(md(intercept_note(fit.terms, fit.references)))
table_download(terms, "factor_importance", key="importance_terms")

st.subheader("Factor tests" if fit.cluster else "Likelihood-ratio test per factor")
st.caption("Each factor removed together with every interaction that contains it; the model "
           "is refitted on the same cells." + (
               " p is the cluster-robust Wald test (" + (
                   "HTZ: CR2, Satterthwaite df" if fit.df_method == "satterthwaite"
                   else "robust Wald") + "); 'p (LR)' is the likelihood-ratio test, which "
               "assumes independent rows. A test is missing, with its reason, when a value "
               "rests on fewer than 2 clusters or the covariance is singular."
               if fit.cluster else ""))
show_table(fit.factor_tests, "factor_importance_lr_tests", key="importance_tests",
           column_config=column_config(settings))
native_scores_view(results, design, where, page="importance")  # BBQ s_DIS / s_AMB ... with CIs
