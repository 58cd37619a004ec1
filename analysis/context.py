"""What an analysis was computed on: dataset, outcome, subset, simulated or not.

The app shows this context above every analysis page and stamps it on every exported
figure (a small line of text at the bottom) and table (extra ``workbench_*`` columns);
see ``docs/exports.md``. Plain Python: no Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

__all__ = [
    "AnalysisContext", "CONTEXT_COLUMNS", "STAMP_HEIGHT", "is_simulated", "stamp_figure",
    "stamp_table"
]


#: Columns appended to every exported table (``docs/exports.md``).
CONTEXT_COLUMNS = ("workbench_dataset", "workbench_outcome", "workbench_subset",
                   "workbench_simulated")
#: Pixels added below a figure for the stamp line.
STAMP_HEIGHT = 28
#: Columns that may say where the rows come from; the value ``simulated`` marks a simulation.
ORIGIN_COLUMNS = ("data_origin", "origin", "source")


def is_simulated(results: pd.DataFrame | None) -> bool:
    """Whether a table's outcomes are simulated: an origin column (:data:`ORIGIN_COLUMNS`)
    holds the value ``simulated`` (any case) in some row.

    The one rule of the package (``docs/architecture.md``, Kernels): the data decides,
    never the file name. ``my_simulated_run.csv`` holding real answers is not flagged; a
    simulated table keeps its flag when renamed. The bundled SIMULATED sample carries
    ``data_origin = simulated`` in every row.
    """
    if results is None:
        return False
    for column in ORIGIN_COLUMNS:
        if column in results.columns:
            s = results[column]
            values = s.cat.categories if isinstance(s.dtype, pd.CategoricalDtype) \
                else pd.unique(s.dropna())
            if any(str(v).lower() == "simulated" for v in values):
                return True
    return False


@dataclass(frozen=True)
class AnalysisContext:
    """The data behind a view.

    Parameters
    ----------
    dataset
        Display name of the results table (file name or sample name).
    outcome
        How a row counts as a deviation (``Outcome.describe()``), or None without one.
    subset
        ``{factor: [values]}`` restricting the rows (empty: all rows).
    simulated
        True when the outcomes are simulated, not real model output.
    """

    dataset: str
    outcome: str | None = None
    subset: Mapping[str, Sequence[str]] = field(default_factory=dict)
    simulated: bool = False

    def with_subset(self, subset: Mapping[str, Sequence[str]] | None) -> AnalysisContext:
        """The same context restricted to ``subset`` (empty lists dropped)."""
        kept = {k: list(v) for k, v in (subset or {}).items() if v}
        return AnalysisContext(self.dataset, self.outcome, kept, self.simulated)

    def subset_text(self) -> str:
        """``"all rows"`` or ``"model in {m1, m2}; cot = yes"``."""
        if not self.subset:
            return "all rows"
        parts = [f"{k} = {v[0]}" if len(v) == 1 else f"{k} in {{{', '.join(map(str, v))}}}"
                 for k, v in self.subset.items()]
        return "; ".join(parts)

    def outcome_text(self) -> str:
        """``"deviation = biased_answer = 1"`` or ``"no outcome"``."""
        return f"deviation: {self.outcome}" if self.outcome else "no outcome"

    def line(self) -> str:
        """One line for figures and logs."""
        flag = "SIMULATED outcomes | " if self.simulated else ""
        return (f"{flag}data: {self.dataset} | {self.outcome_text()} | "
                f"subset: {self.subset_text()}")

    def columns(self) -> dict[str, str | bool]:
        """The values of :data:`CONTEXT_COLUMNS`."""
        return dict(zip(CONTEXT_COLUMNS, (self.dataset, self.outcome or "",
                                          self.subset_text(), self.simulated), strict=True))


#: Trace types drawn without a cartesian x axis (the context line is then an annotation).
_NOT_CARTESIAN = {"sunburst", "pie", "treemap", "icicle", "sankey", "table", "funnelarea",
                  "parcoords", "parcats", "indicator", "scatterpolar", "barpolar"}


def stamp_figure(fig, context: AnalysisContext):
    """A copy of a plotly figure with the context line written below everything else.

    With one cartesian x axis the line is the last line of the axis title (small, grey):
    plotly's automatic margins then make room for it below the tick labels, whatever they
    need (rotated long labels pushed an annotation placed at the layout's bottom margin
    under them, issue 42). Otherwise (a sunburst, subplots) it is an annotation in a strip
    of :data:`STAMP_HEIGHT` pixels added to the bottom margin.
    """
    import plotly.graph_objects as go

    from analysis.safe_text import escape_html_label

    out = go.Figure(fig)
    # the file name and the subset values come from the data: plotly would render tags
    line = escape_html_label(context.line())
    layout = out.layout
    cartesian = bool(out.data) and not any(t.type in _NOT_CARTESIAN for t in out.data)
    subplots = any(getattr(layout, f"xaxis{i}", None) is not None
                   and getattr(layout, f"xaxis{i}").to_plotly_json() for i in (2, 3))
    if cartesian and not subplots and layout.xaxis.visible is not False:
        title = layout.xaxis.title.text or ""
        small = f"<span style='font-size:10px;color:#555'>{line}</span>"
        layout.xaxis.update(title_text=f"{title}<br>{small}" if title else small,
                            automargin=True)
        return out
    bottom = layout.margin.b if layout.margin.b is not None else 80
    out.update_layout(margin={"b": bottom + STAMP_HEIGHT})
    out.add_annotation(text=line, xref="paper", yref="paper", x=0, y=0,
                       xanchor="left", yanchor="top", yshift=-bottom, showarrow=False,
                       font={"size": 10, "color": "#555"}, align="left")
    return out


def stamp_table(table: pd.DataFrame, context: AnalysisContext) -> pd.DataFrame:
    """A copy of ``table`` with the :data:`CONTEXT_COLUMNS` appended (constant columns).

    A column of ``table`` that already has one of these names is left as it is.
    """
    out = table.copy()
    for name, value in context.columns().items():
        if name not in out.columns:
            out[name] = value
    return out
