"""Names of the columns the analysis functions return.

One place, so the UI, the CLI, the exports and the tests use the same names.
"""

__all__ = [
    "ABS_POLARITY", "ACCURACY_AMB", "ACCURACY_DIS", "ANSWER", "ANSWER_TYPE", "AVAILABLE",
    "BESIDE_FACTORS", "BIASED_ANSWER", "BOOT_CI_HIGH", "BOOT_CI_LOW", "BOOT_SE", "CATEGORY",
    "CI_HIGH", "CI_LOW", "COEF", "COEF_CI_HIGH", "COEF_CI_LOW", "COMPARED_WITH", "COMPONENT",
    "CONTINUITY_CORRECTED", "CONTRIBUTION", "CORRECT", "COUNT", "COVERAGE_PERCENTAGE",
    "CRAMERS_V", "DEPENDENT", "DESIGN_EFFECT", "DETECTABLE", "DETERMINANT", "DEVIATION",
    "DEVIATIONS", "DEVIATION_METRIC", "DEVIATION_RATE", "DF", "DIFFERENCE", "DIVERSITY_PENALTY",
    "DUPLICATE_OF", "EFFECT", "EMBEDDING_SIMILARITY", "ESTIMATE", "EXAMPLE_ID", "FACTOR",
    "FACTORS", "FEATURE_NAME", "GINI_INDEX", "GINI_INDEX_OBSERVED", "GROUP", "GROUP_A",
    "GROUP_B", "IMPACT_RATIO", "INPUT_FORMAT", "KL_DIVERGENCE", "KURTOSIS", "LD_UNDEFINED",
    "LEVEL", "LLMBI", "LLMBI_SCORE", "LOG_DISPARITY", "LR_STATISTIC", "MATCH_METHOD",
    "MAX_PERCENT", "MC_SE", "MDE_LOG_DISPARITY", "MEAN", "MEAN_ABS_POLARITY", "MEAN_RATE", "MEDIAN",
    "METHOD", "METRIC", "MIN_EXPECTED_COUNT", "MIN_PERCENT", "MODE", "MODEL", "MODEL_STD_ERR",
    "N", "NAIVE_STD_ERR", "NESTING_KIND", "NOISE_SAME_SIGN", "NOISE_SIGNIFICANT",
    "NOISE_SURVIVES", "NOTE", "N_A", "N_AMB", "N_B", "N_BOOT", "N_CATEGORIES", "N_CELLS",
    "N_CLUSTERS", "N_COHORTS", "N_DEPENDENT_VALUES", "N_DETERMINANT_VALUES", "N_DIMENSIONS",
    "N_DIS", "N_EMPTY_CELLS", "N_EXPECTED_PROMPT_CELLS", "N_MISSING_PROMPT_CELLS",
    "N_NON_UNKNOWN_AMB", "N_NON_UNKNOWN_DIS", "N_OBSERVED_CELLS", "N_PAIRED", "N_PARAMETERS",
    "N_PERMUTATIONS", "N_RESAMPLES", "N_ROWS", "N_SCORED", "N_SELECTED", "N_SUBGROUPS",
    "OBSERVED", "ODDS_RATIO", "PASSES_FOUR_FIFTHS", "PEARSON", "PERCENT", "PERCENTILE",
    "POLARITY_TEXTBLOB", "PRECISION", "PREDICTED_OPTION", "PREDICTION", "PROBABILITY",
    "PROBABILITY_CI_HIGH", "PROBABILITY_CI_LOW", "P_ADJUSTED", "P_ADJUSTED_LR", "P_VALUE",
    "P_VALUE_LR", "QUANTILE_RANGE",
    "QUANTITY", "RANGE", "RANK", "RATE_OUTSIDE", "REASON", "ROBUST_MODEL_SE_RATIO",
    "ROBUST_P_VALUE", "ROBUST_WALD_DF", "ROBUST_WALD_DF_DENOMINATOR", "ROBUST_WALD_STATISTIC",
    "ROWS_CHANGED", "ROWS_IN",
    "ROWS_NOT_HANDLED", "ROWS_OUT", "SAME_ROWS_AS", "SCOPE", "SCORE", "SCORE_KIND",
    "SD_PERCENT", "SELECTION_RATE", "SELECTION_RULE", "SENTIMENT_SCALE", "SENTIMENT_SCORE",
    "SENTIMENT_TERM", "SENTIMENT_VADER", "SETTING", "SHARE_ABOVE_CUTOFF",
    "SHARE_EXPECTED_BELOW_5", "SKEWNESS", "SMALL_N", "SPEARMAN", "STANDARD", "STATISTIC", "STD",
    "STD_ERR", "STEP", "STEREOTYPED_OPTION", "STOPPED_EARLY", "SUBGROUP",
    "SUBJECTIVITY_TEXTBLOB", "S_AMB", "S_DIS", "TERM", "TEST", "UNKNOWN_OPTION", "VALUE",
    "VARIANCE", "VARIANT", "WEIGHT", "WEIGHTED_BIAS", "Z",
]


