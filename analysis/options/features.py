"""Options of the text features (``analysis.features.extract_features``; the
``features`` command, the "Text features" section of the Prepare page). The text column
and what ``embedding_similarity`` compares with are the inputs, not options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.options import Options, option, register

__all__ = ["FEATURES", "FeaturesOptions", "name_list"]

#: Kept literal here (no pandas): ``analysis.features.FEATURES`` (a test checks they agree).
FEATURES = ("sentiment_vader", "polarity_textblob", "subjectivity_textblob",
            "embedding_similarity")


def name_list(text: Any) -> tuple[str, ...]:
    """``a,b,c`` (or a list) -> a tuple of names, blanks dropped; unknown names are
    refused by the analysis (which lists the known ones)."""
    items = text.split(",") if isinstance(text, str) else list(text)
    return tuple(str(v).strip() for v in items if str(v).strip())


name_list.__name__ = "comma-separated names"


@register
@dataclass(frozen=True, kw_only=True)
class FeaturesOptions(Options):
    """Numeric text features, computed offline (docs/features.md)."""

    NAME = "features"
    COMMAND = "features"

    features: tuple[str, ...] = option(
        FEATURES[:3], f"comma-separated, from {', '.join(FEATURES)} (default: the first "
        "three)", type=name_list, metavar="A,B", label="Features")
    model: str | None = option(
        None, "embedding model folder or name (default: the bundled all-MiniLM-L6-v2)",
        type=str, label="Embedding model")
    prefix: str = option("", "prepended to the new column names", type=str,
                         label="Column name prefix")
    skip_unavailable: bool = option(
        False, "leave out features whose package is not installed",
        label="Leave out features whose package is missing")
