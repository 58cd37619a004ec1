"""The browser journey at 1M rows, timed (issue 32: items 3 and 5 in a real browser).

Run: ``PYTHONPATH=. python benchmarks/bench_browser_journey.py [--rows 1000000]
[--pages Coverage,Subgroups] [--baseline spread|sample] [--baseline-rows 10000]
[--load-job both|now|after] [--no-baseline] [--verbose] [--trace [events|js]]`` (needs
Debian's chromium).

A real ``streamlit run app.py`` (``tests/app/browsertools.py`` ``running_app``) and one
headless chromium driven by Playwright. The table is the bundled BBQ sample repeated
28 times (1,004,304 rows, whole copies, as ``bench_app_pages.py`` builds it), written to
a Parquet file (~21 MB, under the uploader's ``server.maxUploadSize`` of 200 MB; as CSV
it would be ~490 MB) and uploaded through the Data page's uploader. The journey:

1. **load**: the file handed to the uploader -> the Data page shows its row count;
2. each analysis page opened from the sidebar (**first render**), then 2-4 widget changes
   per page (radios, selectboxes, checkboxes and toggles: :data:`JOURNEY`), each timed;
3. **exports** (item 5): the Subgroups sunburst as PNG, SVG, PDF and PNG again, then the
   eCDF as PNG and SVG (Playwright's ``expect_download``): the first export and the
   following ones, and whether the button showed a spinner.

Two times per step, measured apart:

- **server**: Streamlit's own work. ``benchmarks/run_timing/sitecustomize.py`` is put
  first on the server's ``PYTHONPATH``; it wraps ``ScriptRunner._run_script`` (one script
  run, callbacks included), ``ScriptRunner._on_script_finished`` (when the run tells the
  browser it is over) and ``MediaFileManager.execute_deferred`` (a download button's
  deferred data: the kaleido render) and appends each call's wall and CPU time to a JSON
  lines file. A step's server time is the sum over the runs that started after its action
  (a click usually makes one) from their start to their end mark; the cleanup after it
  (``gc.collect(2)``, ``runner.postScriptGC``) is printed apart with ``--verbose``.
- **browser**: from the action (the option clicked, the file handed over) until the page
  is idle: the app's script state reads ``notRunning`` with no status widget (``settle``)
  and the DOM has not changed for 300 ms; the time is that of the DOM's last change (a
  ``MutationObserver`` injected before the app's own scripts), so the polling adds nothing.
  Browser minus server is the wait before the run, the websocket transfer and the
  frontend's work (``--verbose`` also prints when the browser saw the run end).
- **CPU**: per step, how long chromium's renderer main thread was busy (DevTools
  ``Performance.getMetrics``: tasks, JavaScript, layout, style; ``--verbose``); per
  journey, the script runs' and exports' CPU seconds, and those of the server's processes
  (with kaleido's Chrome) and of chromium's (``psutil``).

``--trace`` (:class:`Trace`) also records, per step, what chromium did: its main thread
by trace event, the websocket bytes, the DOM nodes, elements, dataframes and charts (and
how many charts were mounted anew), each figure's JSON size in plotly.js and where the DOM
changed last; ``--trace js`` adds the JavaScript by frontend bundle (docs/performance.md,
session 13).

The **baseline in the same run** is the same journey on ``--baseline-rows`` rows (default
10,000: issue 44's "1M-row first render within 1.5x the 10k one") of the same data and
design, uploaded as Parquet the same way: by default (``--baseline spread``) every row of
evenly spaced example ids of the sample (``bench_app_pages.py``'s ``spread``: the same
categories, templates and pairs as the large table, which is whole copies of the sample);
``--baseline sample`` is the whole 35,868-row sample (sessions 9-11; the only baseline
whose Subgroups numbers the large table's must equal, n x the copies). Each journey runs
on a fresh server and browser (the first page visited also pays the imports of the
analysis modules, in every journey alike).

**The load-time job** (``ui/table_job.py``: from 200k rows the app reads the cell tables
and the pages' opening results in a worker process as soon as the table is shown) runs on
the machine's other core while the first pages are opened right after the upload. With
``--load-job now`` the pages are opened at once (a visitor who goes on right after the
upload); with ``after`` the journey first waits until that job has finished (the server's
``ui.inference_pool.Job._run`` is timed by ``run_timing/sitecustomize.py``): a visitor
who opens the pages after the load; ``both`` (the default) runs the large journey both
ways, each on a fresh server, and prints the job's own time.
The table prints, per page, the first render and the widget changes' p95 at both sizes
(server / browser) and the ratio, then the targets: first render < 1 s and widget change
< 0.5 s at p95 over the journey; an export < 1.5 s after the first, a spinner on every one.

Fails (exit 1) when a page shows an exception box, a widget or a download cannot be driven,
a step records no script run (a change to the option already shown is no change),
the server-side timing recorded nothing, or (with ``--baseline sample``) the Subgroups table
downloaded at 1M rows (its CSV button) is not the sample's with n x 28 and the same
deviation rates.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_pages import (  # noqa: E402
    SAMPLE,
    copies_agree,
    numbers_of,
    spread,
    tiled,
)
from tests.app.browsertools import (  # noqa: E402
    CHROMIUM,
    FLAGS,
    free_port,
    nav_link,
    open_select,
    running_app,
    settle,
)

#: The folder whose ``sitecustomize.py`` times the server's script runs and exports.
TIMING = Path(__file__).resolve().parent / "run_timing"

#: Per analysis page (its title in the navigation), the widget changes of the journey in
#: order: (key, kind, option). kind: "select" (the option's label), "radio" (the option's
#: label) or "check" (a checkbox or toggle, clicked). Statistics-changing settings and
#: drawing-only ones (importance's intercept and scale run in an ``st.fragment``).
JOURNEY: dict[str, list[tuple[str, str, str | None]]] = {
    "Coverage": [("coverage_col", "select", "input_format"),
                 ("coverage_row", "select", "subcategory"),
                 ("coverage_count", "radio", "responses (rows)")],
    "Subgroups": [("subgroups_level", "radio", "1"),
                  ("subgroups_colour", "radio", "deviation rate"),
                  ("subgroups_test", "select", "Wald z"),
                  ("subgroups_clustered", "check", None)],
    "eCDF": [("ecdf_by", "select", "input_format"),
             ("ecdf_level_2", "select", "any 1")],
    "Compare": [("compare_level", "radio", "1"),
                ("compare_adjust", "radio", "Benjamini-Hochberg"),
                ("compare_pair", "select", "arc -> race"),
                ("compare_by", "select", "context_condition")],
    "Factor importance": [("importance_intercept", "check", None),
                          ("importance_scale", "radio", "coefficient (log-odds)"),
                          ("importance_ref_category", "select", "Religion")],
    "Disparity": [("disparity_statistic", "select", "median"),
                  ("disparity_standard", "select", "median"),
                  # not "above": the favourable side of a feature of unknown polarity
                  ("disparity_direction", "select", "below"),
                  # not "correct": the page's default feature (index 0), no change at all
                  ("disparity_feature", "select", "biased_answer")],
    "Bias index": [("index_model", "select", "input_format"),
                   ("index_normalize", "check", None),  # gone with "as published"
                   ("index_variant", "radio", "as published")],
    "Cohorts": [("cohorts_cohort", "select", "context_condition"),
                ("cohorts_method", "select", "chi2"),
                ("cohorts_renormalise", "check", None)],
}
#: The figure exports (item 5), on the page named first: (page, button key, format).
EXPORTS = [("Subgroups", "subgroups_sunburst", fmt) for fmt in ("png", "svg", "pdf", "png")] \
    + [("eCDF", "ecdf_figure", fmt) for fmt in ("png", "svg")]

FIRST_RENDER, WIDGET_P95, EXPORT_AFTER_FIRST = 1.0, 0.5, 1.5  # the targets, seconds
QUIET_MS = 300  # the DOM unchanged this long: drawn

#: Injected before the app's scripts: the time of the DOM's last change, of the last time the
#: app's script state became ``notRunning``, and every spinner that appears (with the
#: ``st-key-`` classes of its element container).
OBSERVER = """(() => {
  const bb = window.__bb = {last: Date.now(), idle: Date.now(), spinners: []};
  const spin = '[data-testid="stSpinnerIcon"]';
  const where = n => {  // the element a change happened in: its nearest data-testid
    const e = n && (n.nodeType === 1 ? n : n.parentElement);
    const t = e && e.closest('[data-testid]');
    return t ? t.getAttribute('data-testid') : (e ? e.tagName : '?');
  };
  const start = () => new MutationObserver(muts => {
    bb.last = Date.now();
    bb.lastIn = where(muts[muts.length - 1].target);
    for (const m of muts) {
      if (m.attributeName === 'data-test-script-state'
          && m.target.getAttribute(m.attributeName) === 'notRunning') bb.idle = bb.last;
    }
    for (const m of muts) for (const n of m.addedNodes) {
      if (n.nodeType !== 1) continue;
      const s = n.matches(spin) ? n : n.querySelector(spin);
      if (!s) continue;
      const box = s.closest('[class*="st-key-"]');
      bb.spinners.push([Date.now(), box ? box.className : '']);
    }
  }).observe(document, {subtree: true, childList: true, attributes: true,
                        characterData: true});
  start();
})();"""


@dataclass
class Step:
    """One timed step of the journey (seconds; ``server`` None when no run was recorded)."""

    page: str
    what: str
    kind: str  # "load", "first", "change", "export"
    browser: float
    server: float | None
    server_cpu: float
    runs: int
    spinner: bool | None = None
    ended: float | None = None  # when the browser saw the script run end (state notRunning)
    after: float = 0.0  # the server's cleanup and garbage collection after its runs
    lag: float | None = None  # from the action until the server's first run began
    fragment: bool = False  # every run was a fragment-only rerun
    calls: list[int] = field(default_factory=list)  # the server's numbers of its runs
    main: dict[str, float] = field(default_factory=dict)  # chromium's main thread (MainThread)
    trace: dict = field(default_factory=dict)  # what chromium did, with --trace (Trace)
    problems: list[str] = field(default_factory=list)


class ServerLog:
    """The JSON lines ``run_timing/sitecustomize.py`` appends, read as they come."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def since(self, t0: float, kind: str, timeout: float = 600) -> list[dict]:
        """The records of ``kind`` that started at or after ``t0`` and were not returned
        before; waits (up to ``timeout`` s) for those of them still under way."""
        found: dict[int, dict] = {}
        open_calls: set[int] = set()
        deadline = time.monotonic() + timeout
        while True:
            for r in self._read():
                if r.get("of", r["kind"]) != kind or r["t0"] < t0 - 0.005:
                    continue
                if r["kind"] == "start":
                    open_calls.add(r["call"])
                else:
                    open_calls.discard(r["call"])
                    found[r["call"]] = r
            if not open_calls or time.monotonic() > deadline:
                return [found[c] for c in sorted(found)]
            time.sleep(0.05)

    def _read(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as f:
            f.seek(self.offset)
            text = f.read()
        done = text.rfind("\n") + 1  # a line still being written waits for the next call
        self.offset += len(text[:done].encode("utf-8"))
        records = [json.loads(line) for line in text[:done].splitlines() if line]
        missing = [r["what"] for r in records if r["kind"] == "missing"]
        if missing:
            raise SystemExit(f"FAILED: the server timing could not wrap {missing}: "
                             "Streamlit changed; see benchmarks/run_timing/sitecustomize.py")
        return records


def run_time(run: dict) -> float:
    """A script run's time until Streamlit told the browser it is over (without the cleanup
    and garbage collection after it, see ``run_timing/sitecustomize.py``)."""
    return (run["ended"] or run["t1"]) - run["t0"]


def quiet_since(page, cap: float = 15.0) -> float:
    """Wait until the DOM has not changed for :data:`QUIET_MS`; the time of its last change
    (``time.time()`` seconds; after ``cap`` s of changes, the time then)."""
    deadline = time.monotonic() + cap
    while True:
        gap = page.evaluate("Date.now() - window.__bb.last")
        if gap >= QUIET_MS or time.monotonic() > deadline:
            return page.evaluate("window.__bb.last") / 1000
        page.wait_for_timeout(QUIET_MS - gap + 20)


def problems_on(page, where: str) -> list[str]:
    """An exception box or the app's unexpected-error message on the page."""
    out = []
    if page.locator('[data-testid="stException"]').count():
        out.append(f"{where}: exception box: "
                   + page.locator('[data-testid="stException"]').first.inner_text()[:300])
    if page.get_by_text("stopped on an unexpected error").count():
        out.append(f"{where}: unexpected error")
    return out


class MainThread:
    """Chromium's own account of its renderer's main thread (the DevTools protocol's
    ``Performance.getMetrics``): seconds busy with tasks, of them running JavaScript (the
    frontend's React code, plotly), layout and style, since the page opened."""

    METRICS = {"TaskDuration": "busy", "ScriptDuration": "script",
               "LayoutDuration": "layout", "RecalcStyleDuration": "style"}

    def __init__(self, page) -> None:
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Performance.enable")

    def now(self) -> dict[str, float]:
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")
                   ["metrics"]}
        return {label: float(metrics.get(name, 0.0)) for name, label in self.METRICS.items()}


