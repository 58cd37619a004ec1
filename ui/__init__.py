"""Shared Streamlit helpers for the pages (kept out of pages/, which holds page files only)."""

__all__: list[str] = []

