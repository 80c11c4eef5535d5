"""Every backend's answer is read by one function: hits kept in order, the unusable dropped and
counted, and what cannot be repaired a failure that says why."""

from __future__ import annotations

from typing import Any

import pytest

from services.purple_agent.ranking_policy import ServerOrder
from services.purple_agent.search.backend import BadAnswer, ToolFailed, is_valid_doc_id, read_answer


def _hit(doc_id: Any, score: Any = 1.0, **extra: Any) -> dict[str, Any]:
    return {"doc_id": doc_id, "score": score, "title": "t", "text": "x", **extra}


def test_hits_keep_their_order_and_extra_keys_are_ignored() -> None:
    answer = {"results": [_hit("MED-2", 2.0, rank=1), _hit("MED-1", 1.5)], "qdrant_calls": 1}
    hits = read_answer(answer)
    assert [(c.doc_id, c.score) for c in hits.candidates] == [("MED-2", 2.0), ("MED-1", 1.5)]
    assert not hits.dropped


def test_unusable_hits_are_dropped_and_counted() -> None:
    results = [
        _hit("MED-1"),
        _hit("MED-1"),  # duplicate
        _hit("PMID-7"),  # no NFCorpus id
        _hit(42),  # no string id
        "MED-3",  # not an object
        {"score": 1.0},  # no id
        _hit("MED-4", score="high", title=None),  # a bad score or title is not fatal
    ]
    hits = read_answer({"results": results})
    assert [c.doc_id for c in hits.candidates] == ["MED-1", "MED-4"]
    assert hits.candidates[1].score is None
    assert hits.dropped == {"duplicate": 1, "invalid_id": 1, "malformed_hit": 3}


def test_answers_hold_valid_unique_ids_refilled_from_later_hits() -> None:
    ids = ["MED-1", "MED-1", "med-2", "MED-", "PLAIN-3", " MED-4", "MED-5", "MED-6"]
    hits = read_answer({"results": [_hit(d, float(-i)) for i, d in enumerate(ids)]})
    assert ServerOrder(10).rank("q", hits.candidates, 3) == ["MED-1", "MED-5", "MED-6"]
    assert hits.dropped == {"duplicate": 1, "invalid_id": 4}


def test_answers_are_short_only_when_fewer_valid_hits_exist() -> None:
    hits = read_answer({"results": [_hit("MED-1"), _hit("MED-1"), _hit("x")]})
    assert ServerOrder(10).rank("q", hits.candidates, 5) == ["MED-1"]
    assert ServerOrder(10).rank("q", read_answer({"results": []}).candidates, 5) == []


@pytest.mark.parametrize(
    ("doc_id", "valid"),
    [("MED-10", True), ("MED-5381", True), ("MED-", False), ("MED-1a", False), ("PLAIN-1", False)],
)
def test_doc_id_form(doc_id: str, valid: bool) -> None:
    assert is_valid_doc_id(doc_id) is valid


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], "the answer is not a JSON object"),
        ({}, "the answer has no results list"),
        ({"results": {"MED-1": 1}}, "the answer has a dict as its results list"),
        (
            {"results": [_hit("x"), _hit(None)]},
            "none of its 2 hits is usable (1 invalid id, 1 malformed hit)",
        ),
    ],
)
def test_an_answer_without_usable_hits_is_a_bad_answer(answer: Any, message: str) -> None:
    with pytest.raises(BadAnswer) as failed:
        read_answer(answer)
    assert str(failed.value) == message


def test_an_error_inside_the_answer_is_the_search_failing() -> None:
    with pytest.raises(ToolFailed, match=r"^Search failed: timeout$"):
        read_answer({"error": "Search failed: timeout", "results": []})
    assert read_answer({"error": None, "results": []}).candidates == []  # no error, no hits
