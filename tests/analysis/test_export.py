"""Figure and table export (analysis/export.py): every format's bytes, and no-browser paths."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import analysis.export as export
from analysis.errors import AnalysisError
from analysis.export import ExportUnavailable, browser_available, figure_bytes, write_figure

needs_browser = pytest.mark.skipif(not browser_available(),
                                   reason="PNG/SVG/PDF export needs chromium for kaleido")
MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF"}


@pytest.fixture(scope="module")
def fig() -> go.Figure:
    return go.Figure(go.Heatmap(z=[[1, 0], [3, 4]], x=["p", "q"], y=["x", "y"]),
                     layout={"title": {"text": "export check"}})


@pytest.mark.browser
@needs_browser
@pytest.mark.parametrize("fmt", ["png", "pdf"])
def test_binary_formats_start_with_their_magic_bytes(fig, fmt):
    assert figure_bytes(fig, fmt).startswith(MAGIC[fmt])


@pytest.mark.browser
@needs_browser
def test_svg_is_an_svg_document(fig):
    text = figure_bytes(fig, "svg").decode("utf-8")
    assert text.lstrip().startswith("<svg") and text.rstrip().endswith("</svg>")
    assert "export check" in text


@pytest.mark.browser
@needs_browser
def test_png_has_the_export_size(fig):
    import struct

    png = figure_bytes(fig, ".PNG")  # extension-like and upper case accepted
    width, height = struct.unpack(">II", png[16:24])  # IHDR
    assert (width, height) == (export.EXPORT_WIDTH * export.EXPORT_SCALE,
                               export.EXPORT_HEIGHT * export.EXPORT_SCALE)


def test_html_is_standalone_with_plotly_inlined(fig):
    html = figure_bytes(fig, "html").decode("utf-8")
    assert html.lower().lstrip().startswith(("<!doctype html>", "<html>"))
    assert "</html>" in html and "export check" in html
    assert "plotly.js" in html.lower() or "Plotly.newPlot" in html
    assert not re.search(r"<script[^>]*\bsrc=", html)  # offline: the library is inlined
    assert len(html) > 1_000_000


def test_without_a_browser_images_raise_and_html_still_works(fig, monkeypatch, tmp_path):
    monkeypatch.setattr(export, "browser_available", lambda: False)
    for fmt in ("png", "svg", "pdf"):
        with pytest.raises(ExportUnavailable, match="apt-get install chromium"):
            figure_bytes(fig, fmt)
    with pytest.raises(ExportUnavailable):
        write_figure(fig, tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()
    assert b"export check" in write_figure(fig, tmp_path / "f.html").read_bytes()
    assert issubclass(ExportUnavailable, AnalysisError)


def test_kaleido_browser_errors_become_export_unavailable(fig, monkeypatch):
    monkeypatch.setattr(export, "browser_available", lambda: True)
    monkeypatch.setattr(export, "_ensure_server", lambda: None)

    def boom(*args, **kwargs):
        raise RuntimeError("Kaleido requires Google Chrome to be installed.")

    monkeypatch.setattr(go.Figure, "to_image", boom)
    with pytest.raises(ExportUnavailable, match="chromium"):
        figure_bytes(fig, "png")


def test_unknown_formats_are_refused(fig, tmp_path):
    with pytest.raises(AnalysisError, match="Unknown figure format 'jpg'"):
        figure_bytes(fig, "jpg")
    with pytest.raises(AnalysisError, match="figure files end in .png, .svg, .pdf, .html"):
        write_figure(fig, tmp_path / "figure.gif")


def test_table_bytes_round_trip():
    table = pd.DataFrame({"stigma": ["no stigma", "a, b"], "n": [3, 0], "share": [0.5, None]})
    data = export.table_bytes(table)
    assert data.decode("utf-8").splitlines()[0] == "stigma,n,share"
    back = pd.read_csv(io.BytesIO(data))
    assert back["stigma"].tolist() == ["no stigma", "a, b"]
    assert back["n"].tolist() == [3, 0] and back["share"].isna().tolist() == [False, True]


def _coefficient_plot(n_terms: int = 52):
    """A coefficient plot of ``n_terms`` terms (the paper's figure has 52)."""
    from analysis.columns import (
        CI_HIGH,
        CI_LOW,
        COEF,
        COEF_CI_HIGH,
        COEF_CI_LOW,
        DEVIATIONS,
        EFFECT,
        FACTOR,
        ODDS_RATIO,
        P_VALUE,
        TERM,
        VALUE,
        N,
    )
    from analysis.figures.importance import importance_figure

    rng = np.random.default_rng(0)
    coef = rng.normal(0, 0.5, n_terms)
    terms = pd.DataFrame({
        TERM: [f"f{i // 8}[v{i}]" for i in range(n_terms)],
        FACTOR: [f"factor_{i // 8}" for i in range(n_terms)],
        VALUE: [f"level {i:02d}" for i in range(n_terms)],
        COEF: coef, COEF_CI_LOW: coef - 0.3, COEF_CI_HIGH: coef + 0.3,
        ODDS_RATIO: np.exp(coef), CI_LOW: np.exp(coef - 0.3), CI_HIGH: np.exp(coef + 0.3),
        P_VALUE: 0.01, EFFECT: np.where(coef > 0, "risk", "protective"), N: 100,
        DEVIATIONS: 40})
    return importance_figure(terms), [f"factor_{i // 8} = level {i:02d}"
                                      for i in range(n_terms)]


def test_export_size_grows_with_the_labels():
    fig, labels = _coefficient_plot()
    width, height = export.export_size(fig)
    assert width == export.EXPORT_WIDTH
    assert height >= 52 * export.LABEL_PX and height >= fig.layout.height
    # a plain bar chart with 80 categories on x and no layout size
    bars = go.Figure(go.Bar(x=[f"c{i}" for i in range(80)], y=list(range(80))))
    assert export.export_size(bars) == (80 * export.LABEL_PX + export.MARGIN_PX,
                                        export.EXPORT_HEIGHT)
    small = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    assert export.export_size(small) == (export.EXPORT_WIDTH, export.EXPORT_HEIGHT)


@pytest.mark.browser
@needs_browser
def test_every_term_of_a_52_term_plot_is_in_the_svg():
    import html

    fig, labels = _coefficient_plot()
    svg = html.unescape(figure_bytes(fig, "svg").decode("utf-8"))
    missing = [lab for lab in labels if f">{lab}<" not in svg]
    assert not missing, f"{len(missing)} of 52 labels not drawn, e.g. {missing[:3]}"
