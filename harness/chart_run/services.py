"""Services: one proxy container per Service, named by the Service's names.

Each sends connections to the Ready pods its selector matches (``service_proxy.py`` runs inside).

The runner calls ``publish`` whenever a pod's readiness changes; each Service's endpoints file is
then replaced atomically, and its proxy reads it on the next connection.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.chart_run.engine import Engine
from harness.chart_run.kubelet import Pod
from harness.chart_run.spec import Service

PROXY = Path(__file__).with_name("service_proxy.py")
MOUNT = "/run/service"


@dataclass
class ServiceProxy:
    """A Service and the folder its proxy reads its endpoints from."""

    service: Service
    container: str
    folder: Path

    def endpoints(self, pods: Iterable[Pod]) -> dict[str, list[tuple[str, int, str]]]:
        """Service port -> (address, target port, name) of every Ready, non-terminating pod."""
        members = sorted(
            (
                p
                for p in pods
                if p.ready and not p.terminating and self.service.selects(p.spec.labels)
            ),
            key=lambda p: p.name,
        )
        listed = {}
        for port, target in self.service.ports.items():
            listed[str(port)] = [(p.ip, _target_port(p, target), p.name) for p in members]
        return listed

    def publish(self, pods: Iterable[Pod]) -> None:
        """Replace the endpoints file (write aside, then rename: the proxy never reads half)."""
        aside = self.folder / "endpoints.json.new"
        aside.write_text(json.dumps(self.endpoints(pods)))
        aside.chmod(0o644)
        os.replace(aside, self.folder / "endpoints.json")


def _target_port(pod: Pod, target: str | int) -> int:
    if isinstance(target, int) or target.isdigit():
        return int(target)
    if target not in pod.spec.ports:
        raise ValueError(f"pod {pod.name} has no port named {target!r}")
    return pod.spec.ports[target]


async def start_proxy(
    engine: Engine, service: Service, image: str, network: str, root: Path, labels: dict[str, str]
) -> ServiceProxy:
    """Start the proxy of ``service``, with no endpoints yet (connections are refused)."""
    folder = root / "services" / service.name
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    proxy = ServiceProxy(service, f"{network}-svc-{service.name}", folder)
    proxy.publish([])
    aliases = [a for name in service.names for a in ("--network-alias", name)]
    ports = [a for port in service.ports for a in ("--port", str(port))]
    label_flags = [a for k, v in sorted(labels.items()) for a in ("--label", f"{k}={v}")]
    await engine(
        "run", "--detach", "--name", proxy.container, "--network", network, *aliases,
        "--pull", "never", "--user", "10001:10001", "--read-only", "--read-only-tmpfs=false",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *label_flags,
        "--volume", f"{PROXY}:/opt/chart-run/service_proxy.py:ro",
        "--volume", f"{folder}:{MOUNT}:ro",
        "--entrypoint", '["python", "/opt/chart-run/service_proxy.py"]',
        image, "--endpoints", f"{MOUNT}/endpoints.json", *ports,
    )  # fmt: skip
    return proxy


@dataclass
class Traffic:
    """What one Service's proxy did: connections per pod, and the ones it refused.

    A Service refuses connections while it has no Ready pod: while the release starts (pods
    start in any order; clients such as the purple agent finding its MCP server retry) and while
    it stops. Only refusals inside the serving window count as ``refused``: a fault.
    """

    connections: dict[str, int]
    refused: int
    refused_starting_or_stopping: int
    refusals: list[str]


async def read_traffic(
    engine: Engine, proxy: ServiceProxy, serving: tuple[float, float]
) -> Traffic:
    """Read the proxy's log; ``serving`` is the (wall-clock) window every pod was meant to be up."""
    counted: Counter[str] = Counter()
    refused, outside, samples = 0, 0, []
    for line in (await engine("logs", proxy.container)).splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event["event"] == "connected":
            counted[event["pod"]] += 1
        elif event["event"] == "refused":
            if serving[0] <= event["t"] <= serving[1]:
                refused += 1
                samples.append(
                    f"{event['t'] - serving[0]:.1f} s: {event.get('pod')}: {event['reason']}"
                )
            else:
                outside += 1
    return Traffic(dict(counted), refused, outside, samples[:10])
