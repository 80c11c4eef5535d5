"""The load report's HTML page, from a real load run, opened in a real headless Chromium.

The green agent's CLI (a subprocess) loads the purple agent in front of the real MCP server for a
few seconds, and on until the agent has refused the few test queries made over the length limit,
so the page has failures too.
Chromium then renders the page: its DOM must hold the charts and the numbers of the JSON report,
and its screenshot must be the window's size and far from blank.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from html import escape
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import REPO
from services.common.limits import MAX_QUERY_CHARS
from services.green_agent.load.html_page import HISTOGRAM_TITLE, LATENCY_TITLE, THROUGHPUT_TITLE
from services.green_agent.load.run import query_pool
from services.nfcorpus.dataset import load_queries
from tests.support.green import CLI_TIMEOUT_S
from tests.support.polling import wait_for
from tests.support.purple import ThreadedServer
from tests.support.small_index import SmallIndex

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: run `make tools-chromium` (Debian)"
)
WIDTH, HEIGHT = 1200, 1800
BROWSER_TIMEOUT_S = 60
SEED = 42
# Positions in the run's (seeded) query order that get an over-long text: spread, so the
# failures are not one burst; the run lasts until they are answered.
INVALID_AT = (1, 4, 7)
CHART_S = 4.0  # and at least this long: the charts have one point a second


def _data_dir_with_invalid_queries(small_index: SmallIndex, target: Path) -> int:
    """Copy the index's BEIR folder, making a few test queries longer than the limit.

    Returns:
        How many queries were made invalid.

    """
    source = small_index.settings.data_dir
    shutil.copytree(source, target)
    queries = load_queries(source)
    # The load's own order (every query of the folder, seeded); each over-long text its own, so
    # that none is taken for a repeat of another.
    order = [query_id for query_id, _ in query_pool(source, "all", {}, SEED)]
    for n, position in enumerate(INVALID_AT):
        queries[order[position]] = "x" * (MAX_QUERY_CHARS + 1 + n)
    # A plain queries.jsonl is read before queries.jsonl.gz.
    with open(target / "queries.jsonl", "w", encoding="utf-8") as out:
        for query_id, text in queries.items():
            out.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    return len(INVALID_AT)


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # root in a container: Chromium's sandbox needs user namespaces
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--user-data-dir={profile}",  # under tmp_path, like its home below: nothing is left
        *args,
    ]
    # Chromium keeps its crash database under XDG_CONFIG_HOME whatever --user-data-dir says.
    home = {"HOME": str(profile), "XDG_CONFIG_HOME": str(profile), "XDG_CACHE_HOME": str(profile)}
    return subprocess.run(
        command,
        env={**os.environ, **home},
        capture_output=True,
        timeout=BROWSER_TIMEOUT_S,
        check=True,
    )


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which follows the 8-byte signature."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _invalid_answered(purple: ThreadedServer) -> float:
    """Requests the agent has refused as invalid so far."""
    metrics = httpx.get(purple.url + "/metrics").text
    prefix = 'purple_request_failures_total{reason="invalid_request"} '
    return sum(
        float(line.removeprefix(prefix)) for line in metrics.splitlines() if line.startswith(prefix)
    )


@pytest.fixture(scope="module")
def load_run(
    purple: ThreadedServer, small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    """The HTML page and JSON report of a closed-loop run at concurrency 2, stopped (SIGTERM)
    once it has lasted a few seconds and the agent has refused every invalid query, however
    many requests the machine managed by then."""
    root = tmp_path_factory.mktemp("load-report")
    invalid = _data_dir_with_invalid_queries(small_index, root / "data")
    html, out = root / "load.html", root / "load.json"
    args = ["--agent", purple.url, "--concurrency", "2", "--duration", "3600", "--seed", str(SEED)]
    files = ["--data-dir", str(root / "data"), "--out", str(out), "--html", str(html)]
    command = [sys.executable, "-m", "services.green_agent", "load", *args, *files]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = _invalid_answered(purple)  # the agent's counters are the process's: count from here

    def refused(count: int) -> bool:
        return _invalid_answered(purple) >= before + count

    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL) as load:
        try:
            wait_for(lambda: refused(1), timeout_s=CLI_TIMEOUT_S, what="the load's first answers")
            started = time.monotonic()
            wait_for(
                lambda: refused(invalid) and time.monotonic() - started >= CHART_S,
                timeout_s=CLI_TIMEOUT_S + CHART_S,
                what="answers to every invalid query",
            )
            load.send_signal(signal.SIGTERM)
            assert load.wait(timeout=CLI_TIMEOUT_S) == 0
        finally:
            load.kill()
    report = json.loads(out.read_text())
    assert report["errors"] >= invalid and report["ok"] > 0, report["error_samples"]
    return html, report


def test_the_page_holds_the_charts_and_the_numbers(
    load_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    html, report = load_run
    dom = _chromium(tmp_path / "profile", "--dump-dom", html.as_uri()).stdout.decode()
    assert dom.count("<svg") == 4
    for title in (THROUGHPUT_TITLE, LATENCY_TITLE, HISTOGRAM_TITLE):
        assert f"<title>{title}</title>" in dom
    assert f'<div class="value">{report["requests"]:,}</div>' in dom
    assert f'<div class="value">{report["errors"]:,}</div>' in dom
    assert dom.count("<polyline") >= 1 and dom.count("<rect") > 3  # lines, legend and bars
    for reason in report["errors_by_reason"]:
        assert f"<td>{reason}</td>" in dom
    # The servers' error text holds markup-like parts (`expected {"query": "<text>", ...}`): it
    # must come out as text, which the DOM serialises escaped again.
    assert report["error_samples"]
    for sample in report["error_samples"]:
        assert escape(sample, quote=False) in dom
    assert "<script" not in dom


def test_the_screenshot_is_the_window_and_not_blank(
    load_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    html, _ = load_run
    blank_html, blank_png, page_png = (
        tmp_path / "blank.html",
        tmp_path / "blank.png",
        tmp_path / "page.png",
    )
    blank_html.write_text("<!DOCTYPE html><html><body></body></html>\n", encoding="utf-8")
    _chromium(tmp_path / "profile", f"--screenshot={blank_png}", blank_html.as_uri())
    _chromium(tmp_path / "profile", f"--screenshot={page_png}", html.as_uri())
    assert _png_size(page_png) == _png_size(blank_png) == (WIDTH, HEIGHT)
    # A white page compresses to little (docs/observability.md, Load report); text and charts take
    # several times that.
    assert page_png.stat().st_size > 5 * blank_png.stat().st_size
