"""Features of (query, candidate document) pairs for the learned ranker.

Candidates are the union of the dense, BM25 and RM3 lists and the documents the nearest training
queries vote for most. A document missing from a list gets NaN for that list's score (LightGBM
learns where missing values go) and ``depth + 1`` for its rank.

The document side (:class:`DocTable`) is built once per index version from the judged documents'
payloads: a query reads those candidates' priors, lengths, title overlap and title-only BM25 by
position, and computes them only for the few candidates outside them, from what was read of
them at the candidates (:mod:`.documents`). The other signals come from their own modules, as
columns in candidate order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.bm25_table import Bm25Table, FieldStats, text_score
from services.retrieval.query.candidates import Candidates, RowIndex
from services.retrieval.query.corelevance import CoScores
from services.retrieval.query.documents import NO_OUTSIDERS, Outsiders
from services.retrieval.query.evidence import Evidence, RankedDocs
from services.retrieval.query.judgements import Located
from services.retrieval.query.votes import LexicalColumns, VoteTable
from services.retrieval.types import DocInfo

FEATURES = (
    "dense_score", "dense_rank", "dense_z",
    "bm25_score", "bm25_rank",
    "rm3_score", "rm3_rank", "rm3_z",
    "vote", "vote_rank", "vote_share", "voters", "vote_best_sim", "vote_nearest_rank",
    "vote_max_grade", "nearest_sim", "prior", "query_terms", "title_overlap",
    "co_score", "co_rank",
    "lex_vote", "lex_voters", "lex_top_score",
    "doc_length", "title_length", "title_bm25", "query_chars",
    "judged_bm25", "nudged_cos",
)  # fmt: skip
NAN = math.nan
Column = npt.NDArray[np.float64]
_COL = {name: i for i, name in enumerate(FEATURES)}


@dataclass(frozen=True, slots=True)
class CandidateSet:
    """Candidates and their feature rows (``features[i]`` describes candidate ``i``)."""

    candidates: Candidates
    features: npt.NDArray[np.float32]

    @property
    def doc_ids(self) -> list[str]:
        """The candidates' doc ids."""
        return self.candidates.doc_ids


def _list_features(
    ranked: RankedDocs,
) -> tuple[npt.NDArray[np.int64], Column, npt.NDArray[np.int64], Column]:
    """Each listed document's point id, score, 1-based rank and z-score (its first place only)."""
    scores = ranked.scores
    # np.mean and np.std, spelled out: the same operations in the same order (the same bits),
    # without their generic Python wrappers, which cost more than the arithmetic here.
    mean = float(scores.sum() / len(scores)) if len(scores) else 0.0
    deviation = scores - mean
    spread = float(np.sqrt((deviation * deviation).sum() / len(scores))) if len(scores) else 0.0
    _, first = np.unique(ranked.points, return_index=True)
    first.sort()
    kept = scores[first]
    z = (kept - mean) / spread if spread > 0 else np.zeros(len(first))
    return ranked.points[first], kept, first + 1, z


def _fill_list(
    rows: npt.NDArray[np.float32],
    columns: tuple[int, int, int | None],
    ranked: RankedDocs,
    row_of: RowIndex,
    depth: int,
) -> None:
    """One list's score, rank and z columns; a document missing from it gets NaN and depth + 1.

    ``row_of`` finds a listed document's row (every listed document is a candidate).
    """
    score, rank, z = columns
    rows[:, score] = NAN
    rows[:, rank] = depth + 1
    if z is not None:
        rows[:, z] = NAN
    points, scores, ranks, zs = _list_features(ranked)
    if not len(points):
        return
    at = row_of(points)
    rows[at, score] = scores
    rows[at, rank] = ranks
    if z is not None:
        rows[at, z] = zs