#: After a step (``--trace``): the page's DOM nodes, its plotly charts (and how many of them
#: were mounted anew since the mark :data:`MARK_PLOTS` put on the ones before the step), the
#: JSON size of each chart's figure as plotly.js holds it (``data`` + ``layout``), its traces
#: and points, and the dataframes (glide data grids) on the page.
PAGE_COUNTS = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const size = gd => { try { return JSON.stringify({data: gd.data, layout: gd.layout}).length; }
                       catch (e) { return -1; } };
  const points = gd => (gd.data || []).reduce((n, t) => n + Math.max(
      ...['x', 'y', 'z', 'values', 'labels', 'ids'].map(k => (t[k] && t[k].length) || 0), 0), 0);
  return {nodes: document.getElementsByTagName('*').length,
          plots: plots.length, new_plots: plots.filter(gd => !gd.__bbMark).length,
          figures: plots.map(gd => ({key: (gd.closest('[class*="st-key-"]') || {className: ''})
                                       .className.split(' ').filter(c => c.startsWith('st-key-'))
                                       .map(c => c.slice(7)).join(','),
                                     json: size(gd), traces: (gd.data || []).length,
                                     points: points(gd), fresh: !gd.__bbMark})),
          frames: document.querySelectorAll('[data-testid="stDataFrame"]').length,
          elements: document.querySelectorAll('[data-testid="stElementContainer"]').length};
}"""
MARK_PLOTS = "() => document.querySelectorAll('.js-plotly-plot').forEach(gd => gd.__bbMark = 1)"


def bundle(url: str) -> str:
    """The frontend bundle a JavaScript function came from, by its file's name without the
    build hash (``PlotlyChart``, ``DataFrame``, ``index``, ...; "(program)" and "(idle)" for
    V8's own)."""
    name = url.rsplit("/", 1)[-1]
    return name.split(".")[0] if name else "(native)"


def main_thread_self_times(trace: bytes) -> dict[str, float]:
    """Seconds of the renderer's main thread (``CrRendererMain``) by trace event, each event's
    own time without the events nested in it (a ``RunTask`` with nothing inside it is
    chromium's own work: painting, compositing, IPC), largest first."""
    events = json.loads(trace)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    main = {(e["pid"], e["tid"]) for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    spans = sorted(((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                    if e.get("ph") == "X" and "dur" in e and (e["pid"], e["tid"]) in main),
                   key=lambda x: (x[0], -x[1]))
    out: dict[str, float] = {}
    stack: list[list] = []  # [start, end, name, time inside children]

    def close() -> None:
        start, end, name, inside = stack.pop()
        out[name] = out.get(name, 0.0) + (end - start - inside) / 1e6
        if stack:
            stack[-1][3] += end - start

    for t0, t1, name in spans:
        while stack and stack[-1][1] <= t0:
            close()
        stack.append([t0, t1, name, 0.0])
    while stack:
        close()
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class Trace:
    """``--trace``: per step, what chromium did (DevTools protocol): its JavaScript by bundle
    (with ``js``: ``Profiler``, sampled every 0.5 ms: self time of the functions of each
    frontend file, so plotly.js' work is ``PlotlyChart``, the data grid's ``DataFrame``, React
    ``react-dom``; its start costs the main thread 0.2-1 s per step, shown as
    ``CpuProfiler::StartProfiling``), the main thread's own time by trace event
    (:func:`main_thread_self_times`), the bytes of the websocket frames the server sent, and
    the page afterwards (:data:`PAGE_COUNTS`)."""

    #: The trace categories of :meth:`stop`'s breakdown of the main thread by task kind.
    CATEGORIES = ["devtools.timeline", "v8", "v8.execute", "blink.user_timing", "loading",
                  "disabled-by-default-devtools.timeline"]

    def __init__(self, cdp, browser=None, js: bool = False) -> None:
        self.cdp, self.ws_bytes, self.ws_frames = cdp, 0, 0
        self.browser = browser  # with a browser: also a trace of the main thread's events
        self.js = js  # the sampling profiler (its start costs the main thread 0.2-1 s a step)
        cdp.send("Network.enable")
        cdp.on("Network.webSocketFrameReceived", self._frame)
        if js:
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 500})

    def _frame(self, event: dict) -> None:
        data = event["response"].get("payloadData", "")
        binary = event["response"].get("opcode") == 2  # base64 in the event
        self.ws_bytes += len(data) * 3 // 4 if binary else len(data)
        self.ws_frames += 1

    def start(self, page) -> None:
        page.evaluate(MARK_PLOTS)
        self.ws_bytes = self.ws_frames = 0
        if self.browser is not None:
            self.browser.start_tracing(page=page, categories=self.CATEGORIES)
        if self.js:
            self.cdp.send("Profiler.start")

    def stop(self, page) -> dict:
        profile = self.cdp.send("Profiler.stop")["profile"] if self.js else {"nodes": []}
        url = {n["id"]: bundle(n["callFrame"].get("url", "")) if n["callFrame"].get("url")
               else n["callFrame"]["functionName"] or "(native)" for n in profile["nodes"]}
        js: dict[str, float] = {}
        for node, dt in zip(profile.get("samples", []), profile.get("timeDeltas", []), strict=True):
            js[url[node]] = js.get(url[node], 0.0) + dt / 1e6
        js.pop("(idle)", None)
        tasks = main_thread_self_times(self.browser.stop_tracing()) if self.browser else {}
        return {"js": dict(sorted(js.items(), key=lambda kv: -kv[1])), "tasks": tasks,
                "last_change_in": page.evaluate("window.__bb.lastIn || ''"),
                "ws_bytes": self.ws_bytes, "ws_frames": self.ws_frames,
                **page.evaluate(PAGE_COUNTS)}


def timed(page, log: ServerLog, page_title: str, what: str, kind: str, action,
          main: MainThread | None = None, trace: Trace | None = None) -> Step:
    """Do ``action`` (clicks, no waiting for the rerun) and time it until the page is idle
    (with ``trace``: what chromium did meanwhile, :class:`Trace`)."""
    log.since(time.time(), "run")  # skip what came before
    if trace:
        trace.start(page)
    before = main.now() if main else {}
    t0 = time.time()
    action()
    settle(page, timeout=600)
    end = quiet_since(page)
    drawn = {k: v - before[k] for k, v in main.now().items()} if main else {}
    traced = trace.stop(page) if trace else {}
    runs = log.since(t0, "run")
    server = sum(run_time(r) for r in runs) if runs else None
    ended = page.evaluate("window.__bb.idle") / 1000
    return Step(page_title, what, kind, max(end - t0, 0.0), server,
                sum(r["cpu"] for r in runs), len(runs), ended=max(ended - t0, 0.0),
                after=sum(r["t1"] - r["t0"] - run_time(r) for r in runs),
                lag=runs[0]["t0"] - t0 if runs else None,
                fragment=bool(runs) and all(r["fragment"] for r in runs), main=drawn,
                calls=[r["call"] for r in runs], trace=traced,
                problems=problems_on(page, f"{page_title}: {what}") + ([] if runs else [
                    f"{page_title}: {what}: no script run recorded (the option was the one "
                    "shown already, or the page ignored the change)"]))


def reveal(page, key: str) -> None:
    """Open the expander that holds the widget ``key`` if it is folded (no rerun)."""
    box = page.locator(f".st-key-{key}").first
    box.wait_for(state="attached", timeout=60_000)
    if not box.is_visible():
        page.locator('[data-testid="stExpander"]').filter(has=box).locator(
            "summary").first.click()
        box.wait_for(state="visible", timeout=10_000)


def change(page, key: str, kind: str, option: str | None):
    """The action setting widget ``key`` (:data:`JOURNEY`); the list of a selectbox is
    opened before the timing starts, so only the choice itself is timed."""
    reveal(page, key)
    box = page.locator(f".st-key-{key}").first
    if kind == "select":
        item = open_select(page, key, option)
        return item.click
    if kind == "radio":
        return box.get_by_text(option, exact=True).first.click
    return box.locator("label").first.click


def export(page, log: ServerLog, page_title: str, key: str, fmt: str, folder: Path) -> Step:
    """Click the figure's ``fmt`` download button: the time until the file has arrived, the
    kaleido render on the server, and whether the button showed a spinner."""
    button = page.locator(f".st-key-{key}_{fmt} button").first
    reveal(page, f"{key}_{fmt}")
    page.evaluate("window.__bb.spinners = []")
    log.since(time.time(), "export")
    t0 = time.time()
    with page.expect_download(timeout=300_000) as download:
        button.click()
    path = folder / download.value.suggested_filename
    download.value.save_as(path)
    browser = time.time() - t0
    spinners = page.evaluate("window.__bb.spinners")
    shown = any(f"st-key-{key}_{fmt}" in cls.split() for _, cls in spinners)
    renders = log.since(t0, "export")
    problems = [] if path.stat().st_size > 1000 else [f"{key}.{fmt}: {path.stat().st_size} B"]
    return Step(page_title, f"{key}.{fmt}", "export", browser,
                sum(r["t1"] - r["t0"] for r in renders) if renders else None,
                sum(r["cpu"] for r in renders), len(renders), spinner=shown,
                problems=problems + problems_on(page, f"{page_title}: {key}.{fmt}"))


def children_cpu() -> dict[str, float]:
    """CPU seconds so far (user + system) of this process's children and their descendants:
    ``browser`` the Playwright driver and its chromium, ``server`` the Streamlit server and
    kaleido's Chrome under it."""
    import psutil

    out = {"browser": 0.0, "server": 0.0}
    for child in psutil.Process().children():
        total = 0.0
        for proc in (child, *child.children(recursive=True)):
            try:
                times = proc.cpu_times()
            except psutil.Error:  # ended meanwhile
                continue
            total += times.user + times.system
        try:
            side = "browser" if child.name().startswith("node") else "server"
        except psutil.Error:
            continue
        out[side] += total
    return out


def subgroups_csv(page, folder: Path) -> pd.DataFrame:
    """The Subgroups table as its CSV button downloads it."""
    with page.expect_download(timeout=300_000) as download:
        page.locator(".st-key-subgroups_table_csv button").first.click()
    data = Path(download.value.path()).read_bytes()
    return pd.read_csv(io.BytesIO(data))


#: Tables from this many rows get the app's load-time job (``ui.table_job.EARLY_COUNT_ROWS``).
LOAD_JOB_ROWS = 200_000


def wait_for_load_job(jobs: ServerLog, t0: float, rows: int) -> list[dict]:
    """Wait until the load-time job submitted since ``t0`` (the upload) has finished, and
    every other background job begun meanwhile (the structure inference whose suggested
    design the job is keyed by): their records, in order (none for a table too small to
    have a load-time job; an error when a large table's job never started)."""
    if rows < LOAD_JOB_ROWS:
        return []
    deadline, found = time.monotonic() + 120, []
    while not any(r.get("what") == "coverage" for r in found):
        found += jobs.since(t0, "job")
        if time.monotonic() > deadline:
            raise SystemExit("FAILED: no load-time job ran after the upload of "
                             f"{rows:,} rows (ui/table_job.py)")
        time.sleep(0.1)
    return found


def journey(parquet: Path, rows: int, pages: list[str], folder: Path, verbose: bool,
            wait_job: bool = False, label: str = "", profile: Path | None = None,
            trace: str | None = None) -> tuple[list[Step], pd.DataFrame | None, dict[str, float]]:
    """The whole journey on ``parquet`` (``rows`` rows) with a fresh server and browser:
    its steps, the Subgroups numbers (:func:`numbers_of` its CSV) and the CPU seconds of the
    server's and the browser's processes from the load to the end (``load1``/``load5``:
    the machine's load average at the journey's end). ``wait_job``: open the pages only
    once the load-time job has finished (:func:`wait_for_load_job`; printed). ``profile``:
    a folder where the server writes each script run's ``cProfile`` statistics
    (:func:`print_profiles`). ``trace``: record what chromium did in each step
    (:class:`Trace`; "js" with the JavaScript profiler; the recording adds to the browser
    times)."""
    from playwright.sync_api import sync_playwright

    log_path = folder / f"server_{rows}{label}.jsonl"
    log, jobs = ServerLog(log_path), ServerLog(log_path)  # (each reads the file on its own)
    python_path = os.pathsep.join([str(TIMING), str(ROOT),
                                   *filter(None, [os.environ.get("PYTHONPATH")])])
    steps: list[Step] = []
    numbers = None

    def keep(step: Step) -> None:
        steps.append(step)
        if verbose:
            server = "-" if step.server is None else f"{step.server:6.3f}"
            more = "" if step.ended is None else (
                f" (run began {step.lag or 0:.3f} s, seen over {step.ended:.3f} s; "
                f"cleanup after it {step.after:.3f} s{', fragment' if step.fragment else ''})")
            if step.main:
                more += (f"; chromium main thread busy {step.main['busy']:.3f} s (JS "
                         f"{step.main['script']:.3f}, layout {step.main['layout']:.3f}, style "
                         f"{step.main['style']:.3f})")
            if step.trace:
                more += "\n      " + traced(step.trace)
            if step.spinner is not None:
                more = f" spinner {'yes' if step.spinner else 'NO'}"
            print(f"    {step.page:18s} {step.what:48s} server {server} s ({step.runs} calls, "
                  f"{step.server_cpu:5.2f} s CPU)  browser {step.browser:6.3f} s{more}",
                  flush=True)

    with running_app(free_port(), BIAS_WORKBENCH_STATE_DIR=str(folder / f"state_{rows}{label}"),
                     BIAS_BENCH_RUN_LOG=str(log_path), PYTHONPATH=python_path,
                     **({"BIAS_BENCH_PROFILE": str(profile)} if profile else {})) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000},
                                    accept_downloads=True)
            page.add_init_script(OBSERVER)
            main = MainThread(page)
            tracer = Trace(main.cdp, browser, js=trace == "js") if trace else None
            page.goto(url, wait_until="domcontentloaded")
            page.get_by_text("35,868").first.wait_for(timeout=120_000)  # opens on the sample
            settle(page)
            if not log.since(0, "run"):
                raise SystemExit("FAILED: the server recorded no script run: the timing "
                                 f"hook ({TIMING / 'sitecustomize.py'}) was not loaded")
            page.get_by_text("Upload a file", exact=True).click()
            settle(page)
            cpu0 = children_cpu()
            uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')

            def load() -> None:
                uploader.set_input_files(str(parquet))
                page.locator('[data-testid="stMarkdownContainer"]').filter(
                    has_text="Active table").filter(has_text=parquet.name).first.wait_for(
                    timeout=600_000)  # the sample's row count was already shown
                page.locator('[data-testid="stMetricValue"]').filter(
                    has_text=f"{rows:,}").first.wait_for(timeout=60_000)

            t_load = time.time()
            keep(timed(page, log, "Data", f"load {parquet.name}", "load", load, main, tracer))
            if wait_job:
                ran = wait_for_load_job(jobs, t_load, rows)
                print("  background jobs since the upload: " + ", ".join(
                      f"{r['what']} {r['t0'] - t_load:.1f}-{r['t1'] - t_load:.1f} s"
                      for r in ran) + f"; the pages open {time.time() - t_load:.1f} s after "
                      f"the upload; load average {os.getloadavg()[0]:.1f}", flush=True)
            for title in pages:
                keep(timed(page, log, title, "first render", "first",
                           lambda t=title: (nav_link(page, t).click(),
                                            page.get_by_role("heading", name=t).first
                                            .wait_for(timeout=600_000)), main, tracer))
                if title == "Subgroups":
                    numbers = numbers_of(subgroups_csv(page, folder))
                for key, kind, option in JOURNEY[title]:
                    try:
                        action = change(page, key, kind, option)
                    except Exception as exc:  # noqa: BLE001 - reported, the run fails
                        steps.append(Step(title, key, "change", float("nan"), None, 0, 0,
                                          problems=[f"{title}: {key} not driven: "
                                                    f"{type(exc).__name__}: {str(exc)[:200]}"]))
                        continue
                    keep(timed(page, log, title, f"{kind} {key} -> {option or 'click'}",
                               "change", action, main, tracer))
                for where, key, fmt in EXPORTS:
                    if where == title:
                        keep(export(page, log, title, key, fmt, folder))
            cpu = {k: v - cpu0[k] for k, v in children_cpu().items()}
            cpu["load1"], cpu["load5"] = os.getloadavg()[:2]
        finally:
            browser.close()
    return steps, numbers, cpu


