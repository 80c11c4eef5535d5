"""The learned ranker: LightGBM lambdarank over :data:`~services.retrieval.query.features.FEATURES`.

The model lives in Qdrant next to the collections it was trained on
(:mod:`services.retrieval.query.version_records`), so every version of the index carries its own ranker
and a server never pairs a model with vectors it was not trained on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt

from services.retrieval.query.features import FEATURES

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [5, 10],
    "learning_rate": 0.05,
    "num_leaves": 31,
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
# Chosen on dev (docs/quality.md): dev NDCG is flat from ~50 to ~120 rounds and falls after;
# a fixed count lets the served model learn from dev queries too, with nothing left to stop on.
ROUNDS = 60


@dataclass(frozen=True, slots=True)
class Grouped:
    """Feature rows grouped by query, with graded labels."""

    features: npt.NDArray[np.float32]
    labels: npt.NDArray[np.float32]
    groups: list[int]


class Ranker:
    """A trained model: scores candidate rows (higher is better)."""

    def __init__(
        self, booster: lgb.Booster, meta: Mapping[str, Any], features: Sequence[str] = FEATURES
    ) -> None:
        """Wrap a booster; ``meta`` records how it was trained, ``features`` its columns."""
        self._booster = booster
        self.meta = dict(meta)
        if list(booster.feature_name()) != list(features):
            raise ValueError("model features do not match this code's FEATURES")

    def score(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """One score per row."""
        if len(rows) == 0:
            return np.zeros(0)
        # Single-threaded: a request's ~300 rows take ~1 ms; threads would only contend.
        return np.asarray(self._booster.predict(rows, num_threads=1), dtype=np.float64)

    def to_text(self) -> str:
        """The model as LightGBM's text format."""
        return str(self._booster.model_to_string())

    @classmethod
    def from_text(cls, text: str, meta: Mapping[str, Any]) -> Ranker:
        """Load from LightGBM's text format."""
        return cls(lgb.Booster(model_str=text), meta)


def train(
    train: Grouped,
    held_out: Grouped | None = None,
    overrides: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
) -> Ranker:
    """Fit for :data:`ROUNDS` rounds; reproducible (fixed seeds, deterministic LightGBM).

    ``held_out`` (dev, when dev is not training data) is only measured, into ``meta``.
    ``overrides`` (of :data:`PARAMS`; ``num_iterations`` replaces :data:`ROUNDS`) and
    ``features`` (columns beyond :data:`FEATURES`) serve the experiments of
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
    evals: dict[str, Any] = {}
    booster = lgb.train(
        params,
        train_set,
        num_boost_round=rounds,
        valid_sets=valid_sets,
        valid_names=["dev"] if valid_sets else None,
        callbacks=[lgb.record_evaluation(evals)],
    )
    meta: dict[str, Any] = {
        "params": {k: v for k, v in params.items() if k != "num_threads"},
        "rounds": rounds,
        "train_queries": len(train.groups),
    }
    if held_out is not None:
        # LightGBM's NDCG (ideal over the candidates), a sanity check, not the trec_eval figure.
        meta["dev_lightgbm_ndcg@10"] = float(evals["dev"]["ndcg@10"][-1])
    return Ranker(booster, meta, features)


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
