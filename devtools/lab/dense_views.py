"""Dense column builders for the ranker lab: views of the training queries in MiniLM's space.

Round 4 of docs/quality.md: the judged-by field's dense view (documents nudged toward the queries
that judged them, served as ``nudged_cos``), MiniLM's cosine of every candidate (its control), a
query view moved toward its nearest training queries, and a linear adapter of the query vectors
fitted listwise on train (the encoder adapted to NFCorpus at the cost of one matrix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from devtools.lab.data import Lab
from devtools.lab.features import Extra, query_vectors
from services.nfcorpus.dataset import corpus_fingerprint, load_corpus
from services.retrieval.build.vector_cache import cached_vectors
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.judgements import Judgements
from services.retrieval.query.nudged import GAMMA, NudgedDocs
from services.retrieval.settings import RetrievalSettings
from services.retrieval.text import document_text


def _unit(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return (m / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _doc_vectors() -> tuple[dict[str, int], npt.NDArray[np.float32]]:
    """Every document's MiniLM vector, from the indexer's vector cache (computed when missing)."""
    settings = RetrievalSettings()
    docs = load_corpus(settings.data_dir)
    encoder = OnnxMiniLM(threads=2)
    vectors = cached_vectors(
        settings.cache_dir / "vectors",
        f"{encoder.model_id}-{corpus_fingerprint(docs)}",
        len(docs),
        lambda: encoder.encode([document_text(d) for d in docs]),
    )
    return {d.doc_id: i for i, d in enumerate(docs)}, _unit(vectors)


def _candidate_vectors(
    index: Mapping[str, int], vectors: npt.NDArray[np.float32], doc_ids: Sequence[str]
) -> npt.NDArray[np.float32]:
    return (
        vectors[[index[d] for d in doc_ids]]
        if doc_ids
        else np.zeros((0, vectors.shape[1]), np.float32)
    )


def full_cosine(lab: Lab) -> Extra:
    """The query's MiniLM cosine to every candidate (``dense_score`` is NaN off the dense list).

    The control for the dense views below: they give every candidate a cosine too.
    """
    index, docs = _doc_vectors()
    vectors = query_vectors(lab)
    return {
        split: [
            (_candidate_vectors(index, docs, q.doc_ids) @ _unit(vectors[split][n]))[:, None]
            for n, q in enumerate(queries)
        ]
        for split, queries in lab.items()
    }


FULL_COSINE = ("full_cos",)


def nudged_documents(lab: Lab, gammas: Sequence[float] = (GAMMA,)) -> Extra:
    """The query's cosine to each candidate's nudged vector (the served :class:`NudgedDocs`).

    The judges are the train queries (the lab's index votes with train only); a train query
    leaves itself out of them, as it does for every vote. One column per gamma.
    """
    index, docs = _doc_vectors()
    vectors = query_vectors(lab)
    learners = lab["train"]
    judgements = Judgements({q.query_id: q.judged for q in learners}, sorted(index))
    doc_vectors = {d: docs[i] for d, i in index.items()}
    learner_vectors = {q.query_id: vectors["train"][n] for n, q in enumerate(learners)}
    tables = [NudgedDocs(doc_vectors, learner_vectors, judgements, g) for g in gammas]
    out: Extra = {}
    for split, queries in lab.items():
        own = split == "train"
        out[split] = [
            np.stack(
                [
                    t.cosines(vectors[split][n], q.doc_ids, q.query_id if own else None)
                    for t in tables
                ],
                axis=1,
            ).astype(np.float32)
            for n, q in enumerate(queries)
        ]
    return out


NUDGED = ("nudged_cos",)


def neighbour_query_view(lab: Lab, k: int = 5, betas: Sequence[float] = (0.5,)) -> Extra:
    """The candidates' cosine to the query moved toward its ``k`` nearest training queries.

    ``q' = unit(q + beta * unit(sum_j s_j q_j))`` over the neighbours j (similarity-weighted): a
    query view that borrows how similar questions were phrased. A train query is not its own
    neighbour.
    """
    index, docs = _doc_vectors()
    vectors = query_vectors(lab)
    learners = _unit(vectors["train"])
    out: Extra = {}
    for split, queries in lab.items():
        own = split == "train"
        mine = _unit(vectors[split])
        sims_all = mine @ learners.T
        blocks = []
        for n, q in enumerate(queries):
            sims = sims_all[n].copy()
            if own:
                sims[n] = -np.inf
            near = np.argsort(-sims, kind="stable")[:k]
            pull = _unit((sims[near, None] * learners[near]).sum(axis=0))
            base = _candidate_vectors(index, docs, q.doc_ids)
            columns = [base @ _unit(mine[n] + b * pull) for b in betas]
            blocks.append(np.stack(columns, axis=1).astype(np.float32).reshape(len(q.doc_ids), -1))
        out[split] = blocks
    return out


NEIGHBOUR_VIEW = ("neighbour_view_cos",)


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
    index, docs = _doc_vectors()
    vectors = query_vectors(lab)
    learners = lab["train"]
    q_train = _unit(vectors["train"])
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
        mine = _unit(vectors[split])
        blocks = []
        for n, q in enumerate(queries):
            base = _candidate_vectors(index, docs, q.doc_ids)
            columns = []
            for decay in decays:
                w = crossed[decay][fold_of[n]] if split == "train" else full[decay]
                columns.append(base @ _unit(w @ mine[n]))
            blocks.append(np.stack(columns, axis=1).astype(np.float32).reshape(len(q.doc_ids), -1))
        out[split] = blocks
    return out


ADAPTED_VIEW = ("adapted_cos",)
