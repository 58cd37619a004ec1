"""Plotly figure builders (no Streamlit): one module per analysis, a shared style."""

__all__: list[str] = []

