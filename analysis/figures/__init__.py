"""Plotly figure builders (no Streamlit): one module per analysis, a shared style."""
