"""gunicorn settings of the image's web services (installed as /etc/nfcorpus/gunicorn.conf.py).

Bind address and worker count come from the command line (the Helm chart sets them), the metrics
port from SERVER_METRICS_PORT (on_starting adds its bind); this file holds what every deployment
shares: uvicorn workers, timeouts that fit the 60 s A2A deadline, a scratch directory on the
writable /tmp volume, and Prometheus multi-process mode so that /metrics adds up every worker of
the pod instead of answering for whichever worker got the scrape.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

# The app module is imported once, in the master, before the workers are forked: packages and the
# encoder's weights are then shared by every worker (services/common/server.py); each worker
# builds its app, and opens the store, after the fork.
preload_app = True
# uvicorn workers with the shared guard (request-head deadline, connection cap): see
# services/common/server.py.
worker_class = "services.common.server.Worker"
# The root file system is read-only; gunicorn's heartbeat files go to the /tmp volume.
worker_tmp_dir = "/tmp"
# A worker silent this long is restarted; above the purple agent's 60 s hard deadline.
timeout = 75
# Time a stopping worker gets: its drain (SERVER_DRAIN_S, 5 s in the chart; services.common.server
# .Worker) and then the purple agent's 30 s request deadline, within terminationGracePeriodSeconds
# (50 s) minus the chart's 5 s preStop pause.
graceful_timeout = 40
# Longer than the idle timeout of typical L7 proxies, so they close first and never hit a dead socket.
keepalive = 75
accesslog = None  # the service frame logs one structured line per request instead
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "INFO").lower()
# gunicorn's own lines (worker boots, timeouts, exits) in the services' format (JSON in a
# container): one stream, one format (services/telemetry/logging.py).
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"service": {"()": "services.telemetry.logging.formatter"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "service",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"level": loglevel.upper(), "handlers": ["stderr"]},
    "loggers": {
        "gunicorn.error": {"level": loglevel.upper(), "handlers": [], "propagate": True},
        "gunicorn.access": {"handlers": [], "propagate": False},
    },
}

# Set here, before the app module (preloaded) imports prometheus_client, so every process writes
# its samples to files. Emptied here too, not in on_starting, which runs after the preload: files
# of a previous container would be summed in.
metrics_dir = Path(os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", "/tmp/prometheus-multiproc"))
shutil.rmtree(metrics_dir, ignore_errors=True)
metrics_dir.mkdir(parents=True)


def on_starting(server: Any) -> None:
    """With SERVER_METRICS_PORT, listen on it too, beside each bind of the command line.

    The metrics port is the server's own setting (services.common.metrics_port routes /metrics
    there), not a second --bind the chart must remember; the hook runs before gunicorn binds.
    """
    from services.common.limits import ServerLimits
    from services.common.metrics_port import with_metrics_binds

    binds = with_metrics_binds(server.cfg.bind, ServerLimits().metrics_port)
    server.cfg.set("bind", binds)


def child_exit(server: Any, worker: Any) -> None:
    """Drop a dead worker's live gauges and its shard copies.

    A worker removes its own copies when it stops gracefully, but one killed by the worker timeout
    or the OOM killer cannot: the master, which sees every worker exit, sweeps what is left.
    """
    from prometheus_client import multiprocess

    from services.retrieval.store import copies

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
    copies.sweep()
