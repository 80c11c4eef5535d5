"""``make observe``: one load run on the full index, as the dashboard and the load report show it.

Starts the MCP server and the purple agent, a real Prometheus scraping both each second with the
chart's rules (``harness.prometheus``), and the green agent's load for ``--duration``
seconds over every NFCorpus query (so the server encodes and searches rather than answering from
its result cache; the report states the hit ratio), with one invalid request (the caller's
mistake) every few seconds. Then it asks
Prometheus every dashboard query over the run, as Grafana would, and writes the figures to
``<out>.json`` and ``<out>.md``; the load report goes to ``<out>-load.html`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from harness.dashboard import PanelValue, panel_values
from harness.processes import BASE_ENV, REPO, ServerProcess
from harness.prometheus import LocalPrometheus
from services.green_agent.load.report import LoadReport, workload_line

#: An A2A 0.3 request whose query is empty: refused in validation, a failed task.
INVALID = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "kind": "message",
            "messageId": "observe-invalid",
            "role": "user",
            "parts": [{"kind": "text", "text": '{"query": ""}'}],
        }
    },
}
INVALID_EVERY_S = 5.0


def _send_invalid(url: str, stop: threading.Event) -> None:
    while not stop.wait(INVALID_EVERY_S):
        httpx.post(url, json=INVALID, timeout=10)


def _cell(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.4g}"


def _markdown(values: list[PanelValue]) -> str:
    """One row per series with a value; many series at 0 or without data (0/0) in one row."""
    lines = ["| panel | query | series | value |", "| --- | --- | --- | --- |"]
    for value in values:
        panel, legend = value.query.panel, value.query.legend
        if value.query.needs_cluster:
            lines.append(f"| {panel} | {legend} | (cluster series only) | |")
            continue
        shown = [(labels, n) for labels, n in value.series if n != 0 and not math.isnan(n)]
        if len(value.series) <= 2:  # a single figure reads better as itself, 0 or n/a
            shown = value.series
        for labels, number in shown:
            series = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "-"
            lines.append(f"| {panel} | {legend} | {series} | {_cell(number)} |")
        if quiet := len(value.series) - len(shown):
            lines.append(f"| {panel} | {legend} | {quiet} series at 0 or without data | |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=60, help="seconds of load")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=REPO / "reports/observe")
    args = parser.parse_args()
    workdir = REPO / "var/observe"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    mcp = ServerProcess.module("services.mcp_server", log_path=workdir / "mcp.log")
    agent_args = ["--mcp-url", mcp.base_url + "/mcp"]
    purple = ServerProcess.module(
        "services.purple_agent", agent_args, log_path=workdir / "purple.log"
    )
    targets = {
        "purple-agent": [purple.base_url.removeprefix("http://")],
        "mcp-server": [mcp.base_url.removeprefix("http://")],
    }
    with mcp, purple, LocalPrometheus(workdir / "prometheus", targets) as prometheus:
        prometheus.wait_for_targets()
        stop = threading.Event()
        invalid = threading.Thread(target=_send_invalid, args=(purple.base_url + "/", stop))
        invalid.start()
        load = [
            sys.executable, "-m", "services.green_agent", "load", "--agent", purple.base_url,
            "--duration", str(args.duration), "--concurrency", str(args.concurrency),
            "--mcp-url", mcp.base_url,
            "--out", f"{args.out}-load.json", "--html", f"{args.out}-load.html",
        ]  # fmt: skip
        try:
            subprocess.run(load, check=True, cwd=REPO, env={**os.environ, **BASE_ENV})
        finally:
            stop.set()
            invalid.join()
        time.sleep(3.0)  # a last scrape, and the rules evaluated on it
        values = panel_values(prometheus, rate_interval=f"{args.duration}s")
    figures = [
        {
            "panel": v.query.panel,
            "query": v.query.legend,
            "expr": v.query.expr,
            "series": [
                {"labels": labels, "value": None if math.isnan(n) else n} for labels, n in v.series
            ],
        }
        for v in values
    ]
    Path(f"{args.out}.json").write_text(json.dumps(figures, indent=1) + "\n")
    # What the load asked: a workload the cache answers would leave the search panels empty.
    load_report = LoadReport.model_validate_json(Path(f"{args.out}-load.json").read_text())
    table = f"Load: {workload_line(load_report)}.\n\n" + _markdown(values)
    Path(f"{args.out}.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
