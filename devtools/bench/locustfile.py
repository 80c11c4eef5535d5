"""Locust's ``FastHttpUser`` asking our agent what the load generator asks, checked the same way.

``make bench-load`` runs it (``locust -f devtools/bench/locustfile.py --headless ...``) beside our
generator, to compare what each spends per request. Each user sends the same bytes as the
generator's lean client (:mod:`services.green_agent.load.client`) of the protocol named by
``BENCH_A2A_PROTOCOL``: ``1.0``, ``SendMessage`` to the card's JSON-RPC interface, resolved once;
``0.3``, the card before every query and ``message/send`` to the ``url`` it names. Every answer
is read into the evaluator's reply and checked against the whole contract (exactly ``top_k``
unique ids that exist), as the generator checks it; a breach is a Locust failure. Only the
``POST`` of a query is named ``query``, so its count is the queries asked.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant, events, task
from locust.env import Environment

from services.green_agent.evaluation.answer_contract import ContractViolation, check_reply
from services.green_agent.evaluation.client import CARD_PATH, reply_from_v03_result, v03_request
from services.green_agent.evaluation.dataset import load_test_set
from services.green_agent.load.answers import reply_from_v10_result
from services.green_agent.load.client import v10_request

PROTOCOL = os.environ.get("BENCH_A2A_PROTOCOL", "1.0")
TOP_K = int(os.environ.get("BENCH_TOP_K", "5"))
DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR", "../shared/data/nfcorpus"))
_state: dict[str, Any] = {}


@events.test_start.add_listener  # type: ignore[untyped-decorator]  # Locust's is untyped
def _load_queries(environment: Environment, **_: Any) -> None:
    test_set = load_test_set(DATA_DIR)
    texts = list(test_set.queries.values())
    random.Random(42).shuffle(texts)
    _state["texts"] = itertools.cycle(texts)
    _state["valid"] = test_set.doc_ids


class A2AUser(FastHttpUser):
    """One caller asking queries back to back."""

    wait_time = constant(0)

    def on_start(self) -> None:
        """1.0: the card's JSON-RPC 1.0 interface, once (as the generator resolves it)."""
        self.endpoint = "/"
        if PROTOCOL == "1.0":
            card = self.client.get(CARD_PATH, name="card").json()
            for interface in card["supportedInterfaces"]:
                if (
                    interface["protocolBinding"] == "JSONRPC"
                    and interface["protocolVersion"] == "1.0"
                ):
                    self.endpoint = interface["url"]
                    break

    @task
    def ask(self) -> None:
        """One query, its answer checked against the contract."""
        text = next(_state["texts"])
        headers = {"content-type": "application/json", "accept": "application/json"}
        if PROTOCOL == "1.0":
            headers["a2a-version"] = "1.0"
            body, target = v10_request(text, TOP_K), self.endpoint
        else:
            target = self.client.get(CARD_PATH, name="card").json()["url"]
            body = json.dumps(v03_request(text, TOP_K), separators=(",", ":")).encode()
        with self.client.post(
            target,
            data=body,  # type: ignore[arg-type]  # sent as they are; the hint says str
            headers=headers,
            name="query",
            catch_response=True,
        ) as response:
            try:
                answer = response.json()
                if "error" in answer:
                    raise ContractViolation("jsonrpc_error", str(answer["error"]))
                result = answer.get("result")
                if PROTOCOL == "1.0":
                    reply = reply_from_v10_result(result)
                else:
                    reply = reply_from_v03_result(result or {})
                check_reply(reply, TOP_K, _state["valid"], legacy=PROTOCOL == "0.3")
            except Exception as e:  # every breach is a failure of this request
                response.failure(f"{type(e).__name__}: {e}")
