"""A real Prometheus (Debian's ``prometheus``) scraping our servers on loopback.

What the chart's ServiceMonitor and PrometheusRule do in a cluster, on one machine: scrape every
server each second with the labels a cluster scrape adds (``namespace``, ``service``, and the
``job`` the Prometheus Operator gives a ServiceMonitor's targets, the name of the Service it
selects: :func:`job_name`, which the alert rules match), evaluate the chart's rule file, and
keep exemplars. The dashboard test (``tests/e2e/test_dashboard.py``) and
``make observe`` (``devtools/observe.py``) query it the way Grafana would. Servers run with
authentication on answer ``/metrics`` only to their scrape token: give it as ``scrape_token``,
and every scrape sends it from a file, as the ServiceMonitor sends the Secret item.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from harness.processes import REPO, ServerProcess, free_port

RULES = REPO / "helm/nfcorpus-retrieval/rules/nfcorpus-retrieval.rules.yaml"
#: The ``job`` prefix of the chart's Services (``<release>-nfcorpus-retrieval-<component>``).
JOB_PREFIX = "local-nfcorpus-retrieval-"
#: The components whose ServiceMonitor selects a Service of their own metrics port: the
#: Prometheus Operator names the job after that Service, ``<prefix><component>-metrics``.
METRICS_SERVICES = ("purple-agent", "mcp-server", "load-collector")


def job_name(component: str) -> str:
    """The ``job`` the Prometheus Operator gives the chart's ServiceMonitor of ``component``."""
    suffix = "-metrics" if component in METRICS_SERVICES else ""
    return JOB_PREFIX + component + suffix


class LocalPrometheus:
    """Prometheus over ``targets`` (component name -> ``host:port`` addresses), in ``workdir``."""

    def __init__(
        self,
        workdir: Path,
        targets: Mapping[str, Sequence[str]],
        *,
        namespace: str = "local",
        scrape_interval_s: int = 1,
        scrape_token: str | None = None,
    ) -> None:
        """Describe the server; nothing starts before :meth:`start`."""
        self.namespace = namespace
        self._scrape_token = scrape_token
        self._workdir = workdir
        self._targets = targets
        self._interval = f"{scrape_interval_s}s"
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        port = free_port()
        argv = [
            binary,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            # Exemplars (trace ids on latency samples) are kept only with this feature on.
            "--enable-feature=exemplar-storage",
            "--log.level=warn",
        ]
        self._server = ServerProcess(
            argv, port, ready_path="/-/ready", log_path=workdir / "prometheus.log"
        )
        self.url = self._server.base_url

    def _config(self) -> dict[str, Any]:
        rules = self._workdir / "rules.yaml"
        # RUNBOOKS is the chart's placeholder for its runbook base URL.
        rules.write_text(RULES.read_text().replace("RUNBOOKS", str(REPO / "docs/runbooks.md")))
        jobs: list[dict[str, Any]] = [
            {
                "job_name": job_name(component),
                "static_configs": [
                    {
                        "targets": list(addresses),
                        "labels": {"namespace": self.namespace, "service": component},
                    }
                ],
            }
            for component, addresses in self._targets.items()
        ]
        if self._scrape_token is not None:
            token = self._workdir / "scrape-token"
            token.write_text(self._scrape_token)
            token.chmod(0o600)
            for job in jobs:
                job["authorization"] = {"type": "Bearer", "credentials_file": str(token)}
        return {
            "global": {"scrape_interval": self._interval, "evaluation_interval": self._interval},
            "rule_files": [str(rules)],
            "scrape_configs": jobs,
        }

    def start(self) -> None:
        """Write the configuration and start; returns once Prometheus is ready."""
        self._workdir.mkdir(parents=True, exist_ok=True)
        # JSON is YAML: no YAML writer needed.
        (self._workdir / "prometheus.yml").write_text(json.dumps(self._config(), indent=1))
        self._server.start(timeout_s=60)

    def stop(self) -> None:
        """Stop Prometheus (its data stays in ``workdir``)."""
        self._server.stop()

    def log(self) -> str:
        """What Prometheus logged (for assertion messages)."""
        return self._server.log()

    def _get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.url + path, params=params, timeout=10)
        response.raise_for_status()
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query now: its series (``metric`` labels and ``value``)."""
        data = self._get("/api/v1/query", query=expr)
        return list(data["result"])

    def rules(self) -> list[dict[str, Any]]:
        """Every rule loaded, with its ``health`` and ``lastError`` (``/api/v1/rules``)."""
        return [rule for group in self._get("/api/v1/rules")["groups"] for rule in group["rules"]]

    def exemplars(self, expr: str, since_s: float) -> list[dict[str, Any]]:
        """Exemplars of the series ``expr`` selects over the last ``since_s`` seconds."""
        now = time.time()
        return list(self._get("/api/v1/query_exemplars", query=expr, start=now - since_s, end=now))

    def wait_for_targets(self, timeout_s: float = 30.0) -> None:
        """Wait until every target has been scraped successfully at least once."""
        expected = sum(len(addresses) for addresses in self._targets.values())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.query("up == 1")) == expected:
                return
            time.sleep(0.5)
        raise TimeoutError(f"targets not all up after {timeout_s:g}s: {self.query('up')}")

    def __enter__(self) -> LocalPrometheus:
        """Start (see :meth:`start`)."""
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        """Stop."""
        self.stop()
