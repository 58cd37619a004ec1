"""Names of the columns the judges package reads and writes.

One place, so the page, the CLI, the exports and the tests use the same names.
"""

from __future__ import annotations

__all__ = [
    "AB_SUFFIX", "ANSWER", "ANSWER_A", "ANSWER_B", "ANSWER_MODEL", "ANSWER_SEED",
    "ANSWER_SYSTEM_PROMPT_ID", "ANSWER_TEMPERATURE", "BA_SUFFIX", "COMMON_COLUMNS", "DEVIATION",
    "ETCS", "EXPECTED_COLUMNS", "EXPECTED_OUTPUT", "EXPECTED_SUFFIX", "EXPLANATION_SUFFIX",
    "ICS", "ID", "JUDGE", "JUDGE_CACHED", "JUDGE_COST_USD", "JUDGE_INPUT_TOKENS",
    "JUDGE_MODEL_SNAPSHOT", "JUDGE_OUTPUT_TOKENS", "JUDGE_PARAMS", "MEAN_SCORE", "METRIC",
    "METRICS", "MODEL", "MODEL_SETTING_COLUMNS", "NO_ANSWER", "N_ROWS", "N_SCORED", "N_SUFFIX",
    "N_UNSCORED", "ORDER_AB", "ORDER_BA", "OUTPUT_COLUMNS", "PAIRED_METRICS", "PAIR_ID", "PCS",
    "QUESTION", "QUESTION_A", "QUESTION_B", "RAW_SUFFIX", "SAMPLE_OUTPUT_COLUMNS", "SBAS",
    "SCENARIO", "SCORE", "SCORES_SUFFIX", "SCORE_EXPECTED", "SCORE_N", "SCORE_SAMPLES",
    "SCORE_SD", "SD_SUFFIX", "SENSITIVE_FACTOR", "SHARE_FAIR", "SIMILARITY", "SIMILARITY_PAIRS",
    "SIMILARITY_THRESHOLD", "STAGE", "STAGE2_PAIR_METRIC", "STAGES", "STAGE_COLUMNS",
    "STAGE_METRICS", "STAGE_OPTIONAL_COLUMNS", "STAGE_THRESHOLDS", "STORY_A", "STORY_B", "TCS",
    "THRESHOLD", "UNSCORED_REASON", "expected_column", "explanation_column", "n_column",
    "order_column", "raw_column", "sample_columns", "scores_column", "sd_column",
]


# --- input: the four-stage test file (docs/methods.md, section 8) ----------------------
ID = "id"
STAGE = "stage"
SENSITIVE_FACTOR = "sensitive_factor"
SCENARIO = "scenario"
MODEL = "model"  # the model under test, not the judge
QUESTION = "question"
EXPECTED_OUTPUT = "expected_output"
ANSWER = "answer"
STORY_A = "story_a"
STORY_B = "story_b"
QUESTION_A = "question_a"
QUESTION_B = "question_b"
ANSWER_A = "answer_a"
ANSWER_B = "answer_b"

#: Columns every row needs, whatever its stage.
COMMON_COLUMNS: tuple[str, ...] = (ID, STAGE, SENSITIVE_FACTOR, SCENARIO, MODEL)
#: Text columns each stage needs (non-empty).
STAGE_COLUMNS: dict[int, tuple[str, ...]] = {
    1: (QUESTION, EXPECTED_OUTPUT, ANSWER),
    2: (STORY_A, STORY_B),
    3: (QUESTION_A, QUESTION_B, ANSWER_A, ANSWER_B),
    4: (QUESTION, EXPECTED_OUTPUT, ANSWER),
}
#: Text columns a stage may use when present.
STAGE_OPTIONAL_COLUMNS: dict[int, tuple[str, ...]] = {2: (QUESTION,)}
STAGES: tuple[int, ...] = (1, 2, 3, 4)