def traced(t: dict) -> str:
    """One step's :class:`Trace`, on one line."""
    js = ", ".join(f"{k} {v:.3f}" for k, v in list(t["js"].items())[:5])
    figs = "; ".join(f"{f['key'] or '?'} {f['json'] / 1e3:.1f} kB {f['traces']} traces "
                     f"{f['points']} points{' NEW' if f['fresh'] else ''}" for f in t["figures"])
    tasks = ", ".join(f"{k} {v:.3f}" for k, v in list(t.get("tasks", {}).items())[:8])
    return ((f"JS s by bundle: {js} | " if js else "")
            + f"main thread by event: {tasks} | websocket {t['ws_bytes'] / 1e3:.1f} kB in "
            f"{t['ws_frames']} frames | {t['nodes']} DOM nodes, {t['elements']} elements, "
            f"{t['frames']} dataframes, {t['plots']} charts ({t['new_plots']} mounted anew), "
            f"last DOM change in {t.get('last_change_in') or '?'}"
            + (f": {figs}" if figs else ""))


def print_traces(steps: list[Step], title: str) -> None:
    """Per page, the first render and the widget changes (their sum) as :class:`Trace`
    recorded them: JavaScript by bundle, websocket bytes, charts mounted anew, DOM nodes."""
    print(f"\n--- what chromium did ({title}; --trace; seconds of the main thread) ---")
    for page in dict.fromkeys(s.page for s in steps if s.trace):
        for kind in ("first", "change"):
            these = [s for s in steps if s.page == page and s.kind == kind and s.trace]
            if not these:
                continue
            js: dict[str, float] = {}
            tasks: dict[str, float] = {}
            for s in these:
                for k, v in s.trace["js"].items():
                    js[k] = js.get(k, 0.0) + v
                for k, v in s.trace.get("tasks", {}).items():
                    tasks[k] = tasks.get(k, 0.0) + v
            events = ", ".join(f"{k} {v:.2f}"
                               for k, v in sorted(tasks.items(), key=lambda kv: -kv[1])[:8])
            top = ", ".join(f"{k} {v:.2f}"
                            for k, v in sorted(js.items(), key=lambda kv: -kv[1])[:5])
            last = these[-1].trace
            figs = ", ".join(f"{f['key'] or '?'} {f['json'] / 1e3:.0f} kB" for f in last["figures"])
            print(f"{page:18s} {kind:6s} x{len(these)}: browser "
                  f"{sum(s.browser for s in these):5.2f} s,"
                  f" main thread {sum(s.main.get('busy', 0) for s in these):5.2f} s; "
                  + (f"JS {top}; " if top else "") +
                  f"websocket {sum(s.trace['ws_bytes'] for s in these) / 1e3:.0f} kB; charts "
                  f"mounted anew {sum(s.trace['new_plots'] for s in these)}; DOM nodes "
                  f"{last['nodes']}, dataframes {last['frames']}; figures {figs or '-'}"
                  + (f"\n{'':27s} main thread by event: {events}" if events else ""))


