"""Text from user data shown as text: Markdown and plotly labels escaped.

Labels, column names, values and file names come from uploaded files. Streamlit renders
Markdown in ``st.markdown``, ``st.caption``, ``st.error`` / ``warning`` / ``info`` /
``success`` and in widget labels, so a column named ``![px](http://host/x.png)`` would
make the browser fetch an outside address, and ``[click me](...)`` would become a link.
Plotly renders a subset of HTML in titles, tick labels, legends and hover text
(``<a href>`` included). The helpers here make such text inert:

* :func:`escape_markdown` backslash-escapes every ASCII punctuation character (CommonMark
  shows ``\\*`` as ``*``), so nothing in the text can start a link, image, emphasis,
  heading, list, HTML tag, math or an autolinked URL; line breaks stay line breaks.
* :func:`clean_controls` replaces control characters (tab and line breaks aside) and
  bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) with
  U+FFFD: one ``\x01`` in a label made every image export of its figure fail ("Error 525:
  plotly.js error"), and a right-to-left override showed labels reversed (issue 26).
  :func:`escape_markdown`, :func:`escape_html_label` (so every figure label) and the
  safe CSV writer (:mod:`analysis.safe_write`) apply it.
* :func:`escape_figure` HTML-escapes the strings in a figure's data (axis categories,
  trace names, sunburst labels and ids, hover text, custom data) and, in titles and
  annotations that mix our own ``<br>`` / ``<sup>`` markup with labels, every tag but
  a short list of harmless formatting tags. Plotly decodes ``&lt;`` back to ``<`` for
  display, so the labels read as they were written.

Plain Python (no Streamlit): the figure builders in :mod:`analysis.figures` apply
:func:`escape_figure` through :func:`escaped_labels`.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "F", "REPLACEMENT", "TRACE_TEXT_KEYS", "UNSAFE_CHARS", "clean_controls", "code_span",
    "escape_figure", "escape_html_label", "escape_markdown", "escaped_labels",
    "sanitise_markup", "trace_field",
]


#: Characters that can start Markdown anywhere in a line: links and images ``[``, HTML and
#: autolinks ``<``, emphasis ``* _ ~``, code, math ``$``, tables ``|``, Streamlit's
#: ``:color[...]`` (needs ``[``), e-mail autolinks ``@``, and the backslash itself. An
#: underscore inside a word (``prompt_style``) cannot emphasise and is left alone.
_MD_ANYWHERE = re.compile(r"([\\`*\[\]<>$|~@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
#: Bare URLs that GitHub-flavoured Markdown turns into links: break ``://`` and ``www.``.
_MD_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])(:)(?=//)|(?<=\bwww)(\.)", re.IGNORECASE)
#: Block markers at the start of a line: heading, quote, list, setext underline.
_MD_LINE_START = re.compile(r"^(?:[#+-](?=\s|$)|>|\d+[.)](?=\s|$)|[=-](?=[=\-\s]*$))")
#: Plotly's harmless formatting tags, kept in titles and annotations.
_SAFE_TAGS = re.compile(r"<(/?)(br|b|i|em|sup|sub|extra)\s*/?>", re.IGNORECASE)
#: Trace properties that hold data (labels): every string in them is escaped.
TRACE_TEXT_KEYS: tuple[str, ...] = ("x", "y", "z", "labels", "ids", "parents", "text",
                                    "hovertext", "name", "legendgroup", "customdata",
                                    "theta", "r")
F = TypeVar("F", bound=Callable[..., Any])
#: Control characters but tab, LF and CR; DEL and the C1 controls; bidirectional
#: embeddings, overrides and isolates.
UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def clean_controls(text: str) -> str:
    """``text`` with every :data:`UNSAFE_CHARS` character replaced by U+FFFD."""
    return UNSAFE_CHARS.sub(REPLACEMENT, text)


def escape_markdown(text: Any) -> str:
    """``text`` as Markdown that renders exactly as the text (no link, image or markup).

    Backslash-escapes (CommonMark shows ``\\[`` as ``[``) the characters that can start
    a link, image, HTML, emphasis, code, math or table anywhere, the ``://`` and
    ``www.`` of bare URLs (GitHub-flavoured Markdown links them), and block markers
    (``#``, ``>``, ``-``, ``+``, ``=``, ``1.``) at the start of a line. A line break
    becomes a Markdown hard break so multi-line messages keep their lines. Ordinary
    prose (letters, digits, ``. , : ; ' " ( ) ! ? /``) is left as it is.
    """
    escaped = _MD_ANYWHERE.sub(r"\\\1", clean_controls(str(text)))
    escaped = _MD_AUTOLINK.sub(lambda m: "\\" + (m.group(1) or m.group(2)), escaped)
    lines = escaped.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [_MD_LINE_START.sub(_escape_marker, line.lstrip()) for line in lines]
    return "  \n".join(lines)


def code_span(text: Any) -> str:
    """``text`` as a Markdown code span that it cannot close: the fence is one backtick
    longer than the longest run of backticks inside (CommonMark), line breaks become
    spaces, control characters are replaced (:func:`clean_controls`)."""
    body = clean_controls(str(text)).replace("\r", " ").replace("\n", " ")
    runs = re.findall(r"`+", body)
    fence = "`" * (max((len(r) for r in runs), default=0) + 1)
    return f"{fence} {body} {fence}" if runs else f"{fence}{body}{fence}"


def _escape_marker(match: re.Match[str]) -> str:
    marker = match.group(0)  # "1." -> "1\\." (a backslash before a digit would show)
    return marker[:-1] + "\\" + marker[-1] if marker[0].isdigit() else "\\" + marker


def escape_html_label(text: Any) -> str:
    """A label for plotly (or HTML): ``<``, ``>`` and ``&`` as entities, control and
    bidirectional-override characters replaced (:func:`clean_controls`)."""
    return html.escape(clean_controls(str(text)), quote=False)


def sanitise_markup(text: str) -> str:
    """Escape every tag in ``text`` except ``<br>``, ``<b>``, ``<i>``, ``<em>``, ``<sup>``,
    ``<sub>`` and ``<extra>`` (for titles and hover templates that mix our markup with
    labels from the data)."""
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\x00{len(kept) - 1}\x00"

    marked = _SAFE_TAGS.sub(keep, clean_controls(text))
    marked = marked.replace("<", "&lt;")  # no '<', no tag: our '>' and '&' stay as written
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], marked)


def _escape_values(value: Any) -> Any:
    if isinstance(value, str):
        return escape_html_label(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS":
            out = np.frompyfunc(_escape_scalar, 1, 1)(value)
            return out.astype(object)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_escape_values(v) for v in value)
    return value


def _same_sequence(new: Any, old: Any) -> bool:
    """``new`` equals ``old`` item for item (tuples or lists of plain values: what plotly
    hands back), so setting it would change nothing."""
    return (isinstance(new, (list, tuple)) and isinstance(old, (list, tuple))
            and type(new) is type(old) and new == old)


def _escape_scalar(value: Any) -> Any:
    return escape_html_label(value) if isinstance(value, str) else value


def trace_field(trace: Any, key: str) -> Any:
    """``trace[key]``, or ``None`` when this trace type has no such property.

    Asks ``key in trace`` first: for a property the trace type lacks, plotly's
    ``trace[key]`` raises only after ranking every valid property name by edit distance for
    its error message (~1.5 ms each: ~0.5 s for a figure of 30 traces)."""
    try:
        if hasattr(trace, "_valid_props") and key not in trace:
            return None
        return trace[key]
    except (KeyError, ValueError, AttributeError, TypeError):
        return None


def escape_figure(fig: Any) -> Any:
    """Make every label of a plotly figure display as text (see the module docstring).

    Idempotent: a figure already escaped is returned unchanged. Returns ``fig``.
    """
    if getattr(fig, "_labels_escaped", False):
        return fig
    for trace in fig.data:
        for key in TRACE_TEXT_KEYS:
            value = trace_field(trace, key)
            if value is None:
                continue
            new = _escape_values(value)
            if new is not value and not _same_sequence(new, value):
                trace[key] = new  # setting validates the whole array again: only if changed
        for key in ("hovertemplate", "texttemplate"):  # ours, but they embed factor names
            value = trace_field(trace, key)
            if isinstance(value, str):
                trace[key] = sanitise_markup(value)
            elif isinstance(value, (list, tuple)):
                trace[key] = [sanitise_markup(v) if isinstance(v, str) else v for v in value]
    layout = fig.layout
    if layout.title.text:
        layout.title.text = sanitise_markup(layout.title.text)
    if layout.legend.title.text:
        layout.legend.title.text = sanitise_markup(layout.legend.title.text)
    for note in layout.annotations or ():
        if note.text:
            note.text = sanitise_markup(note.text)

    def axis(ax: Any) -> None:
        if ax.title.text:
            ax.title.text = sanitise_markup(ax.title.text)
        for key in ("categoryarray", "ticktext"):
            if ax[key] is not None:
                ax[key] = _escape_values(ax[key])

    fig.for_each_xaxis(axis)
    fig.for_each_yaxis(axis)
    object.__setattr__(fig, "_labels_escaped", True)
    return fig


def escaped_labels(builder: F) -> F:
    """Decorator for figure builders: the returned figure goes through :func:`escape_figure`."""
    @functools.wraps(builder)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return escape_figure(builder(*args, **kwargs))

    return wrapper  # type: ignore[return-value]