# --- metrics ---------------------------------------------------------------------------
ICS = "ics"
TCS = "tcs"
PCS = "pcs"
ETCS = "etcs"
SBAS = "sbas"
METRICS: tuple[str, ...] = (ICS, TCS, PCS, ETCS, SBAS)
#: Which metrics judge which stage.
STAGE_METRICS: dict[int, tuple[str, ...]] = {1: (ICS,), 2: (TCS, PCS, ETCS), 3: (SBAS,), 4: (ICS,)}
#: A score at or above this counts as fair (stage metrics); below it is a deviation.
#: Stages 1 and 4: ICS 3-5 (docs/methods.md section 8); stage 3: SBAS 4-5; stage 2 has
#: no threshold in the method, we use 3 (at least partial consistency).
STAGE_THRESHOLDS: dict[int, int] = {1: 3, 2: 3, 3: 4, 4: 3}
#: Which two texts the embedding scorer compares, per stage.
SIMILARITY_PAIRS: dict[int, tuple[str, str]] = {
    1: (ANSWER, EXPECTED_OUTPUT),
    2: (STORY_A, STORY_B),
    3: (ANSWER_A, ANSWER_B),
    4: (ANSWER, EXPECTED_OUTPUT),
}

# --- output: the judged file ------------------------------------------------------------
EXPLANATION_SUFFIX = "_explanation"
RAW_SUFFIX = "_raw"
UNSCORED_REASON = "unscored_reason"
SIMILARITY = "similarity"
JUDGE = "judge"
JUDGE_INPUT_TOKENS = "judge_input_tokens"
JUDGE_OUTPUT_TOKENS = "judge_output_tokens"
JUDGE_COST_USD = "judge_cost_usd"
JUDGE_CACHED = "judge_cached_calls"
#: The request parameters actually sent (JSON), and the model snapshot(s) the API reported.
JUDGE_PARAMS = "judge_params"
JUDGE_MODEL_SNAPSHOT = "judge_model_snapshot"
#: The reason of a row whose stage text is empty (``score`` without ``--strict``).
NO_ANSWER = "no answer to judge"


def explanation_column(metric: str) -> str:
    """The explanation column of ``metric`` (``"ics"`` -> ``"ics_explanation"``)."""
    return f"{metric}{EXPLANATION_SUFFIX}"


EXPECTED_SUFFIX = "_expected"


def expected_column(metric: str) -> str:
    """The probability-weighted score column of ``metric`` (``"ics"`` ->
    ``"ics_expected"``; judged files of ``--logprobs`` runs only)."""
    return f"{metric}{EXPECTED_SUFFIX}"


def raw_column(metric: str) -> str:
    """The raw reply column of ``metric`` (``"ics"`` -> ``"ics_raw"``)."""
    return f"{metric}{RAW_SUFFIX}"


#: Every column a judge run adds (in this order), replaced if the input already has it.
OUTPUT_COLUMNS: tuple[str, ...] = (
    *METRICS,
    *(explanation_column(m) for m in METRICS),
    SIMILARITY,
    UNSCORED_REASON,
    *(raw_column(m) for m in METRICS),
    JUDGE_INPUT_TOKENS,
    JUDGE_OUTPUT_TOKENS,
    JUDGE_COST_USD,
    JUDGE_CACHED,
    JUDGE,
    JUDGE_PARAMS,
    JUDGE_MODEL_SNAPSHOT,
)

# --- repeated samples and both orders (JudgeConfig.samples / both_orders) -------------
#: Suffixes of the columns a run with several samples per judgment (or both orders) adds
#: per metric: the samples' SD (ddof=1), how many were scored, and their scores as a JSON
#: list; stage-2 metrics judged in both orders also get the mean of each order.
SD_SUFFIX = "_sd"
N_SUFFIX = "_n"
SCORES_SUFFIX = "_scores"
AB_SUFFIX = "_ab"
BA_SUFFIX = "_ba"
#: The order labels: as given (story_a shown first) and swapped (story_b shown first).
ORDER_AB = "ab"
ORDER_BA = "ba"
#: The metrics judged on a pair of texts whose order can be swapped (stage 2).
PAIRED_METRICS: tuple[str, ...] = (TCS, PCS, ETCS)


