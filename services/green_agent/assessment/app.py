"""The evaluator's A2A app: the card, the assessment executor behind JSON-RPC, in the frame.

The app serves A2A JSON-RPC (1.0 and 0.3) and the card at ``/``, in the frame. With
``GREEN_AUTH_TOKENS[_FILE]`` every request but the card and ``/healthz`` needs a caller's token
(and ``/metrics`` the scrape token, ``GREEN_METRICS_TOKEN[_FILE]``: :mod:`services.common.auth`),
and each caller reads back only its own tasks; without, no task is kept once it ends and none can
be read back. The tasks kept are bounded in count, bytes and age
(:mod:`services.common.task_store`), the assessments running at once by ``GREEN_MAX_RUNNING``
(:mod:`services.green_agent.assessment.running`). A result's counts leave as integers whichever
protocol asked (:mod:`services.green_agent.assessment.json_numbers`). On a non-loopback address it starts only
with callers' tokens or an explicit allow-list without wildcards.
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette

from services.common.a2a import A2A_RPC_PATH, CARD_PATHS
from services.common.a2a_input import message_problem
from services.common.frame import ServiceId, service_app
from services.common.task_store import BoundedTaskStore
from services.green_agent.assessment.card import build_card
from services.green_agent.assessment.executor import AssessmentExecutor
from services.green_agent.assessment.handler import a2a_routes
from services.green_agent.assessment.json_numbers import WholeNumbers
from services.green_agent.assessment.metrics import TASK_STORE
from services.green_agent.assessment.running import Running
from services.green_agent.evaluation.egress import SETTING
from services.green_agent.settings import GreenSettings

SERVICE = ServiceId(metric_prefix="green", trace_name="green-agent")
_log = logging.getLogger(__name__)


def create_app(settings: GreenSettings) -> Starlette:
    """Build the evaluator's app; the test set is read on the first assessment.

    Raises:
        ValueError: a token is unusable (:class:`~services.common.auth.TokenError`), or the
            server would be open on a non-loopback address
            (:meth:`~services.green_agent.settings.GreenSettings.open_serving_problem`).

    """
    settings.check_token_purposes()
    tokens = settings.tokens()
    if (problem := settings.open_serving_problem(authenticated=bool(tokens))) is not None:
        raise ValueError(problem)
    if settings.origins().any:
        _log.warning(
            "%s=*: an assessment may name any URL, and the evaluator's token goes there", SETTING
        )
    card = build_card(settings.public_url, authenticated=bool(tokens))
    s = settings
    tasks = BoundedTaskStore(
        s.max_tasks,
        s.max_task_bytes,
        s.task_ttl_s,
        max_tasks_per_caller=s.max_tasks_per_caller,
        max_bytes_per_caller=s.max_task_bytes_per_caller,
        keep_finished=bool(tokens),
        gauges=TASK_STORE,
    )
    running = Running(s.max_running)
    executor = AssessmentExecutor(settings, running)
    routes = a2a_routes(card, executor, tasks, running, readable_tasks=bool(tokens))
    checks = {A2A_RPC_PATH: message_problem}
    app = service_app(
        SERVICE,
        routes,
        jsonrpc_paths=[A2A_RPC_PATH],
        body_checks=checks,
        tokens=tokens,
        public_get_paths=CARD_PATHS,
        metrics_tokens=settings.metrics_tokens(),
        allowed_hosts=settings.host_rules(settings.public_url),
    )
    # Outermost: the result's counts leave as integers whichever protocol asked.
    app.add_middleware(WholeNumbers, paths=[A2A_RPC_PATH])
    return app