@dataclass(frozen=True, slots=True)
class QuerySide:
    """What the features know of the query itself: its text, analyzed terms, lexical votes.

    ``judged_by`` is its BM25 over each candidate's judged-by field and ``nudged`` its cosine to
    each candidate's nudged vector, in candidate order (:mod:`services.retrieval.query.judged_by`).
    """

    text: str
    terms: Sequence[str]
    lexical: LexicalColumns
    judged_by: npt.NDArray[np.float64]
    nudged: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class DocColumns:
    """The document-side feature columns of some candidates (unknown documents: NaN, prior 0)."""

    prior: Column
    title_overlap: Column
    doc_length: Column
    title_length: Column
    title_bm25: Column


class DocTable:
    """The judged documents' :class:`DocInfo` as arrays, with a title-term index.

    The judged documents are the only ones a version holds (:mod:`.documents`); a candidate
    outside them brings its own :class:`DocInfo`, read at the candidates. Title BM25 weighs
    both by the whole corpus's title statistics.
    """

    def __init__(self, doc_info: Mapping[str, DocInfo], titles: FieldStats | None = None) -> None:
        """Index ``doc_info`` (doc id -> static features) in its order.

        Built in the judgement matrix's document order, it reads located candidates directly.
        ``titles`` are the corpus's title statistics (without them: those of these titles).
        """
        self.info = doc_info
        self._index = {d: i for i, d in enumerate(doc_info)}
        infos = list(doc_info.values())
        self._log_prior = np.array([log_prior(i.train_votes) for i in infos])
        self._doc_length = np.log1p(np.array([i.text_length for i in infos], dtype=np.float64))
        self._stats = titles or FieldStats.of(i.title_terms for i in infos)
        self._titles = Bm25Table([i.title_terms for i in infos], stats=self._stats)

    def columns(
        self,
        doc_ids: Sequence[str] | Candidates,
        query_terms: Sequence[str],
        own_judgements: Mapping[str, int] | None = None,
    ) -> DocColumns:
        """The document columns of ``doc_ids`` for a query of ``query_terms``.

        Candidates are read where they are located: this table is then in the judgement
        matrix's order; those outside it from what was read of them. ``own_judgements``
        (training only) are taken out of the prior: leave-one-out.
        """
        named: Sequence[str]
        outsiders = NO_OUTSIDERS
        if isinstance(doc_ids, Candidates):
            located, outsiders = doc_ids.located, doc_ids.outsiders
            named = doc_ids.doc_ids if own_judgements else []  # only training reads the names
        else:
            located, named = Located.of(self._index, doc_ids), doc_ids
        at, known = located.at, located.known
        size = len(self._log_prior)

        def read(values: Column, missing: float = NAN) -> Column:
            return np.where(known, values[at] if size else 0.0, missing)

        prior = read(self._log_prior, 0.0)
        terms = set(query_terms)
        shared = np.zeros(size)
        for term in terms:
            if (rows := self._titles.rows(term)) is not None:
                shared[rows] += 1
        overlap = read(shared / len(terms)) if terms else np.full(len(at), NAN)
        bm25 = self._titles.scores(query_terms)
        out = DocColumns(
            prior, overlap, read(self._doc_length), read(self._titles.lengths), read(bm25)
        )
        if len(outsiders.rows):
            self._outside(out, outsiders, query_terms)
        if own_judgements:
            for i, d in enumerate(named):
                if d in own_judgements:
                    votes = self.info[d].train_votes if known[i] else _votes_of(outsiders, i)
                    out.prior[i] = log_prior(votes - 1)
        return out

    def _outside(self, out: DocColumns, outsiders: Outsiders, query_terms: Sequence[str]) -> None:
        """Fill the rows of candidates outside the table from their own :class:`DocInfo`."""
        rows, infos = outsiders.rows, outsiders.info
        terms = set(query_terms)
        out.prior[rows] = [log_prior(i.train_votes) for i in infos]
        lengths = np.array([i.text_length for i in infos], dtype=np.float64)
        out.doc_length[rows] = np.log1p(lengths)
        out.title_length[rows] = [float(len(i.title_terms)) for i in infos]
        shared = [len(terms.intersection(i.title_terms)) for i in infos]
        if terms:
            out.title_overlap[rows] = np.array(shared, dtype=np.float64) / len(terms)
        # A title that shares no term with the query scores 0.0 (nothing is added to it).
        out.title_bm25[rows] = [
            text_score(i.title_terms, query_terms, self._stats) if n else 0.0
            for i, n in zip(infos, shared, strict=True)
        ]