def sd_column(metric: str) -> str:
    """``"tcs"`` -> ``"tcs_sd"``: SD of the scored samples (NaN with fewer than 2)."""
    return f"{metric}{SD_SUFFIX}"


def n_column(metric: str) -> str:
    """``"tcs"`` -> ``"tcs_n"``: number of scored samples."""
    return f"{metric}{N_SUFFIX}"


def scores_column(metric: str) -> str:
    """``"tcs"`` -> ``"tcs_scores"``: the scored samples' scores, a JSON list."""
    return f"{metric}{SCORES_SUFFIX}"


def order_column(metric: str, order: str) -> str:
    """``("tcs", "ab")`` -> ``"tcs_ab"``: mean score of one order (stage 2, both orders)."""
    return f"{metric}_{order}"


def sample_columns(metric: str, both_orders: bool = False) -> tuple[str, ...]:
    """The sample columns of ``metric``, in file order."""
    cols = (sd_column(metric), n_column(metric), scores_column(metric))
    if both_orders and metric in PAIRED_METRICS:
        cols += (order_column(metric, ORDER_AB), order_column(metric, ORDER_BA))
    return cols


#: Every column a run with samples or both orders may add (cleared before a new run).
SAMPLE_OUTPUT_COLUMNS: tuple[str, ...] = tuple(
    c for m in METRICS for c in sample_columns(m, both_orders=True))
#: Columns a ``--logprobs`` run adds at the end (replaced if the input already has them).
EXPECTED_COLUMNS: tuple[str, ...] = tuple(expected_column(m) for m in METRICS)

# --- answers of the model under test (judges/answer.py) ----------------------------------
ANSWER_MODEL = "answer_model"
ANSWER_TEMPERATURE = "answer_temperature"
ANSWER_SYSTEM_PROMPT_ID = "answer_system_prompt_id"
ANSWER_SEED = "answer_seed"
#: The model-under-test settings an answer run records; model factors of the results table.
MODEL_SETTING_COLUMNS: tuple[str, ...] = (ANSWER_MODEL, ANSWER_TEMPERATURE,
                                          ANSWER_SYSTEM_PROMPT_ID, ANSWER_SEED)

# --- stage metrics table -----------------------------------------------------------------
METRIC = "metric"
N_ROWS = "n"
N_SCORED = "n_scored"
N_UNSCORED = "n_unscored"
MEAN_SCORE = "mean_score"
THRESHOLD = "threshold"
SHARE_FAIR = "share_fair"

# --- results table (back into analysis) --------------------------------------------------
SCORE = "score"
#: Results-table columns of a judged file with repeated samples (judges/to_results.py).
SCORE_SD = "score_sd"
SCORE_N = "score_n"
SCORE_SAMPLES = "score_samples"
#: The probability-weighted score of a results row (judged files with ``<metric>_expected``).
SCORE_EXPECTED = "score_expected"
DEVIATION = "deviation"
#: The source row of a results row (``<row number>:<id>``): the three stage-2 metrics of a
#: story pair share it, so it is the cluster of the results table (judges/to_results.py).
PAIR_ID = "pair_id"
#: Metric of the one stage-2 row per story pair: the lowest of TCS, PCS and ETCS.
STAGE2_PAIR_METRIC = "consistency_min"
#: Default similarity threshold of the embedding scorer: similarity below it deviates.
#: Calibrated on the bundled illustrative sample (judges.embedding.calibrate_threshold,
#: balanced accuracy 0.74 over its 32 rows; docs/judges.md section 6).
SIMILARITY_THRESHOLD = 0.62
