"""Imported once by the background workers' forkserver (the last of
:data:`ui.inference_pool.PRELOAD`; no Streamlit here): plotly reads its templates' data
(every trace type's defaults) on the first figure that names one, 0.27 s CPU that each
worker forked from the server paid again in its load-time job (the Disparity page's
opening steps draw with ``analysis.figures.style.paper_layout``'s ``plotly_white``)."""

from __future__ import annotations

import plotly.graph_objects as go

__all__: list[str] = []

go.Figure(layout={"template": "plotly_white"})  # loads the template once, for every worker
