"""Extra feature columns for the ranker lab: candidates the served ranker does not have.

(The lexical kNN votes and the document fields began here; they are served now.)

Each builder returns, per split, one block of columns per query (rows in candidate order);
:mod:`.experiments` appends them to the served features and trains with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from devtools.lab.data import CACHE, Lab
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.query.bm25_table import SHORT_TEXTS
from services.retrieval.query.judged_by import JudgedBy
from services.retrieval.query.judgements import Judgements
from services.retrieval.text import analyze

Extra = dict[str, list[npt.NDArray[np.float32]]]  # split -> one column block per query


def query_vectors(lab: Lab) -> dict[str, npt.NDArray[np.float32]]:
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
    vectors = query_vectors(lab)
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


def judged_by(lab: Lab, params: Bm25Params = SHORT_TEXTS, standing: bool = False) -> Extra:
    """BM25 of the query over each candidate's judged-by field (the served :class:`JudgedBy`).

    The fields are the train queries' words (the lab's index votes with train only); a train
    query leaves itself out of them, as it leaves itself out of its neighbours. ``standing`` adds
    the score's rank among the query's candidates (0 best, 1 worst) and its share of the best.
    """
    learners = lab["train"]
    terms = {q.query_id: analyze(q.text) for q in learners}
    docs = sorted({d for q in learners for d in q.judged})
    table = JudgedBy(terms, Judgements({q.query_id: q.judged for q in learners}, docs), params)
    out: Extra = {}
    for split, queries in lab.items():
        own = split == "train"
        blocks = []
        for q in queries:
            score = table.scores(analyze(q.text), q.doc_ids, q.query_id if own else None)
            columns = [score]
            if standing:
                rank = (-score).argsort(kind="stable").argsort(kind="stable")
                best = score.max(initial=0.0)
                columns += [rank / max(len(score) - 1, 1), score / best if best > 0 else score]
            blocks.append(np.stack(columns, axis=1).astype(np.float32))
        out[split] = blocks
    return out


JUDGED_BY = ("judged_bm25",)
JUDGED_STANDING = ("judged_rank", "judged_share")


def per_query(columns: Sequence[int], lab: Lab) -> Extra:
    """Each of ``columns`` of the rows as the query's candidates compare.

    The z-score, the gap to the query's best and the rank (0 best, 1 worst): the model sees how
    a candidate stands among the others rather than an absolute score.
    """
    out: Extra = {}
    for split, queries in lab.items():
        blocks = []
        for q in queries:
            values = np.nan_to_num(q.rows[:, list(columns)].astype(np.float64), nan=0.0)
            spread = values.std(axis=0)
            z = (values - values.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
            gap = values.max(axis=0, initial=0.0) - values if len(values) else values
            order = (-values).argsort(axis=0, kind="stable").argsort(axis=0, kind="stable")
            rank = order / max(len(values) - 1, 1)
            blocks.append(np.hstack([z, gap, rank]).astype(np.float32))
        out[split] = blocks
    return out
