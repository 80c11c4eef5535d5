import numpy as np
import pytest

from services.retrieval.query.judgements import Judgements
from services.retrieval.query.votes import LEXICAL_NEIGHBOURS, LexicalVoters

QRELS = {
    "Q-flax": {"A": 1, "B": 1},
    "Q-flax-2": {"A": 1},
    "Q-arsenic": {"C": 2},
    "Q-rice": {"C": 1, "D": 1},
}
TERMS = {
    "Q-flax": ("flaxse", "breast", "cancer"),
    "Q-flax-2": ("flaxse", "hormon"),
    "Q-arsenic": ("arsen", "rice"),
    "Q-rice": ("rice", "protein"),
}
JUDGEMENTS = Judgements(QRELS, ["A", "B", "C", "D"])


def test_nearest_queries_by_bm25_vote_for_their_documents() -> None:
    voters = LexicalVoters(TERMS, JUDGEMENTS)
    cols = voters.columns(["flaxse", "cancer"], ["A", "B", "C", "unknown"])
    # Q-flax matches both terms (the best score, weight 1); Q-flax-2 only "flaxse" (weight < 1).
    assert cols.top_score > 0
    assert cols.voters.tolist() == [2.0, 1.0, 0.0, 0.0]
    assert cols.vote[1] == pytest.approx(1.0) and 1.0 < cols.vote[0] < 2.0
    assert cols.vote[2] == 0.0 and cols.vote[3] == 0.0


def test_grades_weigh_and_a_voting_query_leaves_itself_out() -> None:
    voters = LexicalVoters(TERMS, JUDGEMENTS)
    cols = voters.columns(["arsen", "rice"], ["C", "D"])
    assert cols.vote[0] == pytest.approx(2.0 + cols.vote[1] * 1.0)  # Q-arsenic's grade 2 + Q-rice
    alone = voters.columns(["arsen", "rice"], ["C", "D"], exclude_query="Q-arsenic")
    assert alone.voters.tolist() == [1.0, 1.0] and alone.vote[0] == pytest.approx(1.0)


def test_no_shared_word_means_no_votes() -> None:
    cols = LexicalVoters(TERMS, JUDGEMENTS).columns(["kale"], ["A", "C"])
    assert cols.vote.tolist() == [0.0, 0.0] and cols.voters.tolist() == [0.0, 0.0]
    assert cols.top_score == 1.0
    empty = LexicalVoters({}, Judgements({}, ["A"])).columns(["flaxse"], ["A"])
    assert empty.vote.tolist() == [0.0]


def test_only_the_nearest_queries_vote_and_ties_break_by_query_id() -> None:
    many = {f"Q{i:02d}": {f"D{i:02d}": 1} for i in reversed(range(LEXICAL_NEIGHBOURS + 5))}
    terms = {q: ("soy",) for q in many}  # all tied
    judgements = Judgements(many, sorted({d for j in many.values() for d in j}))
    cols = LexicalVoters(terms, judgements).columns(["soy"], judgements.doc_ids)
    assert int(cols.voters.sum()) == LEXICAL_NEIGHBOURS
    assert np.flatnonzero(cols.voters).tolist() == list(
        range(LEXICAL_NEIGHBOURS)
    )  # the ten first ids
