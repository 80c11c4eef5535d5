"""Probes as the kubelet runs them: one HTTP GET, and the count of results in a row.

HTTP GET to the pod's address on a new connection each time; 2xx and 3xx pass, anything else or
no answer within ``timeoutSeconds`` fails. A probe changes state after ``successThreshold``
passes or ``failureThreshold`` failures in a row.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from harness.chart_run.spec import Probe

USER_AGENT = "kube-probe/1.29"


@dataclass
class ProbeTally:
    """Consecutive results of one probe and the state they give, as the kubelet counts them."""

    probe: Probe
    passing: bool
    successes: int = 0
    failures: int = 0

    def record(self, ok: bool) -> bool:
        """Count one result; True when it changed the state."""
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if not self.passing and self.successes >= self.probe.success_threshold:
                self.passing = True
                return True
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.passing and self.failures >= self.probe.failure_threshold:
                self.passing = False
                return True
        return False

    @property
    def exhausted(self) -> bool:
        """As many failures in a row as the probe allows (the kubelet restarts the container)."""
        return self.failures >= self.probe.failure_threshold


async def http_probe(client: httpx.AsyncClient, ip: str, probe: Probe) -> str | None:
    """One probe; None when it passes, else what went wrong."""
    try:
        response = await client.get(
            f"http://{ip}:{probe.port}{probe.path}",
            timeout=probe.timeout_s,
            headers={"User-Agent": USER_AGENT, "Connection": "close"},
        )
    except httpx.HTTPError as e:
        return f"GET {probe.path}: {type(e).__name__} {e}".strip()
    if 200 <= response.status_code < 400:
        return None
    return f"GET {probe.path}: HTTP {response.status_code} {response.text[:200]}"
