"""The frame's own paths, named once: every server answers them, before its own routes.

The kubelet's probes (``/healthz``, ``/readyz``) are admitted without any bound and checked for
nothing but their path: they are answered from memory, and the kubelet addresses a pod by its IP,
which no Host allow-list can name ahead of time. ``/metrics`` (Prometheus, by the pod IP too) has
a small bound of its own (:mod:`services.common.guard.admission`) and its own token
(:mod:`services.common.auth`).
"""

from __future__ import annotations

HEALTHZ = "/healthz"
READYZ = "/readyz"
METRICS = "/metrics"
#: Admitted without any bound or check but authentication's (which lets them through too).
PROBES = frozenset({HEALTHZ, READYZ})
#: Every path the frame serves itself: asked every few seconds by design, so not logged each time,
#: and reached by pod IP, so exempt from the Host check.
FRAME_PATHS = PROBES | {METRICS}
