"""A JSON log record is one line of UTF-8, whatever text a request put in it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from harness.processes import REPO
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


def test_ordinary_lines_come_out_as_json_wrote_them() -> None:
    for query in ("vitamin D", "café au lait et santé…", "a\nb"):  # \n is escaped by JSON
        record = logging.LogRecord("nfcorpus.request", logging.INFO, "", 0, "POST /", None, None)
        record.__dict__["query"] = query
        line = JsonFormatter().format(record)
        assert json.loads(line)["query"] == query and line.splitlines() == [line]
        assert json.dumps(query, ensure_ascii=False) in line  # not escaped further


def test_records_still_format_without_their_call_site() -> None:
    # setup_logging turns off the call-site lookup (every request writes a line): no format of
    # ours shows it, and records format as before. A fresh interpreter: it changes the process.
    code = (
        "import logging\n"
        "from services.telemetry.logging import setup_logging\n"
        "setup_logging()\n"
        "logging.getLogger('nfcorpus.request').info('POST %s', '/mcp', extra={'status': 200})\n"
    )
    for log_format in ("json", "text"):
        env = {**os.environ, "PYTHONPATH": str(REPO), "LOG_FORMAT": log_format}
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        (line,) = run.stderr.splitlines()
        if log_format == "json":
            record = json.loads(line)
            assert record["message"] == "POST /mcp" and record["status"] == 200
            assert record["logger"] == "nfcorpus.request" and record["level"] == "INFO"
        else:
            assert line.endswith(" INFO nfcorpus.request: POST /mcp")
