"""A request sent exactly as written: header values with the whitespace around them kept.

httpx (h11) refuses to send such a value, which is what a server must read trimmed
(RFC 9110 section 5.5); http.client sends it as given.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit


def post_as_written(url: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    """POST ``body`` as JSON to ``url`` with ``headers`` untouched: the status and JSON answer."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("POST", parts.path or "/", body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()
