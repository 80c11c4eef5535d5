"""The leaderboard's scenario (agentbeats/scenario.json5) run as AgentBeats runs it, through a
stand-in for its gateway (tests/support/gateway.py), in 4 shards and unsharded.

Our whole agent (small index) and our green agent (allowed origins as its manifest renders them)
run on loopback. Each shard is a gateway run of its own with ``shard_index`` and ``num_shards``
patched into the scenario's ``assessment_config``, as the leaderboard workflow does; the
unsharded run is the workflow's single shard (0 of 1). Each shard's results file is the
gateway's final answer, the run's file their merge as the leaderboard template's summary step
writes it (tests/support/leaderboard.py), and the leaderboard's queries (agentbeats/queries.json),
run as agentbeats.dev runs them over the table it builds from the results files, must read the
same figures from the 4 shards as from the unsharded run. ``num_queries`` is cut for CI; the
rest of the config is the scenario's.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import json5
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.fakes.mcp_toy import serve_app
from harness.processes import REPO, ServerProcess, free_port
from tests.support.gateway import Gateway, proxy_app, rewrite_card
from tests.support.leaderboard import board, queries, write_results_file
from tests.support.small_index import SmallIndex

SCENARIO = json5.loads((REPO / "agentbeats/scenario.json5").read_text())
GATEWAY = SCENARIO["components"]["gateway"]["config"]
GREEN_ENV = json5.loads((REPO / "agentbeats/amber-manifest.green.json5").read_text())["program"][
    "env"
]
EVERY, BEST = (q["name"] for q in queries())
NUM_QUERIES = 40
NUM_SHARDS = 4
#: The ids a submitter fills in metadata.agentbeats_ids.
IDS = {"nfcorpus_evaluator": "green-under-test", "retrieval_agent": "agent-under-test"}
#: Where Amber's router would put the green agent's proxy slot (any loopback port).
PROXY_SLOT_URL = "http://127.0.0.1:18080"


@pytest.fixture(scope="module")
def service_urls(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """The gateway's ``service_urls``: our green agent and our whole agent, by slot."""
    logs = tmp_path_factory.mktemp("gateway-run")
    # The stand-in's proxy listens on a free port, not the gateway's 8080; the green agent serves
    # on loopback here, where a wildcard port is allowed.
    allowed = (
        GREEN_ENV["GREEN_ALLOWED_ORIGINS"]
        .replace("${slots.proxy.url}", PROXY_SLOT_URL)
        .replace(":8080", ":*")
    )
    green_port, purple_port = free_port(), free_port()
    green = ServerProcess.module(
        "services.green_agent",
        ["serve", "--card-url", f"http://127.0.0.1:{green_port}/"],
        port=green_port,
        env={"GREEN_ALLOWED_ORIGINS": allowed},
        ready_path="/healthz",
        log_path=logs / "green.log",
    )
    purple = ServerProcess.module(
        "services.all_in_one",
        ["--card-url", f"http://127.0.0.1:{purple_port}/", "--mcp-port", str(free_port())],
        port=purple_port,
        env=small_index.env(private_copy=True),
        log_path=logs / "purple.log",
    )
    with green, purple:
        yield {"green": green.base_url, "purple1": purple.base_url}


def _config(shard_index: int, num_shards: int) -> dict[str, Any]:
    """The scenario's assessment_config as the workflow patches it for one shard."""
    config = {**GATEWAY["assessment_config"], "num_queries": NUM_QUERIES}
    return {**config, "shard_index": shard_index, "num_shards": num_shards}


def write_run(folder: Path, name: str, answers: Sequence[dict[str, Any]]) -> Path:
    """Write each shard's answer and the run's results file as the leaderboard workflow does.

    ``folder/shard-<i>/results.json`` is shard i's final answer of the gateway;
    ``folder/results/<name>.json`` merges them as the template's summary does, the scenario's
    ``agentbeats_ids`` filled in.
    """
    for index, answer in enumerate(answers):
        shard = folder / f"shard-{index}"
        shard.mkdir(parents=True)
        (shard / "results.json").write_text(json.dumps(answer, indent=2))
    participants = {
        role: given or IDS[role] for role, given in SCENARIO["metadata"]["agentbeats_ids"].items()
    }
    return write_results_file(folder, name, answers, participants)


