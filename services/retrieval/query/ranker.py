"""The learned ranker: LightGBM lambdarank over :data:`~services.retrieval.query.features.FEATURES`.

One 63-leaf model. A ranker can sum several models of several random seeds (:data:`SEEDS`);
whether more than one pays for its extra model passes per query is measured in docs/quality.md,
and one is served.

The model lives in Qdrant next to the collections it was trained on
(:mod:`services.retrieval.query.index_version`), so every version of the index carries its own
ranker and a server never pairs a model with vectors it was not trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt

from services.retrieval.query.features import FEATURES
from services.retrieval.query.onnx_trees import scorer

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [5, 10],
    "learning_rate": 0.05,
    "num_leaves": 63,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 20,
    "seed": 42,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 2,
    "verbosity": -1,
}
# Chosen on dev (docs/quality.md), where NDCG is flat over a range of rounds and falls after it;
# a fixed count lets the served model learn from dev queries too, with nothing left to stop on.
ROUNDS = 60
#: One model per random seed; the served score is their sum.
SEEDS = (42,)


@dataclass(frozen=True, slots=True)
class Grouped:
    """Feature rows grouped by query, with graded labels."""

    features: npt.NDArray[np.float32]
    labels: npt.NDArray[np.float32]
    groups: list[int]


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


def train(
    train: Grouped,
    held_out: Grouped | None = None,
    overrides: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
    seeds: Sequence[int] = SEEDS,
) -> Ranker:
    """Fit one model per seed for :data:`ROUNDS` rounds; reproducible (deterministic LightGBM).

    ``held_out`` (dev, when dev is not training data) is only measured, into ``meta``.
    ``overrides`` (of :data:`PARAMS`; ``num_iterations`` replaces :data:`ROUNDS`), ``features``
    (columns beyond :data:`FEATURES`) and ``seeds`` serve the experiments of
    ``devtools/lab/ranker_lab.py``.
    """
    params = {**PARAMS, **(overrides or {})}
    rounds = int(params.pop("num_iterations", ROUNDS))
    train_set = lgb.Dataset(
        train.features, train.labels, group=train.groups, feature_name=list(features)
    )
    valid_sets: list[lgb.Dataset] = []
    if held_out is not None:
        valid_sets.append(
            lgb.Dataset(
                held_out.features, held_out.labels, group=held_out.groups, reference=train_set
            )
        )
    boosters, dev_ndcg = [], []
    for seed in seeds:
        evals: dict[str, Any] = {}
        boosters.append(
            lgb.train(
                {**params, "seed": seed},
                train_set,
                num_boost_round=rounds,
                valid_sets=valid_sets,
                valid_names=["dev"] if valid_sets else None,
                callbacks=[lgb.record_evaluation(evals)],
            )
        )
        if held_out is not None:
            dev_ndcg.append(float(evals["dev"]["ndcg@10"][-1]))
    meta: dict[str, Any] = {
        "params": {k: v for k, v in params.items() if k not in ("num_threads", "seed")},
        "seeds": list(seeds),
        "rounds": rounds,
        "train_queries": len(train.groups),
    }
    if dev_ndcg:
        # LightGBM's NDCG of each model (ideal over the candidates), a sanity check, not the
        # trec_eval figure of the sum.
        meta["dev_lightgbm_ndcg@10"] = dev_ndcg
    return Ranker(boosters, meta, features)


def group_rows(
    per_query: Sequence[tuple[npt.NDArray[np.float32], Sequence[str], Mapping[str, int]]],
) -> Grouped:
    """Stack ``(rows, doc_ids, judgements)`` per query into one training set."""
    features = [rows for rows, _, _ in per_query if len(rows)]
    labels = [
        np.array([judged.get(d, 0) for d in docs], dtype=np.float32)
        for rows, docs, judged in per_query
        if len(rows)
    ]
    return Grouped(
        np.concatenate(features), np.concatenate(labels), [len(rows) for rows in features]
    )
