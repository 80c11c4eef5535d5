"""A JSON log record is one line of UTF-8, whatever text a request put in it."""

from __future__ import annotations

import json
import logging

from services.telemetry.logging import JsonFormatter


def test_line_breaks_and_lone_surrogates_are_escaped_not_written_raw() -> None:
    record = logging.LogRecord("nfcorpus.request", logging.INFO, "", 0, "POST /", None, None)
    query = "a\u2028b\u2029c\x85d\ud800e\nf é \\u2028"
    record.__dict__["query"] = query  # what logging's extra={"query": ...} does
    line = JsonFormatter().format(record)
    assert line.splitlines() == [line]  # Python's reader splits on U+2028, U+2029 and U+0085
    line.encode("utf-8")  # strict: a lone surrogate would raise here, and in the log stream
    assert "é" in line  # other text stays readable, not \u-escaped
    assert json.loads(line)["query"] == query  # the same text once parsed
