"""The typed model of a rendered chart that the runner starts: pods, Deployments, Jobs, Services.

``manifests.load_release`` builds it from ``helm template`` output, every reference resolved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


class ManifestError(ValueError):
    """A manifest the runner cannot honour, or a reference that does not resolve."""


@dataclass(frozen=True)
class Probe:
    """An HTTP GET probe, its port already a number."""

    path: str
    port: int
    period_s: float
    timeout_s: float
    failure_threshold: int
    success_threshold: int
    initial_delay_s: float


@dataclass(frozen=True)
class Volume:
    """A volume mount: an emptyDir (``files`` None) or the projected files of a Secret/ConfigMap."""

    name: str
    mount_path: str
    read_only: bool
    size_limit: str | None = None
    files: Mapping[str, bytes] | None = None
    mode: int = 0o644


@dataclass(frozen=True)
class FieldRef:
    """An env value from the pod's own metadata (the downward API).

    ``metadata.name``, ``metadata.namespace`` or ``metadata.annotations['key']`` (a Job's pods:
    their completion index).
    """

    path: str


@dataclass(frozen=True)
class Security:
    """Who the container runs as and what it may do."""

    uid: int
    gid: int
    fs_group: int | None
    read_only_root: bool
    no_new_privileges: bool
    drop_all_capabilities: bool


@dataclass(frozen=True)
class PodSpec:
    """One pod's single container with everything it references resolved."""

    name: str
    labels: Mapping[str, str]
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str | FieldRef], ...]
    ports: Mapping[str, int]
    startup: Probe | None
    readiness: Probe | None
    liveness: Probe | None
    cpu_limit: str | None
    memory_limit: str | None
    security: Security
    volumes: tuple[Volume, ...]
    pre_stop: tuple[str, ...] | None
    grace_s: float
    restart_policy: str

    def mounted_file(self, path: str) -> bytes | None:
        """The content of the Secret or ConfigMap file the container sees at ``path``, if any."""
        for volume in self.volumes:
            relative = path.removeprefix(volume.mount_path.rstrip("/") + "/")
            if volume.files is not None and relative != path and relative in volume.files:
                return volume.files[relative]
        return None


@dataclass(frozen=True)
class Deployment:
    """A Deployment: how many pods of which template, and how a rollout may proceed."""

    name: str
    replicas: int
    template: PodSpec
    max_surge: int
    max_unavailable: int
    progress_deadline_s: float = 600.0


@dataclass(frozen=True)
class Job:
    """A Job: ``completions`` pods of a template to succeed, ``parallelism`` at a time.

    Indexed: each pod has its index (0..completions-1) in the annotation
    ``batch.kubernetes.io/job-completion-index``, and every index must succeed once.
    """

    name: str
    template: PodSpec
    completions: int
    parallelism: int
    indexed: bool
    backoff_limit: int
    active_deadline_s: float | None


@dataclass(frozen=True)
class Service:
    """A ClusterIP Service: its names, selector and ports (port -> target port, name or number)."""

    name: str
    namespace: str
    selector: Mapping[str, str]
    ports: Mapping[int, str | int]

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a pod of the cluster may use for it: short and namespaced forms."""
        ns = f"{self.name}.{self.namespace}"
        return (self.name, ns, f"{ns}.svc", f"{ns}.svc.cluster.local")

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether a pod with ``labels`` is one of its endpoints (when ready)."""
        return all(labels.get(k) == v for k, v in self.selector.items())


@dataclass(frozen=True)
class Release:
    """What one render holds for the runner."""

    namespace: str
    deployments: tuple[Deployment, ...]
    services: tuple[Service, ...]
    test_pods: tuple[PodSpec, ...]
    not_run: Mapping[str, int] = field(default_factory=dict)
    jobs: tuple[Job, ...] = ()
