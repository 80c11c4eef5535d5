"""A second locustfile for tests: the outcome of each query request, in order, in a file.

Locust's reports count failures by message; a test that serves answers one after another needs
each request's outcome in the order asked. Loaded beside the locustfile under test (``locust -f
LOCUSTFILE,tests/support/locust_probe.py``), it writes one JSON line per ``query`` request to
``PROBE_OUT``: ``{"error": null}`` for a success, else the failure's text as Locust shows it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from locust import events
from locust.exception import CatchResponseError


@events.request.add_listener  # type: ignore[untyped-decorator]  # Locust's is untyped
def _write(name: str, exception: BaseException | None = None, **_: Any) -> None:
    if name != "query":
        return
    if exception is None:
        error = None
    elif isinstance(exception, CatchResponseError):
        error = str(exception.args[0])
    else:
        error = repr(exception)
    with open(os.environ["PROBE_OUT"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"error": error}) + "\n")