@dataclass(frozen=True)
class Runs:
    """Both runs' final answers and folders, and the unsharded run's gateway, still serving."""

    sharded: list[dict[str, Any]]
    unsharded: dict[str, Any]
    sharded_folder: Path
    unsharded_folder: Path
    gateway: Gateway


@pytest.fixture(scope="module")
def runs(service_urls: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    roles = GATEWAY["participant_roles"]
    root = tmp_path_factory.mktemp("leaderboard")
    with ExitStack() as stack:
        # The workflow's shards run at once, each its own gateway run.
        shards = [
            stack.enter_context(Gateway(service_urls, roles, _config(i, NUM_SHARDS)))
            for i in range(NUM_SHARDS)
        ]
        sharded = [gateway.final_answer() for gateway in shards]
        gateway = stack.enter_context(Gateway(service_urls, roles, _config(0, 1)))
        unsharded = gateway.final_answer()
        write_run(root / "sharded", "tester-sharded", sharded)
        write_run(root / "unsharded", "tester-unsharded", [unsharded])
        yield Runs(sharded, unsharded, root / "sharded", root / "unsharded", gateway)


def test_every_shard_completes_with_its_slice(runs: Runs) -> None:
    for index, answer in enumerate(runs.sharded):
        assert answer["status"] == "completed", answer
        (data,) = answer["results"]
        assert data["shard"] == {"shard_index": index, "num_shards": NUM_SHARDS}
        assert data["failed"] == 0 and data["top_k"] == GATEWAY["assessment_config"]["top_k"]
    assert runs.unsharded["status"] == "completed", runs.unsharded
    (data,) = runs.unsharded["results"]
    assert data["shard"] == {"shard_index": 0, "num_shards": 1}
    assert data["num_queries"] == data["answered"] == NUM_QUERIES
    # The green agent read the participant's card through the gateway's proxy, then sent every
    # query to the URL the card names: the proxy's, rewritten.
    role = GATEWAY["participant_roles"]["purple1"]
    assert data["agent"] == f"{runs.gateway.proxy_url}/{role}"
    card, rpc = f"GET /{role}/.well-known/agent-card.json", f"POST /{role}/"
    assert runs.gateway.proxied[0] == card
    assert runs.gateway.proxied.count(rpc) == NUM_QUERIES


def test_an_assessment_in_a2a_03_follows_the_rewritten_card_url(
    service_urls: dict[str, str],
) -> None:
    # The 0.3 client fetches the participant's card before each query and posts to its url.
    config = {**_config(0, 1), "num_queries": 8, "protocol": "0.3"}
    with Gateway(service_urls, GATEWAY["participant_roles"], config) as gateway:
        answer = gateway.final_answer()
    assert answer["status"] == "completed", answer
    (data,) = answer["results"]
    assert data["protocol"] == "0.3" and data["answered"] == 8
    role = GATEWAY["participant_roles"]["purple1"]
    card, rpc = f"GET /{role}/.well-known/agent-card.json", f"POST /{role}/"
    assert sorted(gateway.proxied) == [card] * 8 + [rpc] * 8


def test_a_refused_assessment_ends_failed_with_no_results(
    service_urls: dict[str, str], tmp_path: Path
) -> None:
    config = {**_config(0, 1), "num_queries": 0}  # the green agent fails the task at once
    with Gateway(service_urls, GATEWAY["participant_roles"], config) as gateway:
        answer = gateway.final_answer()
    assert answer == {"status": "failed", "results": []}
    # Its results file shows on the board with no figures, and does not break it.
    write_run(tmp_path, "tester-failed", [answer])
    failed = (IDS["retrieval_agent"], None, None, None, None, None, 0, "failed")
    assert board(tmp_path)[EVERY].rows == [failed]


def test_the_shards_split_the_unsharded_sample(runs: Runs) -> None:
    (whole,) = runs.unsharded["results"]
    slices = [[q["query_id"] for q in a["results"][0]["queries"]] for a in runs.sharded]
    ids = [q for s in slices for q in s]
    assert len(ids) == len(set(ids)) == NUM_QUERIES  # disjoint
    assert set(ids) == {q["query_id"] for q in whole["queries"]}


def test_the_leaderboard_reads_the_unsharded_figures_from_the_shards(runs: Runs) -> None:
    (data,) = runs.unsharded["results"]
    figures = (
        IDS["retrieval_agent"],
        round(data["metrics"]["ndcg@5"], 4),
        round(data["metrics"]["ndcg@10"], 4),
        round(data["metrics"]["mrr"], 4),
        data["answered"],
        data["num_queries"],
    )
    assert data["num_queries"] == NUM_QUERIES
    sharded, unsharded = board(runs.sharded_folder), board(runs.unsharded_folder)
    assert sharded[EVERY].rows == [(*figures, NUM_SHARDS, "completed")]
    assert unsharded[EVERY].rows == [(*figures, 1, "completed")]
    # A run cut for CI is not of every test query: no best run to rank.
    assert sharded[BEST].rows == unsharded[BEST].rows == []
    assert all(t.columns[0] == "id" for t in (*sharded.values(), *unsharded.values()))


def test_the_proxy_rewrites_the_participants_loopback_card(
    runs: Runs, service_urls: dict[str, str]
) -> None:
    proxy, role = runs.gateway.proxy_url, GATEWAY["participant_roles"]["purple1"]
    card = httpx.get(f"{proxy}/{role}/.well-known/agent-card.json").json()
    assert card["url"] == f"{proxy}/{role}/"
    assert {i["url"] for i in card["supportedInterfaces"]} == {f"{proxy}/{role}/"}
    # Not through the proxy, the card names the agent itself.
    direct = httpx.get(service_urls["purple1"] + "/.well-known/agent-card.json").json()
    assert direct["url"] == service_urls["purple1"] + "/"


def test_the_proxy_forwards_the_callers_headers_and_streams_the_answer() -> None:
    release = threading.Event()

    async def echo(request: Request) -> Response:
        return JSONResponse(dict(request.headers))

    async def events(_: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            yield b"data: first\n\n"
            await asyncio.to_thread(release.wait, 10)  # until the caller has the first event
            yield b"data: last\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    agent = Starlette(routes=[Route("/echo", echo), Route("/events", events)])
    with serve_app(agent) as agent_url, serve_app(proxy_app({"agent": agent_url})) as proxy:
        headers = httpx.get(f"{proxy}/agent/echo", headers={"x-caller": "green"}).json()
        assert headers["host"] == proxy.removeprefix("http://")
        assert headers["x-caller"] == "green"
        assert httpx.get(f"{proxy}/nobody/echo").status_code == 404
        with httpx.stream("GET", f"{proxy}/agent/events", timeout=10) as answer:
            chunks = answer.iter_bytes()
            assert next(chunks) == b"data: first\n\n"  # a buffering proxy would time out here
            release.set()
            assert b"".join(chunks) == b"data: last\n\n"


def test_a_rewritten_card_loses_its_signatures_and_a_remote_one_is_left_alone(
    service_urls: dict[str, str],
) -> None:
    card = httpx.get(service_urls["purple1"] + "/.well-known/agent-card.json").json()
    signed = {**card, "signatures": [{"protected": "e30", "signature": "c2ln"}]}
    rewritten = rewrite_card(signed, "retrieval_agent", "http://127.0.0.1:18080")
    assert rewritten["url"] == "http://127.0.0.1:18080/retrieval_agent/"
    assert "signatures" not in rewritten
    remote_url = "https://retrieval.example.org:9010/"
    remote = {
        **signed,
        "url": remote_url,
        "supportedInterfaces": [{**i, "url": remote_url} for i in card["supportedInterfaces"]],
    }
    assert rewrite_card(remote, "retrieval_agent", "http://127.0.0.1:18080") == remote
