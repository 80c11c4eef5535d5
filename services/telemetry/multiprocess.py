"""The whole pod on ``/metrics`` in gunicorn's multi-process mode.

prometheus_client sums the workers' samples there but leaves out the process metrics (CPU,
memory, file descriptors) and every exemplar; this module adds them back.

Process metrics: one set per process of the pod (the gunicorn master and each live worker),
labelled ``pid``, read from ``/proc`` at scrape time, so a pod's memory and CPU are
``sum(process_resident_memory_bytes)`` and ``rate(process_cpu_seconds_total)`` again. Live
workers are the pids that left sample files in ``PROMETHEUS_MULTIPROC_DIR`` and still run.

Exemplars: the merged histograms get this process's latest exemplar of each bucket
(``services.telemetry.exemplars``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry, Metric, ProcessCollector
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from services.telemetry import exemplars

_PID_IN_FILE = re.compile(r"_(\d+)\.db$")


def pod_pids(metrics_dir: Path) -> list[int]:
    """Pids of the pod: this process, its gunicorn master, every live process writing samples."""
    pids = {os.getpid()}
    for path in metrics_dir.glob("*.db"):
        if match := _PID_IN_FILE.search(path.name):
            pids.add(int(match.group(1)))
    parent = os.getppid()
    try:
        if b"gunicorn" in Path(f"/proc/{parent}/cmdline").read_bytes():
            pids.add(parent)
    except OSError:
        pass
    return sorted(pid for pid in pids if Path(f"/proc/{pid}").exists())


class PodProcessCollector(Collector):
    """``process_*`` of every process of the pod, each with a ``pid`` label."""

    def __init__(self, metrics_dir: Path) -> None:
        """Collect the processes that write to ``metrics_dir``."""
        self._dir = metrics_dir

    def collect(self) -> Iterable[Metric]:
        """One family per process metric, one sample per process."""
        families: dict[str, Metric] = {}
        for pid in pod_pids(self._dir):
            collector = ProcessCollector(pid=functools.partial(int, pid), registry=None)
            for family in collector.collect():
                merged = families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    labels = {**sample.labels, "pid": str(pid)}
                    merged.samples.append(sample._replace(labels=labels))
        return list(families.values())


class ExemplarMerge(Collector):
    """The summed multi-process samples, with this process's exemplars on histogram buckets."""

    def __init__(self, inner: MultiProcessCollector) -> None:
        """Wrap the collector that sums the workers' files."""
        self._inner = inner

    def collect(self) -> Iterable[Metric]:
        """The inner families, bucket samples given an exemplar where one is known."""
        for family in self._inner.collect():  # type: ignore[no-untyped-call]
            if family.type == "histogram":
                family.samples = [
                    sample._replace(exemplar=exemplars.latest(family.name, sample.labels))
                    if sample.name.endswith("_bucket")
                    else sample
                    for sample in family.samples
                ]
            yield family


def pod_registry(metrics_dir: Path) -> CollectorRegistry:
    """A registry with the whole pod: summed samples, exemplars, process metrics."""
    registry = CollectorRegistry()
    merged = MultiProcessCollector(None, path=str(metrics_dir))  # type: ignore[no-untyped-call]
    registry.register(ExemplarMerge(merged))
    registry.register(PodProcessCollector(metrics_dir))
    return registry
