"""The one tie rule of every ranking: best first, equal scores in doc id order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.nfcorpus.ranking import break_ties
from services.retrieval.query.fusion import best_first

# Few distinct scores, so that most lists hold ties.
SCORES = st.dictionaries(
    st.from_regex(r"MED-[0-9]{1,3}", fullmatch=True), st.sampled_from([0.5, 1.0, 2.0, -1.0])
)


@given(SCORES, st.integers(min_value=0, max_value=30))
def test_best_first_is_the_sort_by_score_then_key(scores: dict[str, float], limit: int) -> None:
    expected = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    assert best_first(scores) == expected
    assert best_first(scores, limit) == expected[:limit]


def test_runs_are_sorted_in_place_and_the_cut_sorts_its_run_whole() -> None:
    ranked = [("MED-9", 3.0), ("MED-8", 2.0), ("MED-3", 2.0), ("MED-1", 1.0), ("MED-0", 2.0)]
    score, key = (lambda item: item[1]), (lambda item: item[0])
    assert break_ties(ranked, 2, score, key) == [("MED-9", 3.0), ("MED-3", 2.0)]
    # A score equal to an earlier run's but not adjacent to it stays where it is.
    assert [d for d, _ in break_ties(ranked, 5, score, key)] == [
        "MED-9", "MED-3", "MED-8", "MED-1", "MED-0",
    ]  # fmt: skip
    assert break_ties([], 3, score, key) == []
