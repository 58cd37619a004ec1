"""Structure inference and design suggestion off the visitors' script threads (no
Streamlit here; the pages' side is ``ui/pending_design.py``).

Every visitor's script runs in a thread of one server process, so an inference that keeps
a core busy in one session slows every other session (issue 43: a 10 KB upload of 1,000
columns pinned a core for minutes). Here the work for a table (``infer_structure`` for
the Data page's structure table and ``suggest_design`` for its starting design) runs in
a **separate process** (``multiprocessing``'s forkserver, preloaded with the analysis
modules), at most ``BIAS_WORKBENCH_INFERENCE_WORKERS`` at once (default 1; the others
wait their turn), each killed after ``BIAS_WORKBENCH_INFERENCE_TIMEOUT`` seconds (default
60) when it has not returned by then despite its own budget (``analysis.structure``'s
10 s and 20,000 pair tests). A job is known by the table's content token, so two
sessions with the same table share it, and the last :data:`KEEP` finished jobs are kept
for the pages that ask again. While a job runs its progress (seconds, pair tests) can be
read by any thread; the caller's thread only waits when it chooses to (:meth:`Job.wait`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.spawn
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.limits import Limit

__all__ = ["INFERENCE_TIMEOUT", "INFERENCE_WORKERS", "KEEP", "Inference", "Job",
           "CountedFine", "FIRST_ROW", "bbq_groupings", "count_unit_cells", "design_work",
           "infer_all",
           "job", "submit", "waiting_before", "WORK"]

#: Background inferences run at once, all visitors together.
INFERENCE_WORKERS = Limit("BIAS_WORKBENCH_INFERENCE_WORKERS", 1, "processes",
                          "the structure inferences the server runs at once")
#: Seconds after which a background inference is stopped (its process killed).
INFERENCE_TIMEOUT = Limit("BIAS_WORKBENCH_INFERENCE_TIMEOUT", 60, "seconds",
                          "how long one table's structure inference may run")
#: Finished jobs kept (by table token) for the pages that ask again.
KEEP = 16


@dataclass(frozen=True)
class Inference:
    """What a background inference returned.

    ``structure`` is ``infer_structure(frame)`` and ``design`` ``suggest_design(frame)``
    (both None when it failed); ``error`` says why it failed (a timeout, a refused table,
    a crash of the process), in a sentence the page can show. ``value`` is what another
    job's ``work`` returned (an import: ``ui/import_jobs.py``) when it is not a
    (structure, design) pair.
    """

    structure: Any
    design: Any
    seconds: float
    error: str | None = None
    value: Any = None


def infer_all(frame: pd.DataFrame, progress: Callable[[int], None] | None = None
              ) -> tuple[Any, Any]:
    """The structure and the suggested design of ``frame`` (what the worker computes:
    :func:`analysis.api.inferred_structure`)."""
    from analysis import api

    return api.inferred_structure(frame, progress=progress)


#: What a job computes, ``work(frame, progress) -> (structure, design)``; looked up when a
#: job is submitted and run in the worker process (tests put a module-level function here).
WORK: Callable[..., tuple[Any, Any]] = infer_all


def design_work(frame: pd.DataFrame, progress: Callable[[int], None] | None = None, *,
                function: Callable, design_json: str, text_codes: bool = False) -> Any:
    """A job's work that needs the table's design: ``function(frame, design)`` in the
    worker (the Coverage page's :func:`analysis.coverage.count_unit` when it must read
    the structure: ``ui/coverage.py::counted_for``; ``function`` is a module-level
    function, pickled by reference). With ``text_codes`` the worker gives ``function``
    the table's Arrow-backed text columns as categoricals of the same values (their
    dictionary codes, :meth:`_Packed.frame`) instead of rebuilding every row's text: for
    a function that only reads which rows share a value and the values' text, as the
    structure inference does (its columns' codes and values are the same)."""
    from analysis.design import Design

    return function(frame, Design.from_text(design_json))


@dataclass(frozen=True)
class CountedFine:
    """What the Coverage page's background job returns (:func:`count_unit_cells`): the
    count ``unit`` (:class:`analysis.coverage.CountUnit`) and ``cells``, the table's cell
    table (no outcome: ``n`` counts every row) over every design factor and the unit's
    columns, or None when it would not be much smaller than the rows (``outcome_cells``
    likewise)."""

    unit: Any
    cells: pd.DataFrame | None
    #: With a 0/1 outcome: the cell table over the design's factors with ``n`` (rows with
    #: a known outcome), ``deviations`` and ``n_all`` (every row), as ``cells_for`` sums it.
    outcome_cells: pd.DataFrame | None = None
    #: A BBQ table: the groupings the Subgroups page offers (:func:`bbq_groupings`) and
    #: its first table, ``api.bbq_scores(by=groupings[:2])`` of every row.
    bbq: tuple[tuple[str, ...], pd.DataFrame] | None = None
    #: The Compare page's inferred prompt unit of every row (``api.prompt_unit(...).raw``)
    #: for the factor it opens on (``{factor: unit}``; empty when the pairing is refused).
    units: dict[str, tuple] | None = None
    #: What the Disparity page opens on (:func:`ui.disparity_job.disparity_openers`).
    disparity: dict | None = None


#: The job's cell table is kept when it has at most this share of the table's rows (else
#: summing it would cost about what counting the rows does).
FINE_SHARE = 0.5


def count_unit_cells(frame: pd.DataFrame, design: Any) -> CountedFine:
    """The Coverage page's count unit (:func:`analysis.api.count_unit` of the applied
    ``frame``) and, read while the worker holds the table anyway, the cell table the page
    counts from (issue 44 item 3): every cell of the design's factors and the unit's
    columns with its rows (``n``). Every coverage cell table of the page (any grid of
    those factors, any subset of their values, prompts or responses) is a sum over it, as
    over the rows: the same counts, from a few thousand cells instead of 1M rows."""
    from analysis import api
    from analysis.columns import DEVIATION
    from analysis.errors import AnalysisError

    unit = api.count_unit(frame, design, applied=True)
    names = [f for f in design.names if f in frame.columns]
    columns = list(dict.fromkeys(names + [c for c in unit.columns if c in frame.columns]))
    dev = frame[DEVIATION].to_numpy(dtype=float) if DEVIATION in frame else None
    # a 0/1 outcome (or missing): the cells' n and sums are the rows' for any subset
    binary = dev is not None and bool(np.isin(dev[~np.isnan(dev)], (0.0, 1.0)).all())
    try:
        cells = api.cells(frame, factors=columns, with_outcome=False).table
        outcome = _outcome_cells(frame, names, design.cluster) if binary and names else None
    except AnalysisError:  # e.g. a factor named like a cell table's column: the rows, then
        cells = outcome = None

    def small(table: pd.DataFrame | None) -> pd.DataFrame | None:
        return table if table is not None and len(table) <= FINE_SHARE * len(frame) else None

    by = bbq_groupings(frame)
    bbq = None if by is None else (tuple(by), api.bbq_scores(frame, by=by[:2]).table)
    from analysis.factor_defaults import compared_factor

    units = {}
    compared = compared_factor(design, frame) if names == list(design.names) else None
    with contextlib.suppress(AnalysisError):  # (a refused pairing: the page says why)
        units = {compared: api.prompt_unit(frame, design, by=compared, applied=True).raw
                 } if compared else {}
    from ui.disparity_job import disparity_openers

    openers = None
    with contextlib.suppress(AnalysisError):
        openers = disparity_openers(frame, design)
    return CountedFine(unit, small(cells), small(outcome), bbq, units, openers)


def bbq_groupings(results: pd.DataFrame) -> list[str] | None:
    """None for a table that is not BBQ's; else the columns the Subgroups page offers for
    its BBQ scores (those with several values)."""
    from analysis import api as bw

    if not bw.is_bbq(results):
        return None
    return [c for c in ("category", "input_format", "model") if c in results.columns
            and results[c].nunique() > 1]


#: Of :func:`_outcome_cells`: the position of each cell's first row with a known outcome.
FIRST_ROW = "first_row"


def _outcome_cells(frame: pd.DataFrame, names: list[str], cluster: str | None
                   ) -> pd.DataFrame:
    """The cell table over ``names`` (the applied factors) and the design's ``cluster``
    as an engine's fine table: ``n`` and ``deviations`` of the rows with a known
    outcome, ``n_all`` of every row (a cell whose outcome is always missing stays, as
    the rows would for a subset) and :data:`FIRST_ROW`: on the rows a text cluster's
    values are ordered by first appearance among the rows counted, which
    ``ui/coverage.py::fine_cells`` rebuilds from it for any subset."""
    from analysis import api
    from analysis.cell_counts import N_ALL
    from analysis.columns import DEVIATION, DEVIATIONS, N
    from analysis.values import combine_codes, factor_codes

    columns = list(dict.fromkeys(names + ([cluster] if cluster in frame.columns else [])))
    coded = frame[columns].copy()
    for c in columns:  # each column's codes once, so both tables have the same cells
        codes, values = factor_codes(frame[c])
        coded[c] = pd.Categorical.from_codes(codes, categories=values)
    every = api.cells(coded, factors=columns, with_outcome=False).table
    known = ~np.isnan(frame[DEVIATION].to_numpy(dtype=float))
    counted = api.cells(coded.assign(**{DEVIATION: frame[DEVIATION].to_numpy()}),
                        factors=columns, with_outcome=True).table
    key = combine_codes([coded[c].cat.codes.to_numpy() for c in columns],
                        [max(len(coded[c].cat.categories), 1) for c in columns])
    _, first = np.unique(key[known], return_index=True)  # in the order of counted's cells
    counted[FIRST_ROW] = np.flatnonzero(known)[first]
    out = every[columns].merge(counted, on=columns, how="left", sort=False)
    out[N] = out[N].fillna(0).astype(np.int64)
    out[DEVIATIONS] = out[DEVIATIONS].fillna(0).astype(np.int64)
    out[FIRST_ROW] = out[FIRST_ROW].fillna(len(frame)).astype(np.int64)
    out[N_ALL] = every[N].to_numpy()
    return out


@dataclass(frozen=True)
class _Packed:
    """A table as it travels to the worker: its Arrow-backed text columns
    dictionary-encoded (each distinct text once, an int32 code per row), the other
    columns as they are. Copying a 1M-row table's long texts whole into the worker held
    the server's GIL for seconds (the Coverage page's count unit at 1M rows, issue 44);
    the codes and the distinct texts are a fraction of that, and :meth:`frame` rebuilds
    the very same table (values, dtypes, names, index, ``attrs``) in the worker."""

    rest: pd.DataFrame
    encoded: dict[int, tuple[Any, Any]]  # position -> (dtype, dictionary ChunkedArray)
    columns: pd.Index
    attrs: dict

    def frame(self, text_codes: bool = False) -> pd.DataFrame:
        """The table, as it was given to :func:`_packed`; with ``text_codes`` its text
        columns are categoricals of the same values (the dictionary's codes: -1 where a
        row is missing; categories of the column's string dtype), not rebuilt row by row
        (0.4 s CPU and 650 MB of new memory at 1M rows of BBQ, several seconds of wall
        time under load)."""
        rest = iter(range(self.rest.shape[1]))
        parts = []
        for i in range(len(self.columns)):
            if i in self.encoded:
                dtype, codes = self.encoded[i]
                import pyarrow as pa

                if text_codes:
                    parts.append(pd.Series(_categorical(codes, dtype), index=self.rest.index))
                    continue
                plain = pa.chunked_array([c.dictionary.take(c.indices) for c in codes.chunks],
                                         type=codes.type.value_type)
                parts.append(pd.Series(pd.array(plain, dtype=dtype), index=self.rest.index))
            else:
                parts.append(self.rest.iloc[:, next(rest)])
        out = pd.concat(parts, axis=1, ignore_index=True)
        out.columns = self.columns
        out.attrs = dict(self.attrs)
        return out


def _categorical(codes: Any, dtype: Any) -> pd.Categorical:
    """A dictionary-encoded Arrow column (:func:`_packed`) as a pandas Categorical."""
    import numpy as np
    import pyarrow as pa

    codes = codes.unify_dictionaries()
    if not codes.num_chunks:
        return pd.Categorical([], categories=pd.Index([], dtype=dtype))
    indices = pa.chunked_array([c.indices for c in codes.chunks], type=codes.type.index_type)
    values = indices.fill_null(-1).to_numpy() if indices.null_count else indices.to_numpy()
    categories = pd.Index(pd.array(codes.chunk(0).dictionary, dtype=dtype))
    return pd.Categorical.from_codes(np.asarray(values, dtype=np.int32), categories=categories,
                                     validate=False)


def _text_codes(work: Callable) -> bool:
    """Whether ``work`` takes the text columns as codes (``design_work(text_codes=True)``)."""
    return bool(getattr(work, "keywords", None) and work.keywords.get("text_codes"))


def _packed(frame: Any) -> Any:
    """``frame`` ready for the worker (:class:`_Packed` when it has Arrow-backed text
    columns; anything else as it is: an import's arguments)."""
    if not isinstance(frame, pd.DataFrame):
        return frame
    encoded = {}
    for i, (_, col) in enumerate(frame.items()):
        if isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow":
            import pyarrow.compute as pc

            encoded[i] = (col.dtype, pc.dictionary_encode(col.array.__arrow_array__()))
    if not encoded:
        return frame
    rest = frame.iloc[:, [i for i in range(frame.shape[1]) if i not in encoded]]
    return _Packed(rest, encoded, frame.columns, dict(frame.attrs))


def _child(conn: Any, frame: pd.DataFrame, counter: Any, work: Callable,
           settings: dict[str, str] | None = None) -> None:
    """The worker process: run ``work`` with the server's ``BIAS_WORKBENCH_*`` settings
    as they were when the job was started (the limits are read when used, and the
    forkserver's own environment is that of its start), send its result."""
    from analysis.errors import AnalysisError

    for key in [k for k in os.environ if k.startswith(_SETTINGS)]:
        del os.environ[key]
    os.environ.update(settings or {})

    def progress(n: int) -> None:
        counter.value = n

    try:
        if isinstance(frame, _Packed):
            frame = frame.frame(text_codes=_text_codes(work))
        out = work(frame, progress)
        conn.send(("ok", out))
    except AnalysisError as exc:
        conn.send(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the page, never a traceback
        conn.send(("error", f"the structure inference failed ({type(exc).__name__})"))
    finally:
        conn.close()


#: Environment variables a job takes from the server when it is submitted.
_SETTINGS = "BIAS_WORKBENCH_"
#: What the forkserver imports once, at its start, so that every worker forked from it has
#: it: the structure inference's modules and those the load-time job's work imports
#: (:func:`count_unit_cells`: the cells, BBQ scores, Compare's prompt unit, the Disparity
#: page's opening steps with SciPy's statistics and plotly's figures, whose template
#: :mod:`ui.worker_preload` reads). A worker that imported them itself paid ~1.3 s CPU per
#: job before its work (the inference and the job at 9k rows: 1.6 s -> 0.5 s CPU); the
#: small table's Coverage page waited for that (docs/performance.md, "Small tables").
PRELOAD = ("analysis.design", "analysis.structure", "ui.inference_pool", "analysis.api",
           "analysis.coverage", "analysis.cells", "analysis.bbq_scores", "analysis.compare",
           "analysis.disparity", "analysis.saged_stats", "analysis.cohort_inputs",
           "analysis.disparity_parts", "analysis.distribution", "analysis.figures.disparity",
           "ui.opening", "ui.disparity_job", "scipy.stats", "narwhals.stable.v1",
           "plotly.graph_objs._figure", "pyarrow.pandas_compat", "ui.worker_preload")
_context: Any = None
_context_lock = threading.Lock()


def _mp() -> Any:
    """The forkserver context, its server preloaded with the analysis modules (a new
    worker then starts in milliseconds; a fork of the threaded server itself is unsafe)."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(list(PRELOAD))
            _context = ctx
        return _context


_main_lock = threading.Lock()


def _preparation_without_main(name: str) -> dict[str, Any]:
    """:func:`multiprocessing.spawn.get_preparation_data` without the parent's
    ``__main__`` (see :func:`_without_main`)."""
    data = _stdlib_preparation(name)
    data.pop("init_main_from_path", None)
    data.pop("init_main_from_name", None)
    return data


_stdlib_preparation = multiprocessing.spawn.get_preparation_data


@contextmanager
def _without_main() -> Iterator[None]:
    """Start a worker (and the forkserver) without the parent's ``__main__`` being run in it.

    multiprocessing re-runs the parent's ``__main__`` file in each worker it starts; during
    a Streamlit script run ``__main__`` is the page script (the app's ``app.py``; a page
    under AppTest), so every worker would first run the page again, in bare mode (or hang
    in it until its timeout). Streamlit installs a new ``__main__`` at the start of every
    script run, of any session, on its own thread: swapping ``sys.modules["__main__"]``
    around the start (as this module once did) lost that race now and then (a worker then
    ran ``app.py`` and its table got no design). Instead the data a worker is prepared
    from is read without ``__main__`` while the lock is held (only this module starts
    processes in the server); the running scripts are untouched."""
    with _main_lock:
        multiprocessing.spawn.get_preparation_data = _preparation_without_main
        try:
            yield
        finally:
            multiprocessing.spawn.get_preparation_data = _stdlib_preparation


class Job:
    """One table's background inference (see the module's docstring)."""

    def __init__(self, token: str, frame: pd.DataFrame, work: Callable,
                 timeout: float) -> None:
        self.token, self.timeout = token, timeout
        self.submitted = time.monotonic()
        self.started: float | None = None
        self.result: Inference | None = None
        self._done = threading.Event()
        self._counter = _mp().Value("q", 0, lock=False)
        self._thread = threading.Thread(target=self._run, args=(frame, work), daemon=True,
                                        name=f"inference-{token}")
        self._thread.start()

    # -- state read by the pages ------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether the result (or the error) is there."""
        return self._done.is_set()

    @property
    def running(self) -> bool:
        """Started in a worker and not finished (False while it waits its turn)."""
        return self.started is not None and not self.done

    def pair_tests(self) -> int:
        """Pair tests the running inference has made so far."""
        return int(self._counter.value)

    def elapsed(self) -> float:
        """Seconds since the job started in a worker (0 while it waits)."""
        if self.started is None:
            return 0.0
        return time.monotonic() - self.started

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the result; True when it is there."""
        return self._done.wait(max(seconds, 0.0))

    # -- the worker thread ----------------------------------------------------------------------
    def _run(self, frame: pd.DataFrame, work: Callable) -> None:
        try:
            with _slots():
                self.started = time.monotonic()
                self.result = self._in_process(frame, work)
        except Exception as exc:  # noqa: BLE001 - the page says so, the server goes on
            self.result = Inference(None, None, self.elapsed(),
                                    f"the structure inference could not start "
                                    f"({type(exc).__name__})")
        finally:
            self._done.set()

    def _in_process(self, frame: pd.DataFrame, work: Callable) -> Inference:
        ctx = _mp()
        parent, child = ctx.Pipe(duplex=False)
        settings = {k: v for k, v in os.environ.items() if k.startswith(_SETTINGS)}
        proc = ctx.Process(target=_child,
                           args=(child, _packed(frame), self._counter, work, settings),
                           daemon=True, name=f"bias-workbench-inference-{self.token}")
        with _without_main():
            proc.start()
        child.close()
        try:
            if parent.poll(self.timeout):
                try:
                    status, payload = parent.recv()
                except EOFError:  # the process died without a word (killed, out of memory)
                    status, payload = "error", "the structure inference stopped unexpectedly"
            else:
                status, payload = "error", (
                    f"the structure inference did not finish within {self.timeout:g} s "
                    f"({INFERENCE_TIMEOUT.env}) and was stopped")
        finally:
            parent.close()
            if proc.is_alive():
                proc.kill()
            proc.join(5)
        seconds = self.elapsed()
        if status == "ok" and isinstance(payload, tuple) and len(payload) == 2:
            structure, design = payload
            return Inference(structure, design, seconds)
        if status == "ok":
            return Inference(None, None, seconds, value=payload)
        return Inference(None, None, seconds, payload)


# -- the server-wide slots and the registry -----------------------------------------------
_slot_lock = threading.Condition()
_running = 0


class _slots:
    """Hold one of the :data:`INFERENCE_WORKERS` slots (waiting for one)."""

    def __enter__(self) -> None:
        global _running
        with _slot_lock:
            while _running >= max(int(INFERENCE_WORKERS.value()), 1):
                _slot_lock.wait()
            _running += 1

    def __exit__(self, *exc: object) -> None:
        global _running
        with _slot_lock:
            _running -= 1
            _slot_lock.notify_all()


def waiting_before(this: Job) -> int:
    """Jobs submitted before ``this`` that have not finished (``this`` waits for a slot
    behind the running ones)."""
    with _jobs_lock:
        return sum(1 for j in _jobs.values()
                   if j is not this and not j.done and j.submitted <= this.submitted)


_jobs: OrderedDict[str, Job] = OrderedDict()
_jobs_lock = threading.Lock()


def job(token: str) -> Job | None:
    """The job of the table with this content token (running or finished), or None."""
    with _jobs_lock:
        return _jobs.get(token)


def submit(token: str, frame: pd.DataFrame, *, work: Callable | None = None) -> Job:
    """The job of ``token``: the existing one (running or finished: a table that timed out
    is not tried again on every rerun), else a new one started for ``frame``.
    ``work(frame, progress)`` replaces :data:`WORK` (a module-level function: it is run in
    the worker process)."""
    with _jobs_lock:
        existing = _jobs.get(token)
        if existing is not None:
            _jobs.move_to_end(token)
            return existing
        new = Job(token, frame, work or WORK, float(INFERENCE_TIMEOUT.value()))
        _jobs[token] = new
        finished = [t for t, j in _jobs.items() if j.done and t != token]
        while len(_jobs) > KEEP and finished:
            _jobs.pop(finished.pop(0))
        return new
