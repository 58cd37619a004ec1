"""Figures and tables out: PNG, SVG, PDF (through kaleido and a Chrome) and HTML, CSV.

kaleido >= 1 drives a headless Chrome (Debian's ``chromium`` is found on its own).
Starting one costs ~3 s, so the first image export starts a browser that stays up for
the life of the process and later exports take ~0.2 s. Without a browser the image
formats raise :class:`ExportUnavailable` with the install hint, while HTML and CSV keep
working (they need nothing beyond plotly and pandas).
"""

from __future__ import annotations

import shutil
import threading
import warnings
from pathlib import Path
from typing import Literal

import pandas as pd

from analysis.errors import AnalysisError
from analysis.safe_write import atomic_write_bytes, check_output_path, csv_bytes

ImageFormat = Literal["png", "svg", "pdf"]
IMAGE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
FIGURE_FORMATS: tuple[str, ...] = (*IMAGE_FORMATS, "html")
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf",
        "html": "text/html", "csv": "text/csv"}
#: Size of exported images in CSS pixels (scale 2 gives 300-dpi-like PNGs at paper width).
EXPORT_WIDTH, EXPORT_HEIGHT, EXPORT_SCALE = 1000, 650, 2
INSTALL_HINT = ("Image export needs a Chrome or Chromium browser for kaleido: on Debian/Ubuntu "
                "`apt-get install chromium`. HTML and CSV downloads work without it.")

_lock = threading.Lock()
_server_started = False


class ExportUnavailable(AnalysisError):
    """PNG/SVG/PDF export is not possible here (no browser for kaleido)."""


def browser_available() -> bool:
    """Whether a Chrome/Chromium that kaleido can drive is on this machine."""
    return any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome",
                                         "chrome"))


def _ensure_server() -> None:
    global _server_started
    if _server_started:
        return
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    _server_started = True


def figure_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG, SVG, PDF or standalone HTML (plotly.js inlined) bytes.

    Raises
    ------
    ExportUnavailable
        An image format was asked for and no browser can render it.
    AnalysisError
        An unknown format.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt == "html":
        return fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
    if fmt not in IMAGE_FORMATS:
        raise AnalysisError(f"Unknown figure format {fmt!r}: use one of "
                            f"{', '.join(FIGURE_FORMATS)}.")
    if not browser_available():
        raise ExportUnavailable(INSTALL_HINT)
    with _lock:  # one kaleido server, one export at a time
        try:
            _ensure_server()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fig.to_image(format=fmt, width=EXPORT_WIDTH, height=EXPORT_HEIGHT,
                                    scale=EXPORT_SCALE if fmt == "png" else 1)
        except ExportUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - kaleido raises RuntimeError & co.
            if "chrome" in str(exc).lower() or "browser" in str(exc).lower():
                raise ExportUnavailable(f"{INSTALL_HINT} ({exc})") from None
            raise AnalysisError(f"The figure could not be exported as {fmt}: {exc}") from None


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
