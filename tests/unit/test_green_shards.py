"""Shards of a sharded assessment: disjoint slices of one sample, named where AgentBeats puts them."""

from __future__ import annotations

import pytest
from a2a.helpers import new_text_part
from a2a.types import Message, Role

from services.green_agent.assessment.request import Shard, parse_assessment
from services.green_agent.evaluation.dataset import sample_query_ids

IDS = [f"PLAIN-{i}" for i in range(323)]


def _parse(text: str) -> Shard:
    message = Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part(text)])
    return parse_assessment(message).shard


@pytest.mark.parametrize("num_queries", [1, 3, 50, 323])
def test_four_shards_are_disjoint_and_their_union_is_the_unsharded_sample(
    num_queries: int,
) -> None:
    sample = sample_query_ids(IDS, num_queries, seed=42)
    slices = [Shard(shard_index=i, num_shards=4).slice(sample) for i in range(4)]
    assert sorted(q for s in slices for q in s) == sorted(sample)  # union, nothing twice
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert Shard().slice(sample) == sample


def test_shard_keys_come_from_config_or_assessment_config() -> None:
    head = '{"participants": {"retrieval_agent": "http://p:1/"}'
    in_config = _parse(head + ', "config": {"shard_index": 1, "num_shards": 3}}')
    beside = _parse(head + ', "assessment_config": {"shard_index": 2, "num_shards": 3}}')
    instances = _parse(head + ', "config": {"shard_index": 1, "num_instances": 2}}')
    assert in_config.describe() == {"shard_index": 1, "num_shards": 3}
    assert beside.describe() == {"shard_index": 2, "num_shards": 3}
    assert instances.describe() == {"shard_index": 1, "num_shards": 2}
    assert _parse(head + "}").describe() is None


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ('"shard_index": 4, "num_shards": 4', "shard_index must be below 4, got 4"),
        ('"shard_index": 0', "shard_index needs num_shards"),
        ('"num_shards": 2', "num_shards needs shard_index"),
        ('"shard_index": -1, "num_shards": 2', "greater than or equal to 0"),
    ],
)
def test_a_bad_shard_says_what_is_wrong(shard: str, message: str) -> None:
    text = '{"participants": {"retrieval_agent": "http://p:1/"}, "config": {' + shard + "}}"
    with pytest.raises(ValueError, match="invalid assessment request") as error:
        _parse(text)
    assert message in str(error.value)