#: Binary outcome column added to a results table by :func:`analysis.design.apply_design`.
DEVIATION = "deviation"

# Cell table (and subgroup tables)
N = "n"
DEVIATIONS = "deviations"
DEVIATION_RATE = "deviation_rate"

# Nesting report
DETERMINANT = "determinant"
DEPENDENT = "dependent"
N_DETERMINANT_VALUES = "n_determinant_values"
N_DEPENDENT_VALUES = "n_dependent_values"
NESTING_KIND = "kind"

# Coverage (analysis/coverage.py)
SCOPE = "scope"
FACTORS = "factors"
FACTOR = "factor"
VALUE = "value"
N_CELLS = "n_cells"
N_OBSERVED_CELLS = "n_observed_cells"
N_EMPTY_CELLS = "n_empty_cells"
N_ROWS = "n_rows"
COVERAGE_PERCENTAGE = "coverage_percentage"
GINI_INDEX = "gini_index"
GINI_INDEX_OBSERVED = "gini_index_observed"
N_MISSING_PROMPT_CELLS = "n_missing_prompt_cells"
N_EXPECTED_PROMPT_CELLS = "n_expected_prompt_cells"

# Subgroups and log disparity (analysis/subgroups.py)
SUBGROUP = "subgroup"
LEVEL = "level"
RATE_OUTSIDE = "rate_outside"
LOG_DISPARITY = "log_disparity"
CI_LOW = "ci_low"
CI_HIGH = "ci_high"
P_VALUE = "p_value"
P_ADJUSTED = "p_adjusted"
SMALL_N = "small_n"
CONTINUITY_CORRECTED = "continuity_corrected"
LD_UNDEFINED = "ld_undefined"
# ... power and bootstrap (analysis/planning.py, analysis/bootstrap.py)
MDE_LOG_DISPARITY = "mde_log_disparity"
DETECTABLE = "detectable"
BOOT_CI_LOW = "boot_ci_low"
BOOT_CI_HIGH = "boot_ci_high"
BOOT_SE = "boot_se"
ESTIMATE = "estimate"
N_BOOT = "n_boot"
# ... judge noise (analysis/judge_noise.py): shares of the replicates
NOISE_SAME_SIGN = "noise_same_sign"
NOISE_SIGNIFICANT = "noise_significant"
NOISE_SURVIVES = "noise_survives"
TEST = "test"
DUPLICATE_OF = "duplicate_of"
SAME_ROWS_AS = "same_rows_as"

# eCDF and deviation metric (analysis/ecdf.py)
DEVIATION_METRIC = "deviation_metric"
N_SUBGROUPS = "n_subgroups"
MEAN_RATE = "mean_rate"
SHARE_ABOVE_CUTOFF = "share_above_cutoff"
GROUP_A = "group_a"
GROUP_B = "group_b"
N_A = "n_a"
N_B = "n_b"
STATISTIC = "statistic"

