"""The load generator's lean A2A client gives the evaluator's SDK client's verdicts.

Both clients ask the same server the same query; each answer, conforming or broken in one way
(a failed task, a status message, two artifacts, duplicates, unknown ids, a JSON-RPC error, an
HTTP error, a body that is not JSON, a connection cut mid-answer, no answer in time), must be
judged the same by :func:`ask_and_check`: accepted with the same ids, or refused for the same
reason. The server here is a stand-in for agents we do not write (it sends canned bytes, broken
framing included); against our real purple agent both clients must get the same rankings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from services.green_agent.evaluation.client import A2AVersion, connect
from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
from services.green_agent.load.client import connect_lean
from services.nfcorpus.dataset import load_corpus, load_queries
from tests.support.canned_agent import TIMEOUT_S, TOP_K, VALID, answers, canned_agent
from tests.support.small_index import SmallIndex


async def _verdict(client: Any, version: A2AVersion) -> QueryOutcome:
    return await ask_and_check(client, "q1", "vitamin d", TOP_K, VALID, legacy=version == "0.3")


Opener = Callable[..., Any]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_lean_and_sdk_clients_judge_every_answer_alike(version: A2AVersion) -> None:
    verdicts: dict[str, tuple[bool, str | None, list[str] | None]] = {}
    async with canned_agent() as agent:
        sdk = await connect(agent.base, version, TIMEOUT_S, 4)
        lean = await connect_lean(agent.base, version, TIMEOUT_S, 4)
        try:
            for case, answer in answers(version).items():
                agent.answer = answer
                ours = await _verdict(lean, version)
                theirs = await _verdict(sdk, version)
                assert (ours.ok, ours.reason, ours.doc_ids) == (
                    theirs.ok,
                    theirs.reason,
                    theirs.doc_ids,
                ), (
                    f"{case}: lean {ours.reason} ({ours.error}), SDK {theirs.reason} ({theirs.error})"
                )
                verdicts[case] = (ours.ok, ours.reason, ours.doc_ids)
        finally:
            await sdk.aclose()
            await lean.aclose()
    # The cases are what they say: one conforming answer, every other one refused.
    assert verdicts.pop("conforming") == (True, None, ["MED-1", "MED-2", "MED-3"])
    assert not any(ok for ok, _, _ in verdicts.values())
    assert verdicts["too slow"][1] == "timeout"
    assert verdicts["http 503"][1] == "overloaded"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_lean_client_refuses_origins_outside_the_allowed_list(version: A2AVersion) -> None:
    async with canned_agent() as agent:
        agent.answer = answers(version)["conforming"]
        allowed = AllowedOrigins(["http://localhost:1"])
        with pytest.raises(Exception) as refused:
            client = await connect_lean(agent.base, version, TIMEOUT_S, 4, allowed=allowed)
            await client.ask("q", TOP_K)
        assert getattr(refused.value, "reason", None) == "refused"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_both_clients_get_the_same_rankings_from_the_purple_agent(
    purple: Any, small_index: SmallIndex, version: A2AVersion
) -> None:
    queries = load_queries(small_index.settings.data_dir)
    valid = frozenset(d.doc_id for d in load_corpus(small_index.settings.data_dir))
    sdk = await connect(purple.url, version, 30, 4)
    lean = await connect_lean(purple.url, version, 30, 4)
    try:
        for query_id in small_index.query_ids[:8]:
            text = queries[query_id]
            legacy = version == "0.3"
            ours = await ask_and_check(lean, query_id, text, 5, valid, legacy=legacy)
            theirs = await ask_and_check(sdk, query_id, text, 5, valid, legacy=legacy)
            assert ours.ok, ours.error
            assert ours.doc_ids == theirs.doc_ids
    finally:
        await sdk.aclose()
        await lean.aclose()


@pytest.mark.parametrize("named", ["http://127.0.0.1:1/a b", "http://127.0.0.1:99999/", "ftp://x/"])
async def test_a_card_naming_an_unusable_url_is_a_failed_query_not_a_crash(named: str) -> None:
    async with canned_agent() as agent:
        agent.answer = answers("0.3")["conforming"]
        agent.card_url = named
        sdk = await connect(agent.base, "0.3", TIMEOUT_S, 4)
        lean = await connect_lean(agent.base, "0.3", TIMEOUT_S, 4)
        try:
            ours, theirs = await _verdict(lean, "0.3"), await _verdict(sdk, "0.3")
        finally:
            await sdk.aclose()
            await lean.aclose()
    assert not ours.ok
    assert (ours.ok, ours.reason) == (theirs.ok, theirs.reason)
