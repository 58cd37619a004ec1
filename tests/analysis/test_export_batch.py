"""The warm exporter: figures_bytes batches, warm_up (issue #32; docs/performance.md)."""

from __future__ import annotations

import re
import struct

import plotly.graph_objects as go
import pytest

import analysis.export as export
from analysis.errors import AnalysisError
from analysis.export import ExportUnavailable, browser_available, figure_bytes, figures_bytes

needs_browser = pytest.mark.skipif(not browser_available(),
                                   reason="PNG/SVG/PDF export needs chromium for kaleido")


def figs() -> tuple[go.Figure, go.Figure]:
    bar = go.Figure(go.Bar(x=[f"term {i}" for i in range(30)], y=list(range(30))),
                    layout={"title": {"text": "thirty terms"}})
    heat = go.Figure(go.Heatmap(z=[[1, 0], [3, 4]]), layout={"width": 500, "height": 400})
    return bar, heat


def svg_shape(data: bytes) -> bytes:
    """plotly.js gives clip paths, gradients and traces random hex ids: one token."""
    return re.sub(rb"[0-9a-f]{6,}", b"ID", data)


@pytest.mark.browser
@needs_browser
def test_a_batch_gives_what_one_call_each_gives():
    bar, heat = figs()
    items = [(bar, "png"), (heat, "svg"), (bar, "html"), (heat, "PDF"), (heat, ".png"),
             (bar, "svg")]
    batch = figures_bytes(items)
    single = [figure_bytes(fig, fmt) for fig, fmt in items]
    assert batch[0] == single[0] and batch[4] == single[4]  # PNGs byte for byte
    assert svg_shape(batch[1]) == svg_shape(single[1])
    assert svg_shape(batch[5]) == svg_shape(single[5]) and b"thirty terms" in batch[5]
    uuid = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # the div's id
    assert re.sub(uuid, b"", batch[2]) == re.sub(uuid, b"", single[2])  # HTML: no browser
    assert b"thirty terms" in batch[2]
    assert batch[3].startswith(b"%PDF-")
    # sizes: the bar grows with its 30 labels (export_size), the heatmap keeps its layout
    assert struct.unpack(">II", batch[0][16:24]) == tuple(
        side * export.EXPORT_SCALE for side in export.export_size(bar))
    assert struct.unpack(">II", batch[4][16:24]) == (1000, 800)
    assert export.warm_up() is False  # the server is up: nothing to warm


def test_without_a_browser_a_batch_raises_and_html_alone_works(monkeypatch):
    monkeypatch.setattr(export, "browser_available", lambda: False)
    bar, heat = figs()
    with pytest.raises(ExportUnavailable, match="apt-get install chromium"):
        figures_bytes([(bar, "html"), (heat, "png")])
    html = figures_bytes([(bar, "html"), (heat, "html")])
    assert b"thirty terms" in html[0] and len(html) == 2
    assert figures_bytes([]) == []
    assert export.warm_up() is False  # nothing to start


def test_a_bad_format_is_refused_before_any_render(monkeypatch):
    monkeypatch.setattr(export, "_ensure_server", lambda: pytest.fail("rendered"))
    bar, _ = figs()
    with pytest.raises(AnalysisError, match="Unknown figure format 'gif'"):
        figures_bytes([(bar, "png"), (bar, "gif")])


def test_a_render_that_writes_nothing_is_an_error(monkeypatch):
    """kaleido hands a failed render's error back instead of raising: the missing file
    is caught and named, never returned as empty bytes."""
    import plotly.io as pio

    monkeypatch.setattr(export, "browser_available", lambda: True)
    monkeypatch.setattr(export, "_ensure_server", lambda: None)
    monkeypatch.setattr(pio, "write_images", lambda **kwargs: None)
    bar, heat = figs()
    with pytest.raises(AnalysisError, match="could not be exported as pdf, png: no png"):
        figures_bytes([(bar, "png"), (heat, "pdf")])

    def chrome_gone(**kwargs):
        raise RuntimeError("Kaleido requires Google Chrome to be installed.")

    monkeypatch.setattr(pio, "write_images", chrome_gone)
    with pytest.raises(ExportUnavailable, match="chromium"):
        figures_bytes([(bar, "png"), (heat, "pdf")])


_WARMED = """
import threading, kaleido, plotly.graph_objects as go
import analysis.export as export
assert not export._server_started
assert export.warm_up() is True and export.warm_up() is False  # one warm-up at a time
for t in threading.enumerate():
    if t.name == "figure-export-warm-up":
        t.join(120)
assert export._server_started and not export._warming
def refuse(*args, **kwargs):
    raise AssertionError("the export started a second server")
kaleido.start_sync_server = refuse  # the next export must use the warm one
png = export.figure_bytes(go.Figure(go.Bar(x=["a", "b"], y=[1, 2])), "png")
assert png.startswith(b"\\x89PNG") and len(png) > 1000
print("ready")
"""


@pytest.mark.browser
@needs_browser
def test_after_the_warm_up_the_exporter_is_ready():
    """A fresh process (no server of an earlier test): after :func:`warm_up`'s thread has
    run, kaleido's server is up and a real PNG export uses it (issue 44.4)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(export.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", _WARMED], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ready"