def print_profiles(steps: list[Step], profile: Path, lines: int = 25) -> None:
    """Per first render, the project's functions (``analysis/``, ``ui/``, ``pages/``) that
    took the most of its script runs, by cumulative time (``cProfile``)."""
    import pstats

    for step in steps:
        files = [profile / f"run_{c}.pstats" for c in step.calls]
        files = [str(f) for f in files if f.exists()]
        if step.kind != "first" or not files:
            continue
        out = io.StringIO()
        stats = pstats.Stats(*files, stream=out)
        stats.sort_stats("cumulative").print_stats(r"/(analysis|ui|pages)/", lines)
        body = out.getvalue()
        print(f"\n--- profile: {step.page} first render ({len(files)} runs) ---\n"
              + body[body.find("   ncalls"):].rstrip())


def profile_dir(profile: str | None, folder: Path, name: str) -> Path | None:
    """The folder of a journey's profiles (``--profile [DIR]``), made; None without."""
    if profile is None:
        return None
    out = (Path(profile) if profile else folder) / f"profile_{name}"
    out.mkdir(parents=True, exist_ok=True)
    return out


def p95(values: list[float]) -> float:
    return float(np.quantile(values, 0.95)) if values else float("nan")


def pair(server: float | None, browser: float) -> str:
    """``server / browser`` seconds."""
    return f"{'-' if server is None else f'{server:.2f}'} / {browser:.2f}"


