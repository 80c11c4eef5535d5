"""The purple agent's ranking policy: server order, exact ties by doc id, cut to top_k (the ids are
checked where the answer is read: tests/unit/test_purple_search_hits.py)."""

from __future__ import annotations

import pytest

from services.purple_agent.ranking_policy import Candidate, ServerOrder


def _hits(*ids: str) -> list[Candidate]:
    return [Candidate(doc_id=d, score=float(-i)) for i, d in enumerate(ids)]


def test_keeps_server_order_and_cuts_to_top_k() -> None:
    policy = ServerOrder(min_candidates=10)
    assert policy.rank("q", _hits("MED-3", "MED-1", "MED-2"), 2) == ["MED-3", "MED-1"]


def test_returns_fewer_only_when_fewer_candidates_exist() -> None:
    assert ServerOrder(10).rank("q", _hits("MED-1"), 5) == ["MED-1"]
    assert ServerOrder(10).rank("q", [], 5) == []


def test_does_not_reorder_by_score() -> None:
    hits = [Candidate(doc_id="MED-1", score=0.1), Candidate(doc_id="MED-2", score=9.0)]
    assert ServerOrder(5).rank("q", hits, 2) == ["MED-1", "MED-2"]


@pytest.mark.parametrize(
    ("minimum", "top_k", "asked"), [(20, 5, 20), (20, 50, 50), (20, 100, 100), (1, 7, 7)]
)
def test_asks_for_max_of_top_k_and_minimum_capped_at_100(
    minimum: int, top_k: int, asked: int
) -> None:
    assert ServerOrder(minimum, max_candidates=100).candidates(top_k) == asked


def test_exact_ties_are_put_in_doc_id_order_without_crossing_other_scores() -> None:
    hits = [
        Candidate(doc_id="MED-9", score=3.0),
        Candidate(doc_id="MED-7", score=2.0),
        Candidate(doc_id="MED-5", score=2.0),
        Candidate(doc_id="MED-6", score=1.0),
        Candidate(doc_id="MED-1", score=2.0),  # equal score but not adjacent: stays put
    ]
    assert ServerOrder(5).rank("q", hits, 5) == ["MED-9", "MED-5", "MED-7", "MED-6", "MED-1"]
    assert ServerOrder(5).rank("q", list(reversed(hits[1:3])), 2) == ["MED-5", "MED-7"]


def test_a_tie_run_the_cut_falls_into_is_sorted_whole_before_the_cut() -> None:
    hits = [
        Candidate(doc_id="MED-9", score=3.0),
        Candidate(doc_id="MED-8", score=2.0),
        Candidate(doc_id="MED-7", score=2.0),
        Candidate(doc_id="MED-3", score=2.0),
        Candidate(doc_id="MED-1", score=1.0),
    ]
    assert ServerOrder(5).rank("q", hits, 2) == ["MED-9", "MED-3"]
    assert ServerOrder(5).rank("q", hits, 4) == ["MED-9", "MED-3", "MED-7", "MED-8"]
    no_scores = [Candidate(doc_id=d) for d in ("MED-4", "MED-2", "MED-3")]  # one run
    assert ServerOrder(5).rank("q", no_scores, 1) == ["MED-2"]
