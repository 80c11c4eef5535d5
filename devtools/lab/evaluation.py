"""How the ranker lab scores an experiment: the ranker trained with five seeds, dev and test NDCG.

Every experiment trains the ranker with :data:`SEEDS` and reports the mean over seeds (the
spread between seeds is about the size of the effects looked for), so that a kept change is one
that moves the mean, not one draw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from statistics import fmean, pstdev
from typing import Any

import numpy as np
import numpy.typing as npt

from devtools.lab.data import Lab, grouped, ndcg
from devtools.lab.features import Extra
from services.retrieval.indexing.training import train
from services.retrieval.query.features import FEATURES

SEEDS = (1, 2, 3, 4, 5)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "mean": round(fmean(values), 4),
        "std": round(pstdev(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def evaluate(
    lab: Lab,
    extra: Extra | None = None,
    names: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    base: Sequence[str] = FEATURES,
) -> dict[str, Any]:
    """Train on train with each seed; NDCG on dev and test per seed, and of the seed average.

    ``extra`` holds more columns (named ``names``) after the ``base`` ones (the served
    features); ``params`` override the ranker's.
    """
    overrides = dict(params or {})
    features = (*base, *names)
    per_seed: dict[str, list[tuple[float, float]]] = {"dev": [], "test": []}
    summed: dict[str, list[npt.NDArray[np.float64]]] = {}
    for seed in SEEDS:
        rows = grouped(lab["train"], extra["train"] if extra else None)
        model = train(rows, overrides=overrides, features=features, seeds=(seed,))
        for split in ("dev", "test"):
            blocks = extra[split] if extra else [None] * len(lab[split])
            scores = [
                model.score(q.rows if b is None else np.hstack([q.rows, b]).astype(np.float32))
                for q, b in zip(lab[split], blocks, strict=True)
            ]
            per_seed[split].append(ndcg(lab[split], scores))
            prev = summed.get(split)
            summed[split] = (
                scores if prev is None else [a + b for a, b in zip(prev, scores, strict=True)]
            )
    out: dict[str, Any] = {}
    for split in ("dev", "test"):
        out[split] = {
            "ndcg@5": summary([a for a, _ in per_seed[split]]),
            "ndcg@10": summary([b for _, b in per_seed[split]]),
            "per_seed": [[round(a, 4), round(b, 4)] for a, b in per_seed[split]],
            "ensemble": [round(x, 4) for x in ndcg(lab[split], summed[split])],
        }
    return out


def without(names: Sequence[str]) -> Callable[[Lab], dict[str, Any]]:
    """An ablation: the served features less ``names``."""
    keep = [i for i, f in enumerate(FEATURES) if f not in names]

    def run(lab: Lab) -> dict[str, Any]:
        slim = {s: [replace(q, rows=q.rows[:, keep]) for q in qs] for s, qs in lab.items()}
        return evaluate(slim, base=[FEATURES[i] for i in keep])

    return run
