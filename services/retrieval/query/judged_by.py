"""The documents' judged-by field: BM25 of a query over the words of the queries that judged each.

NFCorpus's relevance comes from citation links: the queries that judged a document relevant
describe it in the words queries use, which its own abstract may not. Every other collaborative
signal looks from the query's side (which voting queries resemble this one?); this one looks from
the document's. The field of a document is the analyzed text of every voting query that judged it
relevant, and a query's score is BM25 over those fields (:data:`SHORT_TEXTS` k1 and b, the
formula of :mod:`services.retrieval.query.bm25_table`).

A voting query scored while the ranker learns leaves itself out exactly: its words leave the
fields of the documents it judged, and the number of fields, their average length and each term's
document frequency are those of the fields without it. So nothing a query judged reaches its own
features. The fields are sparse products over what the kNN collection already stores (judgements
and analyzed texts), so an index version holds nothing new for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.query.bm25_table import SHORT_TEXTS
from services.retrieval.query.judgements import Judgements, positions


class JudgedBy:
    """Term counts of every document's judged-by field, and BM25 over them."""

    def __init__(
        self,
        terms: Mapping[str, Sequence[str]],
        judgements: Judgements,
        params: Bm25Params = SHORT_TEXTS,
    ) -> None:
        """Fields from ``terms`` (voting query id -> analyzed text) through ``judgements``."""
        self._params = params
        self._judgements = judgements
        order = judgements.queries
        self._vocabulary: dict[str, int] = {}
        rows, cols, counts = [], [], []
        for row, query in enumerate(order):
            for term, tf in sorted(Counter(terms.get(query, ())).items()):
                rows.append(row)
                cols.append(self._vocabulary.setdefault(term, len(self._vocabulary)))
                counts.append(float(tf))
        shape = (len(order), len(self._vocabulary))
        self._query_tf = sp.csr_matrix((counts, (rows, cols)), shape=shape)
        self._query_length = np.asarray(self._query_tf.sum(axis=1)).ravel()
        # Documents x terms, by column: a query reads the few columns of its own terms. A field
        # holds each judging query's words once, whatever the grade.
        self._doc_tf = (judgements.binary_by_doc @ self._query_tf).tocsc()
        self._doc_length = np.asarray(self._doc_tf.sum(axis=1)).ravel()
        self._fields = int(np.count_nonzero(self._doc_length))
        self._total_length = float(self._doc_length.sum())
        self._df = np.diff(self._doc_tf.indptr).astype(np.float64)

    def scores(
        self, query_terms: Sequence[str], doc_ids: Sequence[str], exclude_query: str | None = None
    ) -> npt.NDArray[np.float64]:
        """BM25 of ``query_terms`` over the fields of ``doc_ids`` (0 for a document without one).

        ``exclude_query`` (a voting query itself, in training) is left out of every field.
        """
        out = np.zeros(len(doc_ids))
        cols = sorted({self._vocabulary[t] for t in query_terms if t in self._vocabulary})
        if not cols or not len(doc_ids):
            return out
        at, known = positions(self._judgements.doc_index, doc_ids)
        columns = self._doc_tf[:, cols].toarray()  # every document's counts of the query's terms
        tf = columns[at]
        length = self._doc_length[at].copy()
        df, fields, total = self._df[cols].copy(), self._fields, self._total_length
        own = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if own is not None:
            judged, _ = self._judgements.row(self._judgements.queries[own])
            own_tf = self._query_tf[own][:, cols].toarray().ravel()
            own_length = float(self._query_length[own])
            before = columns[judged]
            df -= ((before > 0) & (before - own_tf == 0)).sum(axis=0)
            fields -= int(np.count_nonzero(self._doc_length[judged] == own_length))
            total -= own_length * len(judged)
            mine = np.isin(at, judged) & known
            tf[mine] -= own_tf
            length[mine] -= own_length
        k1, b = self._params.k1, self._params.b
        average = total / fields if fields > 0 and total > 0 else 1.0
        idf = np.log(1 + (max(fields, 0) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * length / average)
        weights = tf * (k1 + 1) / (tf + norm[:, None])
        for j in range(len(cols)):  # one summation order (sorted term ids), whatever the platform
            out += weights[:, j] * idf[j]
        return np.where(known, out, 0.0)
