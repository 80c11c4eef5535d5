"""The release notes' green agent A2A server: allowed to call the release's own Services only."""

from __future__ import annotations

import re
import subprocess

from services.green_agent.evaluation.egress import AllowedOrigins
from tests.k8s.rendering import CHART, NAMESPACE, RELEASE, tool


def _notes(*sets: str) -> str:
    cmd = [str(tool("helm")), "install", RELEASE, str(CHART), "--namespace", NAMESPACE]
    cmd += ["--dry-run=client", *(f"--set={s}" for s in sets)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return out.split("\nNOTES:\n", 1)[1]


def _allowed(notes: str) -> AllowedOrigins:
    (value,) = re.findall(r'--env="GREEN_ALLOWED_ORIGINS=([^"]+)"', notes)
    return AllowedOrigins(value.split(","))


def test_the_served_green_agent_may_call_every_name_of_the_release_services_only() -> None:
    allowed = _allowed(_notes("purpleAgent.service.port=8080"))
    for service, port in (("purple-agent", 8080), ("mcp-server", 8000)):
        name = f"{RELEASE}-{service}"
        for host in (name, f"{name}.{NAMESPACE}", f"{name}.{NAMESPACE}.svc.cluster.local"):
            assert allowed.refusal(f"http://{host}:{port}/") is None, host
        assert allowed.refusal(f"http://{name}:{port + 1}/") is not None
    for elsewhere in ("http://127.0.0.1:9009/", "http://kubernetes.default.svc:443/"):
        assert allowed.refusal(elsewhere) is not None, elsewhere


def test_with_authentication_on_the_served_green_agent_sends_the_callers_token() -> None:
    assert '--env="GREEN_AGENT_TOKEN=$TOKEN"' not in _notes()
    serve = _notes("auth.enabled=true").split("services.green_agent serve")[0].rsplit("5. ", 1)[1]
    assert '--env="GREEN_AGENT_TOKEN=$TOKEN"' in serve


def test_with_the_load_test_on_the_notes_name_its_job_and_collector() -> None:
    assert "Load test" not in _notes()
    notes = _notes("loadTest.enabled=true", "loadTest.workers=4")
    assert f"4 generators of Job {RELEASE}-load-generator-r1" in notes
    assert f"port-forward svc/{RELEASE}-load-collector 8080:8080" in notes