def _of(steps: list[Step] | None, page: str, kind: str) -> list[Step]:
    return [s for s in steps or [] if s.page == page and s.kind == kind
            and not np.isnan(s.browser)]


def _server(s: Step) -> float:
    return s.server or 0.0


def _browser(s: Step) -> float:
    return s.browser


def report(big: list[Step], small: list[Step] | None, rows: int,
           cpu: dict[int, dict[str, float]], base_rows: int = 35_868, label: str = "") -> None:
    """The table per page (server / browser seconds), then each journey against the
    targets (``label``: how the large journey was run; ``cpu``: by rows, each journey's
    CPU seconds and load average, see :func:`journey`)."""
    pages = list(dict.fromkeys(s.page for s in big if s.kind in ("first", "change")))
    if label:
        print(f"\n=== {rows:,} rows {label} vs {base_rows:,} rows (load average at the "
              f"journeys' ends: {cpu[rows]['load1']:.1f} / "
              f"{cpu.get(base_rows, {}).get('load1', float('nan')):.1f}) ===")
    print(f"\n{'page':18s} {'first render':>27s} {'ratio':>11s}   "
          f"{'widget changes p95':>27s}")
    base = f"{base_rows:,}" if small else "(none)"
    print(f"{'':18s} {f'{rows:,}':>13s} {base:>13s} {'':>11s}   {f'{rows:,}':>13s} "
          f"{base:>13s}   (server / browser, s; first render's server CPU s: large, base, "
          f"ratio)")
    for page in pages:
        fb, fs = _of(big, page, "first"), _of(small, page, "first")
        cb, cs = _of(big, page, "change"), _of(small, page, "change")
        ratio = (f"{_server(fb[0]) / max(_server(fs[0]), 1e-3):.2f} / "
                 f"{fb[0].browser / fs[0].browser:.2f}" if fb and fs else "-")
        cells = [pair(f[0].server, f[0].browser) if f else "-" for f in (fb, fs)]
        cells += [pair(p95([_server(s) for s in c]), p95([s.browser for s in c])) if c
                  else "-" for c in (cb, cs)]
        cpu_ratio = (f"CPU {fb[0].server_cpu:.2f} {fs[0].server_cpu:.2f} "
                     f"{fb[0].server_cpu / max(fs[0].server_cpu, 1e-3):.2f}"
                     if fb and fs else "")
        print(f"{page:18s} {cells[0]:>13s} {cells[1]:>13s} {ratio:>11s}   {cells[2]:>13s} "
              f"{cells[3]:>13s}   {len(cb)} changes  {cpu_ratio}")

    for n, steps in ((rows, big), (base_rows, small)):
        if not steps:
            continue
        load = [s for s in steps if s.kind == "load"]
        first = [s for s in steps if s.kind == "first"]
        changes = [s for s in steps if s.kind == "change" and not np.isnan(s.browser)]
        print(f"\n{n:,} rows:")
        if load:
            print(f"  load (upload -> row count shown): {pair(load[0].server, load[0].browser)} s")
        for side, get in (("server", _server), ("browser", _browser)):
            worst = max(first, key=get)
            met = "met" if get(worst) < FIRST_RENDER else "MISSED"
            print(f"  first render, {side:7s}: slowest {get(worst):.3f} s ({worst.page}), "
                  f"{sum(get(s) < FIRST_RENDER for s in first)}/{len(first)} pages < "
                  f"{FIRST_RENDER:g} s   target: every page: {met}")
            if changes:
                q = p95([get(s) for s in changes])
                print(f"  widget changes, {side:7s}: p95 {q:.3f} s over {len(changes)} "
                      f"(max {max(map(get, changes)):.3f} s)   target < {WIDGET_P95:g} s: "
                      f"{'met' if q < WIDGET_P95 else 'MISSED'}")
        exports = [s for s in steps if s.kind == "export"]
        if exports:
            later = exports[1:]
            slow = max((s.browser for s in later), default=float("nan"))
            head = exports[0]
            print(f"  exports: first ({head.what}) {pair(head.server, head.browser)} s")
            print("  after it: " + ", ".join(f"{s.what} {pair(s.server, s.browser)}"
                                             for s in later)
                  + f" s   target < {EXPORT_AFTER_FIRST:g} s: "
                  f"{'met' if slow < EXPORT_AFTER_FIRST else 'MISSED'}")
            no_spin = [s.what for s in exports if not s.spinner]
            print(f"  a spinner on {len(exports) - len(no_spin)}/{len(exports)} export buttons"
                  + (f" (none on {', '.join(no_spin)})" if no_spin else ""))
        busy = [s.main for s in steps if s.main]
        if busy:
            print(f"  chromium's main thread over the timed steps: busy "
                  f"{sum(b['busy'] for b in busy):.1f} s (JS {sum(b['script'] for b in busy):.1f}"
                  f" s, layout {sum(b['layout'] for b in busy):.1f} s, style "
                  f"{sum(b['style'] for b in busy):.1f} s); the script runs "
                  f"{sum(_server(s) for s in steps if s.kind != 'export'):.1f} s")
        print(f"  CPU over the journey: the script runs and exports "
              f"{sum(s.server_cpu for s in steps):.1f} s; processes: the server (with "
              f"kaleido's Chrome) {cpu[n]['server']:.1f} s, chromium {cpu[n]['browser']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pages", default=",".join(JOURNEY),
                        help="analysis pages, by their titles in the navigation")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the same journey on the baseline table")
    parser.add_argument("--baseline", choices=("spread", "sample"), default="spread",
                        help="spread (the default): --baseline-rows rows of the sample, every "
                             "row of evenly spaced example ids; sample: the whole sample "
                             "(35,868 rows; the Subgroups numbers are checked against it)")
    parser.add_argument("--baseline-rows", type=int, default=10_000,
                        help="rows of the spread baseline (issue 44: 10k)")
    parser.add_argument("--load-job", choices=("both", "now", "after"), default="both",
                        help="the large journey opens the pages right after the upload "
                             "(now), once the load-time job has finished (after), or is run "
                             "both ways (the default)")
    parser.add_argument("--verbose", action="store_true", help="print every step")
    parser.add_argument("--trace", nargs="?", const="events", default=None,
                        choices=("events", "js"),
                        help="record what chromium does in each step (its main thread by "
                             "trace event, websocket bytes, charts mounted anew, DOM nodes, "
                             "figure JSON sizes; 'js': also JavaScript by frontend bundle, "
                             "whose profiler costs 0.2-1 s a step) and print it per page; the "
                             "recording adds to the browser times")
    parser.add_argument("--profile", nargs="?", const="", default=None, metavar="DIR",
                        help="profile the server's script runs (cProfile; slower) and print, "
                             "per first render, the project's functions that took the most; "
                             "with DIR the statistics (run_<call>.pstats) are kept there")
    args = parser.parse_args()
    pages = args.pages.split(",")
    unknown = sorted(set(pages) - set(JOURNEY))
    if unknown:
        parser.error(f"unknown pages {unknown}: choose among {list(JOURNEY)}")
    if not Path(CHROMIUM).exists():
        parser.error(f"needs Debian's chromium at {CHROMIUM}")

    sample = pd.read_csv(ROOT / "sample_data" / SAMPLE)
    copies = max(1, round(args.rows / len(sample)))
    base = sample if args.baseline == "sample" else spread(sample, args.baseline_rows)
    with tempfile.TemporaryDirectory(prefix="browser_journey_") as tmp:
        folder = Path(tmp)
        small_file = folder / f"bbq_unifiedqa_{len(base)}.parquet"
        big_file = folder / f"bbq_unifiedqa_x{copies}.parquet"
        base.to_parquet(small_file, index=False)
        tiled(sample, copies * len(sample)).to_parquet(big_file, index=False)
        rows = copies * len(sample)
        what = ("the sample" if base is sample
                else f"{args.baseline_rows:,} rows spread over the sample's example ids")
        baseline = "no baseline" if args.no_baseline else f"baseline: {len(base):,} rows ({what})"
        print(f"{rows:,} rows (BBQ sample x {copies}), Parquet "
              f"{big_file.stat().st_size / 1e6:.1f} MB; {baseline}; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        small, c_small, cpu = None, None, {}
        if not args.no_baseline:
            if args.verbose:
                print(f"  journey on the baseline ({len(base):,} rows)", flush=True)
            profile = profile_dir(args.profile, folder, "base")
            small, c_small, cpu[len(base)] = journey(small_file, len(base), pages, folder,
                                                     args.verbose, profile=profile,
                                                     trace=args.trace)
            if profile:
                print(f"  profiles of the baseline's first renders ({len(base):,} rows)")
                print_profiles(small, profile)
        modes = ["now", "after"] if args.load_job == "both" else [args.load_job]
        bigs = {}
        for mode in modes:
            label = ("opened right after the upload" if mode == "now"
                     else "opened once the load-time job finished")
            print(f"  journey at {rows:,} rows, {label}; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            profile = profile_dir(args.profile, folder, mode)
            big, c_big, c = journey(big_file, rows, pages, folder, args.verbose,
                                    wait_job=mode == "after", label=f"_{mode}",
                                    profile=profile, trace=args.trace)
            if profile:
                print(f"  profiles of the first renders at {rows:,} rows, {label}")
                print_profiles(big, profile)
            bigs[label] = (big, c_big, c)
        print(f"load average at the end {os.getloadavg()[0]:.1f}", flush=True)
    failures = [p for s in small or [] for p in s.problems]
    for label, (big, c_big, c) in bigs.items():
        report(big, small, rows, {**cpu, rows: c}, base_rows=len(base), label=label)
        if args.trace:
            for title, steps in ((f"{rows:,} rows {label}", big), (f"{len(base):,} rows", small)):
                if steps:
                    print_traces(steps, title)
        failures += [p for s in big for p in s.problems]
        if "Subgroups" in pages and not args.no_baseline and base is sample:
            if copies_agree(c_small, c_big, copies):
                print(f"\nSubgroups table (its CSV download) at {rows:,} rows: the sample's "
                      f"{len(c_small)} subgroups, n x {copies}, the same deviation rates: ok")
            else:
                failures.append(f"subgroups: the table downloaded at {rows:,} rows ({label}) "
                                f"is not the sample's with n x {copies}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
