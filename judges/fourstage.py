"""Loading and validating a four-stage open-ended test file (``docs/methods.md`` section 8).

A four-stage file has one row per test item answered by one model under test:

- every row: ``id``, ``stage`` (1-4), ``sensitive_factor``, ``scenario``, ``model``;
- stages 1 and 4: ``question``, ``expected_output``, ``answer``;
- stage 2: ``story_a``, ``story_b`` (``question``, the story prompt, is optional);
- stage 3: ``question_a``, ``question_b``, ``answer_a``, ``answer_b``.

Any other column passes through untouched. Validation collects every problem (a missing
column, an empty cell, a stage outside 1-4) and raises one :class:`FourStageError` that
names each row (by position and ``id``) and column.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import IO

import pandas as pd

from analysis.judge_stats import columns as C
from analysis.values import is_blank
from judges.errors import FourStageError

__all__ = [
    "SAMPLE_NAME", "Source", "empty_texts", "load_fourstage", "parse_stage", "sample_path",
    "stage_counts", "validate_fourstage",
]


Source = str | Path | bytes | bytearray | IO[bytes] | pd.DataFrame

#: The bundled illustrative sample (a copy of ``sample_data/fourstage_illustrative.csv``).
SAMPLE_NAME = "fourstage_illustrative.csv"

#: Display positions: row 1 is the first data row (line 2 of a CSV file).
_FIRST_ROW = 1


def sample_path() -> Path:
    """Path of the bundled illustrative four-stage sample (texts written by us)."""
    return Path(str(resources.files("judges") / "data" / SAMPLE_NAME))


def load_fourstage(source: Source, *, name: str | None = None,
                   allow_empty_texts: bool = False, encoding: str = "utf-8") -> pd.DataFrame:
    """Read and validate a four-stage test file.

    Parameters
    ----------
    source
        A path, the raw bytes of an upload, a binary file object or a DataFrame. CSV,
        TSV, Parquet and JSON Lines are read (see :func:`analysis.io.load_results`).
    name
        Display name used in messages and to guess the format from its extension.
    allow_empty_texts
        Accept rows whose stage texts are empty (see :func:`validate_fourstage`).
    encoding
        Encoding of a text file without a byte-order mark (a mark names its own).

    Returns
    -------
    pandas.DataFrame
        The validated table (see :func:`validate_fourstage`).

    Raises
    ------
    FourStageError
        The file cannot be read, or it does not fit the four-stage layout.
    """
    from analysis.errors import LoadError
    from analysis.io import load_results

    try:
        frame = load_results(source, name=name, encoding=encoding)
    except LoadError as exc:
        raise FourStageError(str(exc)) from None
    return validate_fourstage(frame, allow_empty_texts=allow_empty_texts)


def _row_label(position: int, ident: object) -> str:
    ident_text = "" if is_blank(ident) else f" (id {ident})"
    return f"row {position + _FIRST_ROW}{ident_text}"


def parse_stage(value: object) -> int | None:
    """A ``stage`` cell as 1-4 (``"2"``, ``2.0``), or ``None`` if it is not one."""
    if is_blank(value) or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    if not number.is_integer() or int(number) not in C.STAGES:
        return None
    return int(number)


def validate_fourstage(frame: pd.DataFrame, *, allow_empty_texts: bool = False) -> pd.DataFrame:
    """Check a four-stage table and return a normalised copy.

    Parameters
    ----------
    frame
        The table as read from the file.
    allow_empty_texts
        Accept empty stage texts (an answer still waiting in a batch, a model that said
        nothing): the judge marks those rows unscored, "no answer to judge"
        (:func:`empty_texts`). Missing columns and empty common columns stay errors.

    Returns
    -------
    pandas.DataFrame
        A copy with the same rows, order and columns; ``stage`` becomes an ``int64``
        column (1-4). All other columns are unchanged.

    Raises
    ------
    FourStageError
        Listing every problem: a missing common column; a stage that is empty or not
        1-4; a column a stage needs that is absent (naming the rows that need it); a
        needed cell that is empty (naming row, ``id``, stage and column). The table must
        also have at least one row.
    """
    if not isinstance(frame, pd.DataFrame):
        raise FourStageError(f"Expected a table (DataFrame), got {type(frame).__name__}.")
    if frame.empty:
        raise FourStageError("The four-stage file has no rows.")
    problems: list[str] = []
    missing_common = [c for c in C.COMMON_COLUMNS if c not in frame.columns]
    if missing_common:
        problems.append(
            f"Missing column(s) {', '.join(missing_common)}: every row needs "
            f"{', '.join(C.COMMON_COLUMNS)}. Columns found: {', '.join(map(str, frame.columns))}."
        )
        if C.STAGE in missing_common:
            raise FourStageError(problems)
    ids = frame[C.ID].tolist() if C.ID in frame.columns else [None] * len(frame)
    stages = [parse_stage(v) for v in frame[C.STAGE].tolist()]
    raw_stages = frame[C.STAGE].tolist()
    for pos, (stage, raw) in enumerate(zip(stages, raw_stages, strict=True)):
        if stage is None:
            shown = "empty" if is_blank(raw) else f"{raw!r}"
            problems.append(f"{_row_label(pos, ids[pos])}: stage is {shown}; it must be 1, 2, 3 "
                            "or 4.")
    needed: dict[str, list[int]] = {}
    for pos, stage in enumerate(stages):
        cols = C.COMMON_COLUMNS if stage is None else C.COMMON_COLUMNS + C.STAGE_COLUMNS[stage]
        for col in cols:
            if col == C.STAGE:
                continue
            needed.setdefault(col, []).append(pos)
    for col, positions in needed.items():
        if col not in frame.columns:
            if col in missing_common:
                continue
            stages_needing = sorted({stages[p] for p in positions if stages[p] is not None})
            rows = ", ".join(str(p + _FIRST_ROW) for p in positions[:20])
            more = f" and {len(positions) - 20} more" if len(positions) > 20 else ""
            problems.append(
                f"Missing column {col!r}, needed by stage {', '.join(map(str, stages_needing))} "
                f"rows ({len(positions)}: rows {rows}{more})."
            )
            continue
        if allow_empty_texts and col not in C.COMMON_COLUMNS:
            continue
        values = frame[col].tolist()
        for pos in positions:
            if is_blank(values[pos]):
                stage_text = "" if stages[pos] is None else f", stage {stages[pos]}"
                problems.append(f"{_row_label(pos, ids[pos])}{stage_text}: {col} is empty.")
    if problems:
        raise FourStageError(problems)
    out = frame.copy()
    out[C.STAGE] = pd.Series(stages, index=frame.index, dtype="int64")
    return out


def empty_texts(frame: pd.DataFrame) -> dict[int, list[str]]:
    """``row position -> empty stage text columns`` of a validated table (only rows with
    at least one; see ``allow_empty_texts`` of :func:`validate_fourstage`)."""
    out: dict[int, list[str]] = {}
    stages = frame[C.STAGE].to_numpy()
    for stage, cols in C.STAGE_COLUMNS.items():
        positions = [int(p) for p in (stages == stage).nonzero()[0]]
        if not positions:
            continue
        for col in cols:
            values = frame[col].to_numpy(dtype=object)
            for pos in positions:
                if is_blank(values[pos]):
                    out.setdefault(pos, []).append(col)
    return dict(sorted(out.items()))


def stage_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """How many rows and judge calls each stage of a validated table has.

    Returns
    -------
    pandas.DataFrame
        One row per stage present: ``stage``, ``n`` (rows), ``metrics`` (the metrics
        judged, comma-separated) and ``calls`` (rows x metrics).
    """
    counts = frame[C.STAGE].value_counts().sort_index()
    return pd.DataFrame({
        C.STAGE: counts.index.astype("int64"),
        C.N_ROWS: counts.to_numpy(),
        "metrics": [", ".join(C.STAGE_METRICS[int(s)]) for s in counts.index],
        "calls": [int(n) * len(C.STAGE_METRICS[int(s)]) for s, n in counts.items()],
    })
