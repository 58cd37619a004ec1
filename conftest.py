"""Root conftest: puts the repository root on sys.path so tests import analysis, judges, pages."""