def _votes_of(outsiders: Outsiders, row: int) -> int:
    """The training votes of the candidate at ``row``, one of ``outsiders``."""
    k = int(np.flatnonzero(outsiders.rows == row)[0])
    return outsiders.info[k].train_votes


def log_prior(train_votes: int) -> float:
    """The prior feature: log(1 + how many supervising queries judged the document)."""
    return math.log1p(max(float(train_votes), 0.0))


def build_features(
    evidence: Evidence,
    cands: Candidates,
    votes: VoteTable,
    doc_table: DocTable,
    query: QuerySide,
    depth: int,
    co_relevance: CoScores,
    own_judgements: Mapping[str, int] | None = None,
) -> npt.NDArray[np.float32]:
    """One row of :data:`FEATURES` per candidate, filled a column at a time.

    ``doc_table`` holds the documents' static features (:class:`DocTable`, in the judgement
    matrix's order); ``own_judgements`` (training only) are removed from the prior, as the
    query is from the neighbours (leave-one-out).
    """
    located, n = cands.located, len(cands.located)
    rows = np.empty((n, len(FEATURES)), dtype=np.float32)
    row_of = cands.rows
    _fill_list(
        rows,
        (_COL["dense_score"], _COL["dense_rank"], _COL["dense_z"]),
        evidence.dense,
        row_of,
        depth,
    )
    _fill_list(rows, (_COL["bm25_score"], _COL["bm25_rank"], None), evidence.bm25, row_of, depth)
    _fill_list(
        rows, (_COL["rm3_score"], _COL["rm3_rank"], _COL["rm3_z"]), evidence.rm3, row_of, depth
    )

    v = votes.columns(located)
    top_vote = votes.top_score
    rows[:, _COL["vote"]] = np.where(v.voted, v.score, 0.0)
    rows[:, _COL["vote_rank"]] = np.where(v.voted, v.rank, len(votes) + 1)
    share = v.score / top_vote if top_vote > 0 else np.zeros(n)
    rows[:, _COL["vote_share"]] = np.where(v.voted, share, 0.0)
    rows[:, _COL["voters"]] = np.where(v.voted, v.voters, 0)
    rows[:, _COL["vote_best_sim"]] = np.where(v.voted, v.best_similarity, NAN)
    rows[:, _COL["vote_nearest_rank"]] = np.where(v.voted, v.nearest_rank, NAN)
    rows[:, _COL["vote_max_grade"]] = np.where(v.voted, v.max_grade, 0)
    # How close the nearest (non-excluded) training query is: how much to trust the votes.
    rows[:, _COL["nearest_sim"]] = votes.nearest_similarity

    doc = doc_table.columns(cands, query.terms, own_judgements)
    rows[:, _COL["prior"]] = doc.prior
    rows[:, _COL["query_terms"]] = len(query.terms)
    rows[:, _COL["title_overlap"]] = doc.title_overlap
    rows[:, _COL["co_score"]], rows[:, _COL["co_rank"]] = co_relevance.columns(
        located, cands.ordinals
    )
    rows[:, _COL["lex_vote"]] = query.lexical.vote
    rows[:, _COL["lex_voters"]] = query.lexical.voters
    rows[:, _COL["lex_top_score"]] = query.lexical.top_score
    rows[:, _COL["doc_length"]] = doc.doc_length
    rows[:, _COL["title_length"]] = doc.title_length
    rows[:, _COL["title_bm25"]] = doc.title_bm25
    rows[:, _COL["query_chars"]] = len(query.text)
    rows[:, _COL["judged_bm25"]] = query.judged_by
    rows[:, _COL["nudged_cos"]] = query.nudged
    return rows
