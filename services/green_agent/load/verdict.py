"""The verdict of a split run in a cluster: each worker judges the run's budgets once it is whole.

A worker's report is its share of the run: its percentiles a sample of the run's, its rate a
fraction of it. Budgets are therefore judged on the merged report only. In a cluster the merge
is the collector's, and the process whose exit status must carry the verdict is each generator
pod of the Indexed Job (the Job fails when a pod fails): so a worker given budgets, having
handed its report in, polls the collector's ``GET /report`` until it says the run is complete
(``complete``, true once every worker has reported; a collector that serves no partial merge
answers 404 until then), judges the budgets on that report and exits with the verdict
(:data:`~services.green_agent.load.thresholds.EXIT_BREACHED` on a breach). Every worker reaches
the same verdict, on the same figures.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from services.green_agent.load.report import LoadReport

#: How long a worker waits for the others beyond its own duration, by default: a worker started
#: late (its pod scheduled late, its agent not yet up) or run again (a retried pod) reports late.
LATE_WORKER_S = 300.0
#: Seconds between two reads of the collector's report.
POLL_S = 1.0


def report_url(url: str) -> str:
    """The collector's ``GET /report`` from its base URL or its ``/reports`` (``--report-to``)."""
    base = url.rstrip("/")
    return base.removesuffix("/reports") + "/report"


async def merged_report(url: str, wait_s: float, poll_s: float = POLL_S) -> LoadReport:
    """The collector's merged report once every worker of the run has reported.

    Args:
        url: The collector (its base URL or its ``/reports``, as ``--report-to`` names it).
        wait_s: How long to wait at most.
        poll_s: Seconds between reads.

    Raises:
        RuntimeError: the run was not complete after ``wait_s`` (who it waited for, and why).

    """
    target = report_url(url)
    deadline = time.monotonic() + wait_s
    waiting: object = "?"
    async with httpx.AsyncClient(timeout=30) as http:
        while True:
            try:
                answer = await http.get(target)
            except httpx.TransportError as e:
                waiting = f"no answer ({type(e).__name__})"
            else:
                body = _json_object(answer)
                if answer.is_success and body.get("complete", True):
                    return LoadReport.model_validate(body)
                waiting = body.get("waiting_for", f"HTTP {answer.status_code}")
            if time.monotonic() + poll_s > deadline:
                raise RuntimeError(
                    f"the run was not complete at {target} after {wait_s:g} s: the budgets "
                    f"cannot be judged (waiting for workers {waiting})"
                )
            await asyncio.sleep(poll_s)


def _json_object(answer: httpx.Response) -> dict[str, object]:
    """The answer's JSON object, or an empty one (a proxy's error page, say)."""
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
