"""A linear adapter of MiniLM's query vectors, fitted listwise on the train queries (ranker lab).

The part of "an encoder adapted to NFCorpus" a CPU build can afford: one 384 x 384 matrix held
near the identity instead of a fine-tuned model (docs/quality.md, round 4: not kept).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from devtools.lab.data import Lab
from devtools.lab.dense_views import candidate_vectors, doc_vectors
from devtools.lab.features import Extra, query_vectors
from services.retrieval.query.judged_by import unit


def _fit_adapter(
    queries: npt.NDArray[np.float32],
    candidates: npt.NDArray[np.bool_],
    targets: npt.NDArray[np.float32],
    docs: npt.NDArray[np.float32],
    steps: int,
    decay: float,
    temperature: float = 0.05,
    rate: float = 2e-3,
) -> npt.NDArray[np.float32]:
    """A linear map W of query vectors, fitted listwise: softmax over each query's candidates.

    Loss: cross-entropy of ``softmax(cos(Wq, d) / temperature)`` over the candidates against the
    judged grades, plus ``decay * |W - I|^2`` (W starts at, and is held near, the identity, so
    the adapted view stays MiniLM's). Full-batch Adam; a few seconds on CPU.
    """
    dim = queries.shape[1]
    w = np.eye(dim, dtype=np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    y = targets / targets.sum(axis=1, keepdims=True)
    for t in range(1, steps + 1):
        s = (queries @ w.T) @ docs.T / temperature
        s = np.where(candidates, s, -np.inf)
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        g = np.where(candidates, p - y, 0.0) / len(queries)
        grad = (g @ docs).T @ queries / temperature + 2 * decay * (w - np.eye(dim))
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w.astype(np.float32)


def adapted_query_view(
    lab: Lab, steps: int = 50, decays: Sequence[float] = (0.01,), folds: int = 5
) -> Extra:
    """The candidates' cosine to the query through a linear adapter fitted on train queries.

    An encoder adapted to NFCorpus at the cost of one matrix: ``cos(Wq, d)``. Train queries'
    own columns come from the adapter fitted on the other folds (cross-fitting), so the ranker
    never learns from a column that saw its own judgements; dev and test use the adapter fitted
    on all train queries. One column per decay.
    """
    index, docs = doc_vectors()
    vectors = query_vectors(lab)
    learners = lab["train"]
    q_train = unit(vectors["train"])
    mask = np.zeros((len(learners), len(docs)), dtype=bool)
    grades = np.zeros((len(learners), len(docs)), dtype=np.float32)
    for i, q in enumerate(learners):
        mask[i, [index[d] for d in q.doc_ids]] = True
        for d, grade in q.judged.items():
            if grade > 0 and d in index and mask[i, index[d]]:
                grades[i, index[d]] = grade
    usable = grades.sum(axis=1) > 0
    fold_of = np.arange(len(learners)) % folds

    def fit(rows: npt.NDArray[np.bool_], decay: float) -> npt.NDArray[np.float32]:
        keep = rows & usable
        return _fit_adapter(q_train[keep], mask[keep], grades[keep], docs, steps, decay)

    everyone = np.ones(len(learners), dtype=bool)
    full = {decay: fit(everyone, decay) for decay in decays}
    crossed = {decay: [fit(fold_of != f, decay) for f in range(folds)] for decay in decays}
    out: Extra = {}
    for split, queries in lab.items():
        mine = unit(vectors[split])
        blocks = []
        for n, q in enumerate(queries):
            base = candidate_vectors(index, docs, q.doc_ids)
            columns = []
            for decay in decays:
                w = crossed[decay][fold_of[n]] if split == "train" else full[decay]
                columns.append(base @ unit(w @ mine[n]))
            blocks.append(np.stack(columns, axis=1).astype(np.float32).reshape(len(q.doc_ids), -1))
        out[split] = blocks
    return out


ADAPTED_VIEW = ("adapted_cos",)
