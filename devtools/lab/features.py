"""Extra feature columns for the ranker lab: candidates the served ranker does not have.

(The lexical kNN votes and the document fields began here; they are served now.)

Each builder returns, per split, one block of columns per query (rows in candidate order);
:mod:`.experiments` appends them to the served features and trains with them.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from devtools.lab.data import CACHE, Lab
from services.retrieval.encoders.dense import OnnxMiniLM

Extra = dict[str, list[npt.NDArray[np.float32]]]  # split -> one column block per query


def _query_vectors(lab: Lab) -> dict[str, npt.NDArray[np.float32]]:
    """Every lab query's MiniLM vector (cached beside the candidates)."""
    path = CACHE.parent / "query_vectors.npz"
    if path.exists():
        return dict(np.load(path))
    encoder = OnnxMiniLM(threads=1)
    vectors = {split: encoder.encode([q.text for q in queries]) for split, queries in lab.items()}
    np.savez(path, train=vectors["train"], dev=vectors["dev"], test=vectors["test"])
    return vectors


def judging_similarity(lab: Lab) -> Extra:
    """How similar the query is to the training queries that judged each candidate relevant.

    The kNN votes see only the nearest few training queries; this looks at every query that
    judged the document: the best and second-best similarity, and the best among grade-2 judges.
    """
    vectors = _query_vectors(lab)
    voters = lab["train"]
    judges: dict[str, list[tuple[int, int]]] = {}
    for i, v in enumerate(voters):
        for d, grade in v.judged.items():
            if grade > 0:
                judges.setdefault(d, []).append((i, grade))
    out: Extra = {}
    for split, queries in lab.items():
        sims_all = vectors[split] @ vectors["train"].T
        blocks = []
        for n, q in enumerate(queries):
            sims = sims_all[n].copy()
            if split == "train":
                sims[n] = -np.inf  # leave-one-out, as for the votes
            rows = []
            for d in q.doc_ids:
                found = judges.get(d, [])
                s = sorted((float(sims[i]) for i, _ in found), reverse=True)
                s = [x for x in s if x > -np.inf]
                top2 = [float(sims[i]) for i, g in found if g == 2 and sims[i] > -np.inf]
                rows.append([
                    s[0] if s else math.nan,
                    s[1] if len(s) > 1 else math.nan,
                    max(top2) if top2 else math.nan,
                ])  # fmt: skip
            blocks.append(np.array(rows, dtype=np.float32).reshape(len(q.doc_ids), 3))
        out[split] = blocks
    return out


JUDGING_SIMILARITY = ("judge_best_sim", "judge_second_sim", "judge_best_sim_grade2")
