"""Streamlit pages: each file arranges widgets and calls analysis/ or judges/."""