# Factor importance by logistic regression (analysis/importance.py); also uses FACTOR,
# VALUE, N, DEVIATIONS, DEVIATION_RATE, CI_LOW, CI_HIGH (of the odds ratio), P_VALUE,
# P_ADJUSTED
TERM = "term"
COEF = "coef"
STD_ERR = "std_err"
Z = "z"
ODDS_RATIO = "odds_ratio"
COEF_CI_LOW = "coef_ci_low"
COEF_CI_HIGH = "coef_ci_high"
PROBABILITY = "probability"
PROBABILITY_CI_LOW = "probability_ci_low"
PROBABILITY_CI_HIGH = "probability_ci_high"
EFFECT = "effect"
LR_STATISTIC = "lr_statistic"
DF = "df"
N_PARAMETERS = "n_parameters"
# ... with a cluster column (docs/uncertainty.md)
NAIVE_STD_ERR = "naive_std_err"
DESIGN_EFFECT = "design_effect"
# ... with --gee: the model-based (naive GEE) SE and robust / model-based SE
MODEL_STD_ERR = "model_std_err"
ROBUST_MODEL_SE_RATIO = "robust_model_se_ratio"
# ... subgroups with a cluster: clusters a subgroup's rows touch
N_CLUSTERS = "n_clusters"
ROBUST_WALD_DF = "robust_wald_df"
ROBUST_WALD_STATISTIC = "robust_wald_statistic"
ROBUST_P_VALUE = "robust_p_value"
# ... the denominator df of a small-sample robust Wald test (HTZ; G - 1 for CR1 + F)
ROBUST_WALD_DF_DENOMINATOR = "robust_wald_df_denominator"
# ... with a cluster the factor tests' p_value is the robust test; the likelihood-ratio
# test (independent rows) stays beside it under these names
P_VALUE_LR = "p_value_lr"
P_ADJUSTED_LR = "p_adjusted_lr"

# Numeric-feature disparity (analysis/disparity.py); also uses N, STATISTIC, VALUE,
# P_VALUE, P_ADJUSTED
GROUP = "group"
MEAN = "mean"
MEDIAN = "median"
VARIANCE = "variance"
STD = "std"
SKEWNESS = "skewness"
KURTOSIS = "kurtosis"
QUANTILE_RANGE = "quantile_range"
STANDARD = "standard"
N_SELECTED = "n_selected"
SELECTION_RATE = "selection_rate"
IMPACT_RATIO = "impact_ratio"
PASSES_FOUR_FIFTHS = "passes_four_fifths"
QUANTITY = "quantity"
METRIC = "metric"
NOTE = "note"
OBSERVED = "observed"
COMPARED_WITH = "compared_with"
DIFFERENCE = "difference"
N_PERMUTATIONS = "n_permutations"
SELECTION_RULE = "selection_rule"
STOPPED_EARLY = "stopped_early"

# Composite bias index (analysis/index.py); also uses FACTOR, NOTE
MODEL = "model"
COMPONENT = "component"
SCORE_KIND = "score_kind"
SCORE = "score"
WEIGHT = "weight"
CONTRIBUTION = "contribution"
WEIGHTED_BIAS = "weighted_bias"
DIVERSITY_PENALTY = "diversity_penalty"
SENTIMENT_SCORE = "sentiment_score"
SENTIMENT_SCALE = "sentiment_scale"
SENTIMENT_TERM = "sentiment_term"
LLMBI = "llmbi"
RANK = "rank"

# Category distributions across cohorts (analysis/distribution.py); also uses N, STATISTIC,
# DF, P_VALUE, NOTE
COUNT = "count"
PERCENT = "percent"
N_CATEGORIES = "n_categories"
N_COHORTS = "n_cohorts"
SD_PERCENT = "sd_percent"
MIN_PERCENT = "min_percent"
MAX_PERCENT = "max_percent"
METHOD = "method"
N_RESAMPLES = "n_resamples"
#: Monte Carlo standard error of a p-value from random resamples (the eCDF's KS test).
MC_SE = "mc_se"
MIN_EXPECTED_COUNT = "min_expected"
SHARE_EXPECTED_BELOW_5 = "share_expected_below_5"
CRAMERS_V = "cramers_v"

# Importers (analysis/importers/); also uses MODEL
EXAMPLE_ID = "example_id"
INPUT_FORMAT = "input_format"
PREDICTION = "prediction"
PREDICTED_OPTION = "predicted_option"
MATCH_METHOD = "match_method"
ANSWER_TYPE = "answer_type"
CORRECT = "correct"
BIASED_ANSWER = "biased_answer"
STEREOTYPED_OPTION = "stereotyped_option"
UNKNOWN_OPTION = "unknown_option"
SETTING = "setting"
ANSWER = "answer"

