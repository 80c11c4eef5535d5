"""The learned ranker as served: LightGBM lambdarank models, their scores summed.

Its models read :data:`~services.retrieval.query.features.FEATURES`. A ranker can sum several
models of several random seeds; whether more than one pays for its extra model passes per query
is measured in docs/quality.md, and one is served. They are trained at index time
(:mod:`services.retrieval.indexing.training`).

The model lives in Qdrant next to the collections it was trained on
(:mod:`services.retrieval.query.index_version`), so every version of the index carries its own
ranker and a server never pairs a model with vectors it was not trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt

from services.retrieval.query.features import FEATURES
from services.retrieval.query.onnx_trees import scorer


class Ranker:
    """Trained models whose scores are summed: scores candidate rows (higher is better)."""

    def __init__(
        self,
        boosters: Sequence[lgb.Booster],
        meta: Mapping[str, Any],
        features: Sequence[str] = FEATURES,
    ) -> None:
        """Wrap boosters; ``meta`` records how they were trained, ``features`` their columns."""
        if not boosters:
            raise ValueError("a ranker needs at least one model")
        self._boosters = list(boosters)
        self.meta = dict(meta)
        if any(list(b.feature_name()) != list(features) for b in self._boosters):
            raise ValueError("model features do not match this code's FEATURES")
        # Each model's trees as onnxruntime walks them: LightGBM's scores to the bit, faster.
        self._scorers = [scorer(b) for b in self._boosters]

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
        return json.dumps([str(b.model_to_string()) for b in self._boosters])

    @classmethod
    def from_text(cls, text: str, meta: Mapping[str, Any]) -> Ranker:
        """Load what :meth:`to_text` wrote."""
        return cls([lgb.Booster(model_str=t) for t in json.loads(text)], meta)
