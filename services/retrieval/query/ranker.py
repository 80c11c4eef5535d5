"""The learned ranker as served: LightGBM lambdarank models, their scores summed.

Its models read :data:`~services.retrieval.query.features.FEATURES`. A ranker can sum several
models of several random seeds; whether more than one pays for its extra model passes per query
is measured in docs/quality.md, and one is served. They are trained at index time
(:mod:`services.retrieval.indexing.training`).

The model lives in Qdrant next to the collections it was trained on
(:mod:`services.retrieval.query.index_version`), so every version of the index carries its own
ranker and a server never pairs a model with vectors it was not trained on. It is stored as each
model's LightGBM text and, beside it, the model's trees as an onnxruntime graph
(:mod:`~services.retrieval.query.onnx_trees`), made when it is trained: a server scores with the
graphs and imports neither LightGBM nor onnx (the image holds neither: docs/image.md). LightGBM
is the fallback: a ranker stored without graphs (by an indexer older than them) gets them made
when it is loaded, and a model no graph scores exactly is scored by LightGBM itself.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from services.retrieval.query.features import FEATURES
from services.retrieval.query.onnx_trees import OnnxTrees, lightgbm_scorer

if TYPE_CHECKING:
    import lightgbm as lgb


def _feature_names(model: str) -> list[str]:
    """The columns a model reads, from its LightGBM text (its ``feature_names=`` line)."""
    for line in model.splitlines():
        if line.startswith("feature_names="):
            return line.removeprefix("feature_names=").split()
    return []


def _booster(model: str) -> lgb.Booster:
    """A model's text read by LightGBM: the fallback, which needs LightGBM installed."""
    import lightgbm as lgb

    return lgb.Booster(model_str=model)


class Ranker:
    """Trained models whose scores are summed: scores candidate rows (higher is better)."""

    def __init__(
        self,
        models: Sequence[str],
        meta: Mapping[str, Any],
        graphs: Sequence[bytes | None],
        features: Sequence[str] = FEATURES,
    ) -> None:
        """Models as LightGBM's text and their trees as graphs (None: LightGBM scores that one).

        ``meta`` records how they were trained, ``features`` the columns they must read.
        """
        if not models:
            raise ValueError("a ranker needs at least one model")
        if len(graphs) != len(models):
            raise ValueError(f"{len(models)} models and {len(graphs)} graphs")
        if any(_feature_names(m) != list(features) for m in models):
            raise ValueError("model features do not match this code's FEATURES")
        self._models = list(models)
        self._graphs = list(graphs)
        self.meta = dict(meta)
        # Each model's trees as onnxruntime walks them: LightGBM's scores to the bit, faster.
        self._scorers = [
            OnnxTrees(g) if g is not None else lightgbm_scorer(_booster(m))
            for m, g in zip(self._models, self._graphs, strict=True)
        ]

    @classmethod
    def from_boosters(
        cls,
        boosters: Sequence[lgb.Booster],
        meta: Mapping[str, Any],
        features: Sequence[str] = FEATURES,
    ) -> Ranker:
        """Trained LightGBM models, their graphs made now (which imports onnx)."""
        from services.retrieval.query.onnx_trees import tree_graph

        models = [str(b.model_to_string()) for b in boosters]
        return cls(models, meta, [tree_graph(b) for b in boosters], features)

    def score(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """One score per row: the members' scores summed, in member order."""
        total = np.zeros(len(rows))
        if len(rows) == 0:
            return total
        for score in self._scorers:
            total += score(rows)
        return total

    def to_text(self) -> str:
        """The models as a JSON list of LightGBM's text format."""
        return json.dumps(self._models)

    def graphs_text(self) -> str:
        """The models' graphs as a JSON list (base64; null for a model LightGBM scores)."""
        return json.dumps([base64.b64encode(g).decode() if g else None for g in self._graphs])

    @classmethod
    def from_text(cls, text: str, meta: Mapping[str, Any], graphs: str | None = None) -> Ranker:
        """Load what :meth:`to_text` and :meth:`graphs_text` wrote.

        Without ``graphs`` (a ranker stored before they were), LightGBM reads the models and
        their graphs are made here: :class:`ImportError` where LightGBM or onnx is missing.
        """
        models = json.loads(text)
        if graphs is None:
            return cls.from_boosters([_booster(m) for m in models], meta)
        decoded = [base64.b64decode(g) if g else None for g in json.loads(graphs)]
        return cls(models, meta, decoded)
