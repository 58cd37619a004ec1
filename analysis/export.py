"""Figures and tables out: PNG, SVG, PDF (through kaleido and a Chrome) and HTML, CSV.

kaleido >= 1 drives a headless Chrome (Debian's ``chromium`` is found on its own).
Starting one costs ~3 s, so the first image export starts a browser that stays up for
the life of the process and later exports take ~0.2 s. Without a browser the image
formats raise :class:`ExportUnavailable` with the install hint, while HTML and CSV keep
working (they need nothing beyond plotly and pandas).

:func:`warm_up` starts that browser (and renders a one-point figure) in a background
thread, so that a command or page that will export pays for the start-up while it
computes; :func:`figures_bytes` renders many figures and formats in one call to kaleido
(docs/performance.md).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from analysis.errors import AnalysisError
from analysis.install import has_module, install_command
from analysis.safe_write import atomic_write_bytes, check_output_path, csv_bytes

__all__ = [
    "EXPORT_HEIGHT", "EXPORT_SCALE", "EXPORT_WIDTH", "ExportUnavailable", "FIGURE_FORMATS",
    "IMAGE_FORMATS", "INSTALL_HINT", "ImageFormat", "LABEL_PX", "MARGIN_PX", "MAX_EXPORT_PX",
    "MIME", "browser_available", "export_size", "figure_bytes", "figures_bytes", "table_bytes",
    "unavailable_reason", "warm_up", "write_figure"
]


ImageFormat = Literal["png", "svg", "pdf"]
IMAGE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
FIGURE_FORMATS: tuple[str, ...] = (*IMAGE_FORMATS, "html")
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf",
        "html": "text/html", "csv": "text/csv"}
#: Size of exported images in CSS pixels (scale 2 gives 300-dpi-like PNGs at paper width):
#: the least size; :func:`export_size` grows it to fit the figure's labels.
EXPORT_WIDTH, EXPORT_HEIGHT, EXPORT_SCALE = 1000, 650, 2
#: Pixels per category label (a 12-px font needs ~15 px or plotly drops every other label),
#: room for title, legend and axis titles, and the largest side exported.
LABEL_PX, MARGIN_PX, MAX_EXPORT_PX = 24, 220, 12_000
INSTALL_HINT = ("Image export needs a Chrome or Chromium browser for kaleido: on Debian/Ubuntu "
                "`apt-get install chromium`. HTML and CSV downloads work without it.")
KALEIDO_HINT = (f"Image export needs the kaleido package, which is not installed: "
                f"{install_command('figures')}. HTML and CSV downloads work without it.")

_lock = threading.Lock()
_server_started = False
_warming = False


class ExportUnavailable(AnalysisError):
    """PNG/SVG/PDF export is not possible here (no browser for kaleido)."""


def browser_available() -> bool:
    """Whether a Chrome/Chromium that kaleido can drive is on this machine."""
    return any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome",
                                         "chrome"))


def unavailable_reason() -> str | None:
    """Why PNG/SVG/PDF export cannot work here (no kaleido, no browser), or ``None``."""
    if not has_module("kaleido"):
        return KALEIDO_HINT
    return None if browser_available() else INSTALL_HINT


def _ensure_server() -> None:
    global _server_started
    if _server_started:
        return
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    _server_started = True


def warm_up() -> bool:
    """Start the export browser in the background; return at once.

    A daemon thread starts kaleido's server and renders a one-point PNG, so that the
    first real export does not wait ~3-8 s for Chrome and plotly.js. Exports asked for
    meanwhile wait for it (one export at a time). Does nothing without a browser, when
    the server is already up, or when kaleido cannot start (the export itself then says
    why).

    Returns
    -------
    bool
        Whether a warm-up thread was started.
    """
    global _warming
    if _server_started or _warming or unavailable_reason():
        return False
    _warming = True

    def run() -> None:
        global _warming
        try:
            import plotly.graph_objects as go

            figure_bytes(go.Figure(go.Scatter(x=[0], y=[0])), "png")
        except Exception:  # noqa: BLE001, S110 - the real export reports the problem
            pass
        finally:
            _warming = False

    threading.Thread(target=run, name="figure-export-warm-up", daemon=True).start()
    return True


def _category_count(values) -> int:
    """Distinct category labels (strings) among a trace's x or y values; 0 if numeric."""
    if values is None:
        return 0
    try:
        items = list(values)
    except TypeError:
        return 0
    labels = {v for v in items if isinstance(v, str)}
    return len(labels) if labels and len(labels) * 2 >= len(set(map(str, items))) else 0


