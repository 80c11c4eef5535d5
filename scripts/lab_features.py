"""Extra feature columns for the ranker lab: candidates the served ranker does not have yet.

Each builder returns, per split, one block of columns per query (rows in candidate order);
``lab_experiments.py`` appends them to the served features and trains with them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from statistics import fmean

import numpy as np
import numpy.typing as npt
from lab_data import CACHE, Lab

from services.nfcorpus.dataset import load_corpus
from services.retrieval.dense import OnnxMiniLM
from services.retrieval.settings import RetrievalSettings
from services.retrieval.text import analyze

Extra = dict[str, list[npt.NDArray[np.float32]]]  # split -> one column block per query


class _Bm25:
    """Okapi BM25 over short texts (training queries, titles), Anserini's k1 and b."""

    def __init__(self, texts: Sequence[Sequence[str]], k1: float = 0.9, b: float = 0.4) -> None:
        self._postings: dict[str, list[tuple[int, int]]] = {}
        lengths = [len(t) for t in texts]
        self._avg = fmean(lengths) if lengths else 1.0
        for i, terms in enumerate(texts):
            for term, tf in Counter(terms).items():
                self._postings.setdefault(term, []).append((i, tf))
        self._n, self._len, self._k1, self._b = len(texts), lengths, k1, b

    def scores(self, terms: Sequence[str]) -> dict[int, float]:
        out: dict[int, float] = {}
        for term in set(terms):
            posting = self._postings.get(term, [])
            idf = math.log(1 + (self._n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting:
                norm = tf + self._k1 * (1 - self._b + self._b * self._len[i] / self._avg)
                out[i] = out.get(i, 0.0) + idf * tf * (self._k1 + 1) / norm
        return out


def lexical_votes(lab: Lab, k: int = 10, power: float = 2.0) -> Extra:
    """Votes of the training queries nearest by BM25 over their texts (self left out)."""
    voters = lab["train"]
    index = _Bm25([analyze(q.text) for q in voters])
    out: Extra = {}
    for split, queries in lab.items():
        blocks = []
        for q in queries:
            scored = index.scores(analyze(q.text))
            ranked = sorted(
                ((s, i) for i, s in scored.items() if voters[i].query_id != q.query_id),
                reverse=True,
            )[:k]
            top = ranked[0][0] if ranked else 1.0
            votes: dict[str, float] = {}
            count: dict[str, int] = {}
            for s, i in ranked:
                for d, grade in voters[i].judged.items():
                    votes[d] = votes.get(d, 0.0) + (s / top) ** power * grade
                    count[d] = count.get(d, 0) + 1
            block = np.array(
                [[votes.get(d, 0.0), count.get(d, 0), top] for d in q.doc_ids], dtype=np.float32
            )
            blocks.append(block.reshape(len(q.doc_ids), 3))
        out[split] = blocks
    return out


def doc_fields(lab: Lab) -> Extra:
    """Document length, title length, BM25 of the query over titles only, query length."""
    corpus = {d.doc_id: d for d in load_corpus(RetrievalSettings().data_dir)}
    ids = sorted(corpus)
    row = {d: i for i, d in enumerate(ids)}
    titles = [analyze(corpus[d].title) for d in ids]
    length = [len(analyze(corpus[d].text)) for d in ids]
    index = _Bm25(titles)
    out: Extra = {}
    for split, queries in lab.items():
        blocks = []
        for q in queries:
            terms = analyze(q.text)
            title_bm25 = index.scores(terms)
            at = [row.get(d, -1) for d in q.doc_ids]
            block = np.array(
                [
                    [
                        math.log1p(length[i]) if i >= 0 else math.nan,
                        len(titles[i]) if i >= 0 else math.nan,
                        title_bm25.get(i, 0.0) if i >= 0 else math.nan,
                        len(q.text),
                    ]
                    for i in at
                ],
                dtype=np.float32,
            )
            blocks.append(block.reshape(len(q.doc_ids), 4))
        out[split] = blocks
    return out


def joined(*parts: Extra) -> Extra:
    return {s: [np.hstack(b) for b in zip(*(p[s] for p in parts), strict=True)] for s in parts[0]}


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


LEXICAL_VOTES = ("lex_vote", "lex_voters", "lex_top_score")
DOC_FIELDS = ("doc_length", "title_length", "title_bm25", "query_chars")
JUDGING_SIMILARITY = ("judge_best_sim", "judge_second_sim", "judge_best_sim_grade2")
