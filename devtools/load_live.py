"""A load run split across two generators, its collector's live page photographed mid-run.

``python -m devtools.load_live --out docs/images/load-live.png`` starts the MCP server and the
purple agent, a collector (``load-collect``) and two generator processes, as a Job's pods run,
along a shape of a step, a ramp and a step (open loop), each handing its figures to the
collector every second. Halfway through, headless Chromium (``make tools-chromium``) takes a
screenshot of the collector's ``/report.html``: the page ``docs/observability.md`` shows, as
a person port-forwarding to a collector in a cluster sees it while the run goes on.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from harness.processes import REPO, ServerProcess

STAGES = "15s:8/s,ramp:15s:24/s,20s:24/s"
WORKERS = 2
REPORT_EVERY_S = 1.0
WIDTH, HEIGHT = 1100, 2400


def _generator(index: int, agent: str, collector: str, log: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "services.green_agent", "load", "--agent", agent]
    argv += ["--stages", STAGES, "--warmup", "5s", "--worker", str(index)]
    argv += ["--workers", str(WORKERS), "--run", "live", "--report-to", collector]
    argv += ["--report-every", f"{REPORT_EVERY_S:g}", "--progress", "0"]
    argv += ["--threshold", "p99<2s,errors<1%"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def screenshot(url: str, out: Path, profile: Path) -> None:
    """A headless Chromium screenshot of ``url`` into ``out``."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed: run `make tools-chromium` (Debian)")
    home = {"HOME": str(profile), "XDG_CONFIG_HOME": str(profile), "XDG_CACHE_HOME": str(profile)}
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    command += [f"--window-size={WIDTH},{HEIGHT}", f"--user-data-dir={profile}"]
    command += [f"--screenshot={out}", url]
    subprocess.run(command, env={**os.environ, **home}, capture_output=True, check=True, timeout=60)


def main() -> None:
    """Run the load, photograph the live page, wait for the run's end."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images/load-live.png"))
    parser.add_argument("--at", type=float, default=30.0, help="seconds into the run to shoot")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        mcp = ServerProcess.module("services.mcp_server", log_path=folder / "mcp.log")
        with mcp:
            agent = ServerProcess.module(
                "services.purple_agent", ["--mcp-url", mcp.base_url + "/mcp"]
            )
            collect = ["load-collect", "--workers", str(WORKERS), "--run", "live"]
            collector = ServerProcess.module("services.green_agent", collect, ready_path="/healthz")
            with agent, collector:
                logs = [folder / f"generator-{i}.log" for i in range(WORKERS)]
                generators = [
                    _generator(i, agent.base_url, collector.base_url, logs[i])
                    for i in range(WORKERS)
                ]
                try:
                    time.sleep(args.at)
                    page = httpx.get(collector.base_url + "/report.html", timeout=10).text
                    if "Live:" not in page:
                        raise SystemExit("the collector's page is not live at the shot")
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    screenshot(collector.base_url + "/report.html", args.out, folder / "profile")
                    print(f"-> {args.out}")
                    for generator in generators:
                        generator.wait(timeout=120)
                finally:
                    for generator in generators:
                        generator.kill()


if __name__ == "__main__":
    main()