def export_size(fig) -> tuple[int, int]:
    """Width and height (CSS px) at which every category label of ``fig`` is drawn.

    The layout's own ``width`` / ``height`` when set (figure builders size themselves to
    their terms, e.g. the coefficient plot), else at least :data:`EXPORT_WIDTH` x
    :data:`EXPORT_HEIGHT`; either side grows with the number of category labels on the
    axes (``LABEL_PX`` each plus ``MARGIN_PX``), so a 52-term coefficient plot exports all
    52 labels. Capped at ``MAX_EXPORT_PX``.
    """
    n_y = max([_category_count(getattr(t, "y", None)) for t in fig.data] + [0])
    n_x = max([_category_count(getattr(t, "x", None)) for t in fig.data] + [0])
    height = max(fig.layout.height or EXPORT_HEIGHT, n_y * LABEL_PX + MARGIN_PX)
    width = max(fig.layout.width or EXPORT_WIDTH, n_x * LABEL_PX + MARGIN_PX)
    return int(min(width, MAX_EXPORT_PX)), int(min(height, MAX_EXPORT_PX))


def figure_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG, SVG, PDF or standalone HTML (plotly.js inlined) bytes.

    Raises
    ------
    ExportUnavailable
        An image format was asked for and no browser can render it.
    AnalysisError
        An unknown format.
    """
    return figures_bytes([(fig, fmt)])[0]


def _image_format(fmt: str) -> str:
    fmt = fmt.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise AnalysisError(f"Unknown figure format {fmt!r}: use one of "
                            f"{', '.join(FIGURE_FORMATS)}.")
    return fmt


def figures_bytes(items: Sequence[tuple[Any, str]]) -> list[bytes]:
    """Many figures at once: ``[(fig, "png"), (fig, "svg"), (other, "pdf"), ...]`` ->
    their bytes, in order, as :func:`figure_bytes` gives each.

    The image formats go to kaleido in one batch (one call to its server; the next render
    is queued while kaleido reloads the tab of the previous one). With the server's one
    tab this is about as fast as one call each on a busy 2-core machine (0.64-1.1x in
    ``benchmarks/bench_export.py``); with ``start_sync_server(n=2)`` 1.2-1.7x.

    Raises
    ------
    ExportUnavailable
        An image format was asked for and no browser can render it.
    AnalysisError
        An unknown format, or kaleido failed (the message names the format).
    """
    formats = [_image_format(fmt) for _, fmt in items]
    out: list[bytes | None] = [
        fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
        if fmt == "html" else None for (fig, _), fmt in zip(items, formats, strict=True)]
    images = [i for i, fmt in enumerate(formats) if fmt != "html"]
    if not images:
        return out  # type: ignore[return-value]
    reason = unavailable_reason()
    if reason:
        raise ExportUnavailable(reason)
    with _lock, tempfile.TemporaryDirectory(prefix="figures-") as tmp:  # one server
        try:
            _ensure_server()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sizes = [export_size(items[i][0]) for i in images]
                scales = [EXPORT_SCALE if formats[i] == "png" else 1 for i in images]
                if len(images) == 1:  # one figure: as before, plotly's to_image
                    (width, height), = sizes
                    out[images[0]] = items[images[0]][0].to_image(
                        format=formats[images[0]], width=width, height=height,
                        scale=scales[0])
                else:  # plotly's batch writer: one kaleido call for all of them
                    import plotly.io as pio

                    paths = [Path(tmp) / f"{i}.{formats[i]}" for i in images]
                    pio.write_images(fig=[items[i][0] for i in images], file=paths,
                                     format=[formats[i] for i in images],
                                     width=[w for w, _ in sizes],
                                     height=[h for _, h in sizes], scale=scales)
                    for i, path in zip(images, paths, strict=True):
                        if not path.is_file() or not path.stat().st_size:
                            # kaleido returns a failed render's error instead of raising
                            raise RuntimeError(f"no {formats[i]} image was written")
                        out[i] = path.read_bytes()
        except ExportUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - kaleido raises RuntimeError & co.
            if "chrome" in str(exc).lower() or "browser" in str(exc).lower():
                raise ExportUnavailable(f"{INSTALL_HINT} ({exc})") from None
            which = ", ".join(sorted({formats[i] for i in images}))
            raise AnalysisError(f"The figure could not be exported as {which}: {exc}"
                                ) from None
    return out  # type: ignore[return-value]


def write_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path``; the format comes from the extension."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise AnalysisError(f"{path}: figure files end in "
                            f"{', '.join('.' + f for f in FIGURE_FORMATS)}.")
    check_output_path(path)  # before rendering: a bad path fails fast
    return atomic_write_bytes(path, figure_bytes(fig, fmt))


def table_bytes(table: pd.DataFrame) -> bytes:
    """A table as UTF-8 CSV bytes (no index), formula-like text cells neutralised.

    See :func:`analysis.safe_write.neutralise_csv_cells`: a cell such as
    ``=HYPERLINK(...)`` is written as ``'=HYPERLINK(...)`` so a spreadsheet shows it as text.
    """
    return csv_bytes(table)
