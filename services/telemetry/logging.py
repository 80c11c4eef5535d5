"""One logging set-up for every service: one line per record, JSON unless on a terminal.

``LOG_FORMAT=json`` writes each record as one JSON object (time, level, logger, message, the
record's extra fields, trace and span ids of the current span, the exception as text): what a
log pipeline parses. ``LOG_FORMAT=text`` writes the classic readable line; the default is text
on a terminal and JSON otherwise (a container's stdout). uvicorn, gunicorn and the application
all log through the root logger, so a stream never mixes formats.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from opentelemetry import trace

# HTTP and protocol clients log every request at INFO: one line per MCP call or A2A query is
# noise at hundreds per second.
QUIET_LOGGERS = ("httpx", "httpx2", "mcp.client", "a2a.client")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Attributes every LogRecord has: anything else on a record came from ``extra=``.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "color_message",  # uvicorn's copy of the message with terminal colours
}


class JsonFormatter(logging.Formatter):
    """A record as one JSON line, with its ``extra`` fields and the current trace context."""

    converter = time.gmtime  # type: ignore[assignment]  # UTC, as the trailing Z says

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        span = trace.get_current_span().get_span_context()
        if span.is_valid and "trace_id" not in line:
            line["trace_id"] = format(span.trace_id, "032x")
            line["span_id"] = format(span.span_id, "016x")
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return _one_line(json.dumps(line, default=str, ensure_ascii=False))


# Characters besides "\n" that line readers (Python's splitlines, some log shippers) break lines
# on; JSON leaves them raw when not escaping to ASCII, so a query holding one would split a record.
_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _one_line(text: str) -> str:
    r"""``text`` with Unicode line breaks and lone surrogates (unwritable as UTF-8) escaped.

    Both only occur inside JSON strings, where ``\uXXXX`` is the same character. Every request
    writes a line: the usual one (no such character) is checked by scans in C and returned as
    it is, rather than mapped character by character.
    """
    if text.isascii():
        return text
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        text = text.translate(_LINE_BREAKS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def log_format() -> str:
    """``json`` or ``text``: ``LOG_FORMAT``, else text on a terminal and JSON otherwise."""
    chosen = os.environ.get("LOG_FORMAT", "").lower()
    if chosen in ("json", "text"):
        return chosen
    return "text" if sys.stderr.isatty() else "json"


def formatter() -> logging.Formatter:
    """The formatter of :func:`log_format` (gunicorn's log config uses it too)."""
    return JsonFormatter() if log_format() == "json" else logging.Formatter(TEXT_FORMAT)


def setup_logging(level: str | None = None) -> None:
    """Configure the root logger once; ``LOG_LEVEL`` overrides the default INFO."""
    # Neither format writes where a record was made nor which thread or process made it, and
    # finding out (a walk up the stack, three lookups) is a good part of what a record costs
    # (the logging HOWTO's "Optimization"): every request writes one.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root = logging.getLogger()
    if not any(getattr(h, "_nfcorpus", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(formatter())
        handler._nfcorpus = True  # type: ignore[attr-defined]
        root.handlers = [handler]
    root.setLevel((level or os.environ.get("LOG_LEVEL", "INFO")).upper())
    for name in ("uvicorn", "uvicorn.error", "gunicorn.error"):  # through the root handler
        logging.getLogger(name).handlers = []
        logging.getLogger(name).propagate = True
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
