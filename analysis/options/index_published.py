"""Options of LLMBI as published (``analysis.index_published.published_llmbi``; the
``index-published`` command, the "as published" variant of the Bias index page). The
polarity (or text) column, the groups, the dimension column and its weights are the
inputs, not options."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import Options, option, register
from analysis.options.types import FINITE_FLOAT

__all__ = ["LEXICONS", "IndexPublishedOptions"]

#: What ``--text-col`` scores the texts with.
LEXICONS = ("textblob", "vader")


@register
@dataclass(frozen=True, kw_only=True)
class IndexPublishedOptions(Options):
    """The paper's constants (its Listing 3) and how texts are scored
    (docs/bias_index.md)."""

    NAME = "index_published"
    COMMAND = "index-published"

    diversity_penalty: float = option(
        0.2, "diversity penalty P(D) (paper: %(default)s)", flag="penalty",
        type=FINITE_FLOAT, metavar="P", label="P(D) (paper: 0.2)")
    scale: float = option(1.5, "scale of the sentiment term (paper: %(default)s)",
                          flag="lambda", type=FINITE_FLOAT, metavar="LAMBDA",
                          label="lambda (paper: 1.5)")
    lexicon: str = option(
        "textblob", "with --text-col: TextBlob polarity (the paper's) or VADER compound",
        choices=LEXICONS, call=False, label="Lexicon")
    responses: bool = option(False, "also print per-response scores", call=False,
                             label="Per-response scores")
