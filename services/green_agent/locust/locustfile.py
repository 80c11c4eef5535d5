r"""Locust users that ask a retrieval agent what ``load`` asks and judge answers as the evaluator.

For people who run Locust already: its web UI, headless and distributed runs, CSV and HTML
reports, with our requests, answer contract and failure reasons, our closed-loop ``--stages`` and
our ``--threshold`` budgets (from the repository's root, or anywhere the package is installed)::

    locust -f services/green_agent/locust/locustfile.py --host http://127.0.0.1:9010
    locust -f services/green_agent/locust/locustfile.py --headless --host URL -u 8 -r 8 -t 60s \
        --threshold 'p99<2s,errors<1%'
    locust -f services/green_agent/locust/locustfile.py --headless --host URL \
        --stages 30s:4,ramp:60s:16,60s:16 --warmup 10s

Each user asks back to back, as a worker of ``load --concurrency`` does, with the bytes of the
load generator's lean client: over ``--protocol 1.0``, ``SendMessage`` to the card's JSON-RPC
interface, the card read once per user; over 0.3, the card before every query (a row of its own,
``card``), then ``message/send`` to the ``url`` it names. Each answer is read by
:func:`~services.green_agent.load.answers.answer_verdict`, the reading our client shares, so a
failure in Locust's table is ``REASON: MESSAGE`` with the evaluator's reason. The queries are
``load``'s (``--queries``, ``--data-dir``, ``--seed``); ``GREEN_TIMEOUT_S`` and
``GREEN_AGENT_TOKEN[_FILE]`` are read as ``load`` reads them. The pace of ``--stages``, the
answers' latencies and the budgets' verdict are :mod:`._run`'s.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant, events, task
from locust.argument_parser import LocustArgumentParser
from locust.contrib.fasthttp import ResponseContextManager
from locust.env import Environment
from locust.exception import CatchResponseError, StopUser
from locust.runners import MasterRunner

from services.green_agent.evaluation.client import CARD_PATH, A2AVersion, TransportFailure
from services.green_agent.evaluation.client import v03_request as v03_message
from services.green_agent.evaluation.dataset import fetch_test_set
from services.green_agent.evaluation.urls import below
from services.green_agent.load.answers import (
    Verdict,
    answer_verdict,
    jsonrpc_interface,
    read_json,
    v03_target,
)
from services.green_agent.load.client import v10_request
from services.green_agent.load.run import query_pool
from services.green_agent.locust._run import QUERY, StagesShape, record_answer, refuse
from services.green_agent.settings import GreenSettings, load_settings

# Locust takes the users and the shape it finds in this module.
__all__ = ["A2AUser", "StagesShape"]

logger = logging.getLogger(__name__)


@dataclass
class _Queries:
    """What this process's users ask: the settings, the queries in its order, the valid ids."""

    settings: GreenSettings | None = None
    pool: list[tuple[str, str]] = field(default_factory=list)
    order: Iterator[tuple[str, str]] = field(default_factory=lambda: iter(()))
    valid_ids: frozenset[str] = frozenset()


_queries = _Queries()


@events.init_command_line_parser.add_listener  # type: ignore[untyped-decorator]  # untyped
def _arguments(parser: LocustArgumentParser) -> None:
    try:
        settings = load_settings()
    except ValueError as e:  # a GREEN_ variable that does not read
        refuse(str(e))
    # The command line's only: a value typed in the web UI would skip argparse's checks.
    ours: dict[str, Any] = {"include_in_web_ui": False}
    parser.add_argument("--protocol", choices=["1.0", "0.3"], default=settings.protocol, **ours)
    parser.add_argument(
        "--top-k", type=int, default=5, choices=range(1, 101), metavar="1..100", **ours
    )
    parser.add_argument(
        "--queries",
        choices=["all", "test"],
        default="all",
        help="every NFCorpus query (train, dev, test; the default) or the test queries only",
        **ours,
    )
    parser.add_argument("--data-dir", default=str(settings.data_dir), help="the data set", **ours)
    parser.add_argument("--seed", type=int, default=42, help="seed of the queries' order", **ours)


@events.init.add_listener  # type: ignore[untyped-decorator]  # untyped
def _prepare(environment: Environment, **_: Any) -> None:
    """The settings, and the data set where users ask (a master has none).

    A process reads the data set of its own command line; a worker's users then ask with the
    master's ``--protocol`` and ``--top-k``, which Locust hands its workers. A data set that does
    not read stops Locust here, saying why (exit status 2), as it would stop ``load``.
    """
    options = environment.parsed_options
    assert options is not None  # Locust's command line made them
    _queries.settings = settings = load_settings()  # read once already, with the options
    if isinstance(environment.runner, MasterRunner):
        return
    data_dir = Path(options.data_dir)
    try:
        test_set = fetch_test_set(data_dir, settings.download_url, settings.download_md5)
        _queries.pool = query_pool(data_dir, options.queries, test_set.queries, options.seed)
    except Exception as e:  # a data set missing, broken or out of reach
        refuse(f"cannot read the data set in {data_dir}: {e}")
    _queries.valid_ids = test_set.doc_ids
    # Reading the data set kept gevent's loop from running, and its clock is that of its last
    # turn: a sleep lets it turn, so that a timer set next (Locust's -t) counts from now.
    time.sleep(0)  # gevent's sleep: Locust patched the standard library


