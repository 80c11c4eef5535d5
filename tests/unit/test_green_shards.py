"""Shards of a sharded assessment: disjoint slices of one sample, named where AgentBeats puts them.

The leaderboard template's workflows patch ``shard_index`` and ``num_shards`` into every shard's
``assessment_config``, and ``num_instances`` when the run is cut: the total number of task
instances across all shards (RDI-Foundation/agentbeats-leaderboard-template, run-scenario.yml and
quick-submit-runner.yml, "Total number of task instances to run across all shards").
"""

from __future__ import annotations

import json

import pytest
from a2a.helpers import new_text_part
from a2a.types import Message, Role

from services.green_agent.assessment.request import Assessment, Shard, parse_assessment
from services.green_agent.evaluation.dataset import TestSet, sample_query_ids

#: As many ids as NFCorpus has test queries.
IDS = [f"PLAIN-{i}" for i in range(323)]
HEAD = '{"participants": {"retrieval_agent": "http://p:1/"}'


def _parse(text: str) -> Shard:
    message = Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part(text)])
    return parse_assessment(message).shard


def _slices(sample: list[str], num_shards: int, num_instances: int | None) -> list[list[str]]:
    return [
        Shard(shard_index=i, num_shards=num_shards, num_instances=num_instances).slice(sample)
        for i in range(num_shards)
    ]


@pytest.mark.parametrize("num_queries", [1, 3, 50, 323])
def test_four_shards_are_disjoint_and_their_union_is_the_unsharded_sample(
    num_queries: int,
) -> None:
    sample = sample_query_ids(IDS, num_queries, seed=42)
    slices = _slices(sample, 4, None)
    assert sorted(q for s in slices for q in s) == sorted(sample)  # union, nothing twice
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert Shard().slice(sample) == sample


def test_every_test_query_in_four_shards() -> None:
    sample = sample_query_ids(IDS, 323, seed=42)
    slices = _slices(sample, 4, None)
    assert [len(s) for s in slices] == [81, 81, 81, 80]
    assert len({q for s in slices for q in s}) == 323 and set(sample) == set(IDS)
    # Each shard keeps every 4th query of the sample from its index on, in the sample's order.
    assert slices[1] == [sample[i] for i in range(1, 323, 4)]


def test_num_instances_is_the_runs_total_across_its_shards() -> None:
    # num_instances 100 of a 323-query sample: the run is the sample's first 100 queries, its 4
    # shards take 25 each, disjoint, and together they are the unsharded run cut the same way.
    sample = sample_query_ids(IDS, 323, seed=42)
    slices = _slices(sample, 4, 100)
    assert [len(s) for s in slices] == [25, 25, 25, 25]
    assert sorted(q for s in slices for q in s) == sorted(sample[:100])
    assert Shard(num_instances=100).slice(sample) == sample[:100]
    assert [len(s) for s in _slices(sample, 4, 10)] == [3, 3, 2, 2]


def test_num_instances_beyond_the_sample_cuts_nothing() -> None:
    sample = sample_query_ids(IDS, 50, seed=42)
    assert _slices(sample, 4, 1000) == _slices(sample, 4, None)
    assert Shard(num_instances=50).slice(sample) == sample


def test_shard_keys_come_from_config_or_assessment_config() -> None:
    in_config = _parse(HEAD + ', "config": {"shard_index": 1, "num_shards": 3}}')
    beside = _parse(HEAD + ', "assessment_config": {"shard_index": 2, "num_shards": 3}}')
    cut = _parse(
        HEAD + ', "assessment_config": {"shard_index": 1, "num_shards": 4, "num_instances": 20}}'
    )
    whole_cut = _parse(HEAD + ', "config": {"num_instances": 20}}')
    assert in_config.describe() == {"shard_index": 1, "num_shards": 3}
    assert beside.describe() == {"shard_index": 2, "num_shards": 3}
    assert cut.describe() == {"shard_index": 1, "num_shards": 4, "num_instances": 20}
    assert whole_cut.describe() == {"shard_index": 0, "num_shards": 1, "num_instances": 20}
    assert _parse(HEAD + "}").describe() is None


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ('"shard_index": 4, "num_shards": 4', "shard_index must be below 4, got 4"),
        ('"shard_index": 0', "shard_index needs num_shards"),
        ('"shard_index": 1, "num_instances": 2', "shard_index needs num_shards"),
        ('"num_shards": 2', "num_shards needs shard_index"),
        ('"shard_index": -1, "num_shards": 2', "greater than or equal to 0"),
        ('"shard_index": 0, "num_shards": 2, "num_instances": 0', "greater than or equal to 1"),
    ],
)
def test_a_bad_shard_says_what_is_wrong(shard: str, message: str) -> None:
    text = HEAD + ', "config": {' + shard + "}}"
    with pytest.raises(ValueError, match="invalid assessment request") as error:
        _parse(text)
    assert message in str(error.value)


def test_a_shard_that_num_instances_leaves_empty_is_refused() -> None:
    # 2 instances over 4 shards: shards 0 and 1 take one query each, 2 and 3 none, and say so.
    test_set = TestSet(queries={q: q for q in IDS}, qrels={q: {} for q in IDS}, doc_ids=frozenset())
    sizes = []
    for index in range(4):
        shard = {"shard_index": index, "num_shards": 4, "num_instances": 2}
        request = {**json.loads(HEAD + "}"), "config": {"num_queries": 323}}
        text = json.dumps({**request, "assessment_config": shard})
        message = Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part(text)])
        try:
            assessment = Assessment.resolve(parse_assessment(message), test_set, "1.0")
        except ValueError as error:
            assert "of 2 queries is empty" in str(error)
            sizes.append(0)
        else:
            sizes.append(len(assessment.query_ids))
    assert sizes == [1, 1, 0, 0]
