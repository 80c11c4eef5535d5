"""RM3 pseudo-relevance feedback: a lexical query expanded by the terms of its first results.

The top ``docs`` documents of a first lexical pass vote for their terms: each document's share of
the first-pass score times the term's share of that document's BM25 weight. The ``terms`` best
terms form an expansion model, mixed with the original query as ``(1 - weight) * query + weight *
expansion`` (both normalised to sum 1). The stored vectors hold BM25 weights rather than raw
counts, so expansion favours terms that are frequent in the feedback documents *and* rare in the
corpus, which is what RM3 with an IDF-weighted term selection does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.retrieval.settings import FeedbackSettings
from services.retrieval.types import Scored, SparseVector


def expand(
    query: SparseVector,
    feedback: Sequence[tuple[float, SparseVector]],
    params: FeedbackSettings,
) -> SparseVector:
    """The expanded query from ``(first-pass score, document vector)`` pairs."""
    usable = [(score, doc) for score, doc in feedback if score > 0 and doc.values]
    if not usable or not query.values:
        return query
    total_score = sum(score for score, _ in usable)
    # The term model, summed document by document (np.add.at adds in input order): one
    # summation order, so the expansion has the same bits in every process.
    terms = np.concatenate([np.asarray(doc.indices, dtype=np.int64) for _, doc in usable])
    shares = np.concatenate(
        [(score / total_score) * np.asarray(doc.values) / sum(doc.values) for score, doc in usable]
    )
    unique, first, inverse = np.unique(terms, return_index=True, return_inverse=True)
    weights = np.zeros(len(unique))
    np.add.at(weights, inverse, shares)
    # Best first; ties in order of first appearance, as a stable sort of the dict would keep them.
    by_appearance = np.argsort(first, kind="stable")
    ranked = by_appearance[np.argsort(-weights[by_appearance], kind="stable")][: params.terms]
    best = [(int(unique[i]), float(weights[i])) for i in ranked]
    best_total = sum(v for _, v in best)
    query_total = sum(query.values)
    mixed: dict[int, float] = {
        i: (1 - params.weight) * v / query_total
        for i, v in zip(query.indices, query.values, strict=True)
    }
    for index, value in best:
        mixed[index] = mixed.get(index, 0.0) + params.weight * value / best_total
    return SparseVector(list(mixed), list(mixed.values()))


def expand_from_first_pass(
    query: SparseVector, first: Scored, params: FeedbackSettings
) -> SparseVector:
    """:func:`expand` over a first pass that returned its documents' sparse vectors."""
    pairs = zip(first.scores, first.sparse, strict=True) if first.sparse is not None else ()
    return expand(query, [(s, v) for s, v in pairs if v is not None], params)