@events.test_start.add_listener  # type: ignore[untyped-decorator]  # untyped
def _begin(environment: Environment, **_: Any) -> None:
    """A run starts: the queries in this process's order.

    A worker draws the pool in an order of its own (the seed plus its index), so workers repeat
    each other's queries only by chance (``load``'s workers split the pool and never do).
    """
    pool = list(_queries.pool)
    if (index := getattr(environment.runner, "worker_index", 0)) > 0:
        assert environment.parsed_options is not None
        random.Random(environment.parsed_options.seed + index).shuffle(pool)
    _queries.order = cycle(pool)


def _no_answer(error: BaseException | None) -> TransportFailure:
    """What the evaluator's clients say when no whole answer came: ``timeout`` or ``transport``."""
    # Locust's HTTP client wraps what failed (a timeout, say) in an error of its own.
    error = getattr(error, "original", None) or error
    name = type(error).__name__ if error is not None else "no answer"
    if isinstance(error, TimeoutError) or "timeout" in name.lower():
        return TransportFailure("timeout", f"no reply in time ({error or name})")
    return TransportFailure("transport", f"{name}: {error}")


def _received(response: ResponseContextManager) -> tuple[int, bytes]:
    """The status and body of an answer, or the evaluator's failure when none came whole.

    Locust's client hands over a body cut short as if whole: its length is checked against the
    one the head announced, as our client's parser checks it.
    """
    if not response.status_code:  # no HTTP answer: refused, reset, out of time
        raise _no_answer(getattr(response, "error", None))
    try:
        body = response.content or b""
    except Exception as e:  # the connection broke mid-body
        raise _no_answer(e) from e
    announced = response.headers.getlist("content-length") if response.headers else []
    if len(announced) == 1 and announced[0].strip().isdigit() and int(announced[0]) != len(body):
        raise TransportFailure(
            "transport", f"the answer ended after {len(body)} of its {int(announced[0])} bytes"
        )
    return response.status_code, body


def _text(verdict: Verdict) -> str:
    """A failure as Locust's table shows it: the evaluator's reason, then what went wrong."""
    return f"{verdict.reason}: {verdict.message}"


class A2AUser(FastHttpUser):
    """One caller asking queries back to back, each answer judged as the evaluator judges it."""

    wait_time = constant(0)

    def __init__(self, environment: Environment) -> None:
        """A user with ``load``'s timeout (``GREEN_TIMEOUT_S``) on each connect and read."""
        settings, options = _queries.settings, environment.parsed_options
        assert settings is not None and options is not None  # read when Locust started
        self.network_timeout = self.connection_timeout = settings.timeout_s
        super().__init__(environment)
        self.protocol: A2AVersion = options.protocol
        self.top_k: int = options.top_k
        # No compression asked, as our client asks none: the bytes counted are those sent.
        self.headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "accept-encoding": "identity",
        }
        if (token := settings.agent_authorization()) is not None:
            self.headers["authorization"] = token
        self.card_url = ""
        self.endpoint: str | None = None  # 1.0: the card's JSON-RPC interface, once read

    def on_start(self) -> None:
        """The card's URL: its path joined to the host's, as ``load`` joins it."""
        try:
            self.card_url = str(below(str(self.host), CARD_PATH))
        except ValueError as e:
            logger.error("--host %s: %s", self.host, e)
            raise StopUser from None

    @task
    def ask(self) -> None:
        """One query; its latency counts for the budgets when the answer met the contract."""
        _, text = next(_queries.order)
        started = time.perf_counter()
        try:
            if self.protocol == "1.0":
                if self.endpoint is None:
                    self.endpoint = jsonrpc_interface(self._card(), self.card_url)
                headers = {**self.headers, "a2a-version": "1.0"}
                verdict = self._query(self.endpoint, v10_request(text, self.top_k), headers)
            else:
                target = v03_target(self._card(), self.card_url)
                body = json.dumps(v03_message(text, self.top_k), separators=(",", ":"))
                verdict = self._query(target, body.encode(), self.headers)
        except TransportFailure as e:  # no usable card: the query fails unsent
            self._unsent(Verdict.failed(e), started)
            return
        if verdict.ok:
            record_answer(time.perf_counter() - started)

    def _card(self) -> Any:
        """The agent card's JSON; its failure is the card row's and the query's."""
        with self.client.get(
            self.card_url,
            headers=self.headers,
            name="card",
            catch_response=True,
            allow_redirects=False,  # as the evaluator: a redirect is an answer, not followed
        ) as response:
            try:
                card = read_json(*_received(response), self.card_url)
            except TransportFailure as e:
                response.failure(_text(Verdict.failed(e)))
                raise
            response.success()
        return card

    def _query(self, url: str, body: bytes, headers: dict[str, str]) -> Verdict:
        """Post one query; the evaluator's verdict on its answer is the request's outcome."""
        with self.client.post(
            url,
            data=body,  # type: ignore[arg-type]  # sent as they are; the hint says str
            headers=headers,
            name=QUERY,
            catch_response=True,
            allow_redirects=False,
        ) as response:
            try:
                status, content = _received(response)
            except TransportFailure as e:
                verdict = Verdict.failed(e)
            else:
                verdict = answer_verdict(
                    self.protocol,
                    status,
                    content,
                    url,
                    self.top_k,
                    _queries.valid_ids,
                    legacy=self.protocol == "0.3",
                )
            if verdict.ok:
                response.success()
            else:
                response.failure(_text(verdict))
        return verdict

    def _unsent(self, verdict: Verdict, started: float) -> None:
        """A query failed before its request (no usable card), counted in the ``query`` row."""
        self.environment.events.request.fire(
            request_type="POST",
            name=QUERY,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=0,
            response=None,
            context={},
            exception=CatchResponseError(_text(verdict)),
        )