CATEGORY = "category"

#: Output columns that sit beside factor columns in some table (cell tables, subgroups,
#: eCDF rates, coverage cells, disparity groups, cohort distributions): a factor with one
#: of these names would clash, so :func:`analysis.names.clash_free` renames it.
BESIDE_FACTORS: frozenset[str] = frozenset({
    DEVIATION, N, DEVIATIONS, DEVIATION_RATE, LEVEL, SUBGROUP, RATE_OUTSIDE, LOG_DISPARITY,
    CI_LOW, CI_HIGH, P_VALUE, P_ADJUSTED, TEST, SMALL_N, CONTINUITY_CORRECTED, LD_UNDEFINED,
    DUPLICATE_OF, SAME_ROWS_AS, N_SUBGROUPS, DEVIATION_METRIC, MEAN_RATE, SHARE_ABOVE_CUTOFF,
    N_ROWS, N_CELLS, GROUP, MEAN, MEDIAN, VARIANCE, STD, SKEWNESS, KURTOSIS, QUANTILE_RANGE,
    STANDARD, N_SELECTED, SELECTION_RATE, SELECTION_RULE, IMPACT_RATIO, PASSES_FOUR_FIFTHS,
    OBSERVED, COMPARED_WITH, DIFFERENCE, N_PERMUTATIONS, STOPPED_EARLY, COUNT, PERCENT,
    N_CATEGORIES, N_COHORTS, SD_PERCENT, MIN_PERCENT, MAX_PERCENT, NOTE, STATISTIC, DF,
    METHOD, N_RESAMPLES, MIN_EXPECTED_COUNT, SHARE_EXPECTED_BELOW_5, CRAMERS_V,
    MDE_LOG_DISPARITY, DETECTABLE, BOOT_CI_LOW, BOOT_CI_HIGH, BOOT_SE, ESTIMATE, N_BOOT,
    NOISE_SAME_SIGN, NOISE_SIGNIFICANT, NOISE_SURVIVES,
})

# BBQ's bias scores (analysis/bbq_scores.py, analysis/importers/bbq.py); also MODEL, INPUT_FORMAT
N_DIS = "n_dis"
N_NON_UNKNOWN_DIS = "n_non_unknown_dis"
ACCURACY_DIS = "accuracy_dis"
S_DIS = "s_DIS"
N_AMB = "n_amb"
N_NON_UNKNOWN_AMB = "n_non_unknown_amb"
ACCURACY_AMB = "accuracy_amb"
S_AMB = "s_AMB"

# Prepare steps report (analysis/prepare.py); also uses NOTE
STEP = "step"
ROWS_IN = "rows_in"
ROWS_OUT = "rows_out"
ROWS_CHANGED = "rows_changed"
ROWS_NOT_HANDLED = "rows_not_handled"

# Text features (analysis/features.py): one numeric column per feature, named as the feature
SENTIMENT_VADER = "sentiment_vader"
POLARITY_TEXTBLOB = "polarity_textblob"
SUBJECTIVITY_TEXTBLOB = "subjectivity_textblob"
EMBEDDING_SIMILARITY = "embedding_similarity"
FEATURE_NAME = "feature"
AVAILABLE = "available"
REASON = "reason"
N_SCORED = "n_scored"

# LLMBI as published (analysis/index_published.py); also uses N, WEIGHTED_BIAS,
# DIVERSITY_PENALTY, SENTIMENT_TERM, LLMBI
ABS_POLARITY = "abs_polarity"
LLMBI_SCORE = "llmbi_score"
MEAN_ABS_POLARITY = "mean_abs_polarity"
N_DIMENSIONS = "n_dimensions"
VARIANT = "variant"

# SAGED's baseline comparison and location/spread statistics (analysis/saged_stats.py);
# also uses GROUP, N
MODE = "mode"
RANGE = "range"
PERCENTILE = "percentile"
KL_DIVERGENCE = "kl_divergence"
PRECISION = "precision"
PEARSON = "pearson"
SPEARMAN = "spearman"
N_PAIRED = "n_paired"
