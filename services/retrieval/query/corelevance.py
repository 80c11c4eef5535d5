"""Co-relevance: documents that the voting queries judged relevant *together*.

NFCorpus judgements come from the citation lists of NutritionFacts articles, so documents cited
together tend to be relevant together. The first hybrid results (the anchor documents, see
:func:`anchors`) spread their weight to every voting query that judged them relevant, and each
such query passes it on to all of its relevant documents: ``score = Aᵀ · W · A · anchors``, with
``A`` the query x document judgement matrix and ``W`` down-weighting queries with long lists
(1 / ln(1 + n)). What it adds to the ranker is measured in docs/quality.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from services.retrieval.query.judgements import Csr, Judgements, Located, row_positions

Vector = npt.NDArray[np.float64]


class CoRelevance:
    """One sparse product per query over the voting queries' judgement matrix."""

    def __init__(
        self, judgements: Judgements, ordinals: npt.NDArray[np.int64] | None = None
    ) -> None:
        """Binary view of ``judgements``, with each query's weight 1 / ln(1 + list length).

        ``ordinals`` are the places of ``judgements``' documents among the whole corpus's doc
        ids, ascending with the columns (without them: the columns, a corpus of these alone).
        """
        self._judgements = judgements
        n = len(judgements.doc_ids)
        self._ordinals = np.arange(n, dtype=np.int64) if ordinals is None else ordinals
        self._a = judgements.binary
        self._at = judgements.binary_by_doc
        lengths = self._a.row_sums()
        self._weights = 1.0 / np.log1p(np.maximum(lengths, 1.0))
        # A's layout in numpy's index type: bincount and fancy indexing take no conversion pass.
        self._starts = self._a.indptr[:-1].astype(np.intp)
        self._lengths = np.diff(self._a.indptr).astype(np.intp)
        self._docs = self._a.indices.astype(np.intp)

    def scores(
        self, anchors: Mapping[str, float] | Mapping[int, float], exclude_query: str | None = None
    ) -> CoScores:
        """Co-relevance of every document to the weighted ``anchors`` (doc id or column -> weight).

        ``exclude_query`` (a training query) takes no part: leave-one-out.
        """
        index = self._judgements.doc_index
        w = np.zeros(len(index))
        for d, weight in anchors.items():
            i = index.get(d) if isinstance(d, str) else d
            if i is not None:
                w[i] = weight
        # A · w reads only the anchors' columns (a few hundred of the matrix's entries); so does
        # Aᵀ · per_query read only the queries that judged them (a few hundred rows of A, ~36k of
        # its ~120k entries): their entries, query by query, added per document in that order.
        # That is each document's row of Aᵀ in storage order, from 0.0, without its zero terms
        # (+0.0, which leaves a sum's bits as they are): the full CSR product's bits, as scipy
        # computed it, at a third of the work of a pass over every entry in numpy.
        queries, by_doc = _row_entries(self._at, np.flatnonzero(w))
        per_query = _sums(queries, w[by_doc], self._a.shape[0]) * self._weights
        q = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if q is not None:
            per_query[q] = 0.0
        return CoScores(index, self._spread(per_query), self._ordinals)

    def _spread(self, per_query: Vector) -> Vector:
        """Aᵀ · per_query from the rows of A whose weight is not zero (see :meth:`scores`)."""
        judging = np.flatnonzero(per_query)
        lengths = self._lengths[judging]
        positions = row_positions(self._starts[judging], lengths)
        # A is binary: each term is 1.0 * per_query[q], which is per_query[q] exactly.
        terms = np.repeat(per_query[judging], lengths)
        return _sums(self._docs[positions], terms, len(self._judgements.doc_index))


def _sums(at: npt.NDArray[np.int32] | npt.NDArray[np.intp], values: Vector, size: int) -> Vector:
    """``out[at[i]] += values[i]`` in order of ``i``, into ``size`` zeros."""
    return np.bincount(at, values, size)  # type: ignore[return-value]  # float64 with weights


