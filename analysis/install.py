"""What an install holds: the optional extras (which one a feature needs, the message when
it is missing) and where the app's files are (``docs/architecture.md``, *Packaging*).

A core install (``pip install bias-workbench``) has the statistics, the CLI and the
reports as HTML; the app, the LLM judges and image export are extras. A feature whose extra
is missing raises :class:`MissingExtraError` (exit 2 on the CLI) naming the install command,
before any work; nothing here imports the optional package itself.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from analysis.errors import AnalysisError

__all__ = ["APP_FILES", "EXTRAS", "MissingExtraError", "app_dir", "has_module",
           "install_command", "require"]

#: Extra -> what it adds (the import names its features check for).
EXTRAS: dict[str, tuple[str, ...]] = {
    "app": ("streamlit",),
    "judges": ("openai", "anthropic", "aiohttp"),
    "figures": ("kaleido",),
    "spark": ("pyspark",),
    "harnesses": ("lm_eval", "inspect_ai"),
    "text": ("vaderSentiment", "textblob"),
    "embeddings": ("sentence_transformers",),
    "team": ("authlib",),
}


class MissingExtraError(AnalysisError):
    """A feature needs a package of an optional extra that is not installed.

    ``module`` is the missing import name, ``extra`` the extra that installs it.
    """

    def __init__(self, what: str, module: str, extra: str) -> None:
        self.module, self.extra = module, extra
        super().__init__(f"{what} needs the {module!r} package, which is not installed: "
                         f"{install_command(extra)}")


def install_command(extra: str) -> str:
    """The pip command that installs ``extra`` (quoted for a POSIX shell)."""
    return f"pip install 'bias-workbench[{extra}]'"


def has_module(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a blocked or broken package counts as missing
        return False


def require(module: str, extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless ``module`` (of ``extra``) is installed.

    Parameters
    ----------
    module
        The import name (``streamlit``, ``openai``, ...).
    extra
        The extra of ``pyproject.toml`` that installs it (a key of :data:`EXTRAS`).
    what
        The feature, as the message starts: ``"bias-workbench serve"``.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}")
    if not has_module(module):
        raise MissingExtraError(what, module, extra)


#: Where a built wheel keeps the app's files (``setup.py`` copies them there): ``app.py``,
#: ``pages/``, ``.streamlit/config.toml`` and ``sample_data/``, relative to site-packages.
APP_FILES = Path("ui") / "app_files"


def app_dir() -> Path:
    """The folder of ``app.py`` (with ``pages/``, ``.streamlit/`` and ``sample_data/``).

    The source tree when the package runs from one (a clone, ``pip install -e``), else the
    copy an installed wheel carries (:data:`APP_FILES` beside this package). Nothing is
    imported: the app layer is found as files.
    """
    site = Path(__file__).resolve().parents[1]
    for folder in (site, site / APP_FILES):
        if (folder / "app.py").is_file():
            return folder
    return site  # neither: the caller says that app.py is missing
