"""The assessment server's own metrics: what its callers make it hold and run.

The frame adds every server's request metrics (``green_http_request_duration_seconds``); these say
whether the bounds hold: the tasks kept (``GREEN_MAX_TASKS``, ``GREEN_MAX_TASK_BYTES``) and the
assessments admitted and running (``GREEN_MAX_RUNNING``).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from services.common.task_store import StoreGauges

TASK_STORE = StoreGauges(
    Gauge("green_task_store_tasks", "Tasks the A2A server keeps (bounded by GREEN_MAX_TASKS)."),
    Gauge(
        "green_task_store_bytes",
        "Serialized size of the tasks kept (bounded by GREEN_MAX_TASK_BYTES).",
    ),
)
RUNNING = Gauge(
    "green_assessments_running",
    "Assessments admitted and not yet ended (bounded by GREEN_MAX_RUNNING).",
)
REFUSED = Counter(
    "green_assessments_refused",
    "Assessment requests refused because GREEN_MAX_RUNNING assessments were running.",
)