def _row_entries(
    matrix: Csr, rows: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.intp]]:
    """Column indices of the entries of ``rows`` (row by row, in storage order) and their rows."""
    starts, lengths = matrix.indptr[rows], np.diff(matrix.indptr)[rows]
    return matrix.indices[row_positions(starts, lengths)], np.repeat(rows, lengths)


def _ranks(values: Vector) -> npt.NDArray[np.int64]:
    """Each value's 1-based rank, highest first, equal values in position order.

    The ranks a stable sort gives, from numpy's default (SIMD) sort, several times faster on the
    corpus's 3,633 scores: an unstable sort, then each run of equal values put back in position
    order by sorting ``run * n + position``, which are distinct integers.
    """
    n = len(values)
    ranks = np.empty(n, dtype=np.int64)
    if n == 0:
        return ranks
    negated = -values
    order = np.argsort(negated)
    ordered = negated[order]
    run = np.zeros(n, dtype=np.int64)
    np.cumsum(ordered[1:] != ordered[:-1], out=run[1:])
    keyed = run * n + order
    keyed.sort()
    ranks[keyed % n] = np.arange(1, n + 1)
    return ranks


class CoScores:
    """Co-relevance scores of one query over the judged documents, with ranks among all documents.

    A document's rank is its place among every document of the corpus, best first, equal scores
    in doc id order. Only judged documents can score above zero, so a scoring document's rank
    is its rank among them, and a document scoring zero ranks after all that score, among the
    others of zero by its ordinal (its place among all the corpus's doc ids): both without an
    array of the corpus's length.
    """

    def __init__(
        self, index: Mapping[str, int], values: Vector, ordinals: npt.NDArray[np.int64]
    ) -> None:
        """Wrap the score vector (``index`` maps doc ids to positions, ``ordinals`` to places)."""
        self._index = index
        self._values = values
        self._ranks = _ranks(values)
        self._scoring = ordinals[np.flatnonzero(values > 0)]  # ascending, as the ordinals are

    def score(self, doc_id: str) -> float:
        """The document's score (0 for unknown documents)."""
        i = self._index.get(doc_id)
        return float(self._values[i]) if i is not None else 0.0

    def columns(
        self, located: Located, ordinals: npt.NDArray[np.int64]
    ) -> tuple[Vector, npt.NDArray[np.int64]]:
        """Scores and 1-based ranks of the documents of ``ordinals`` (``located`` among the judged)."""
        at, known = located.at, located.known
        scores = np.where(known, self._values[at], 0.0) if len(self._values) else np.zeros(len(at))
        # A document of zero: after every scoring one, then the zeros before it in id order.
        below = np.searchsorted(self._scoring, ordinals)
        zero_rank = len(self._scoring) + 1 + ordinals - below
        judged_rank = self._ranks[at] if len(self._values) else zero_rank
        ranks = np.where(known & (scores > 0), judged_rank, zero_rank)
        return scores, ranks


def anchors(
    rankings: Sequence[npt.NDArray[np.int64]], n: int = 10, k: int = 60
) -> dict[int, float]:
    """The anchor documents co-relevance spreads from, each weighted 1 / rank.

    They are the ``n`` best documents (by ordinal, their places in doc id order) by
    reciprocal-rank fusion of ``rankings``, ties by ordinal. Each document's fused score adds
    its ``1 / (k + rank)`` terms in the order of the rankings, from 0.0, as a loop over them
    would: ``np.bincount`` adds its weights in input order.
    """
    listed = [np.asarray(r, dtype=np.int64) for r in rankings if len(r)]
    if not listed:
        return {}
    terms = np.concatenate([1.0 / (k + np.arange(1, len(r) + 1)) for r in listed])
    present, slot = np.unique(np.concatenate(listed), return_inverse=True)
    fused = np.bincount(slot, weights=terms)
    best = present[np.lexsort((present, -fused))[:n]]
    return {int(d): 1.0 / rank for rank, d in enumerate(best.tolist(), start=1)}
