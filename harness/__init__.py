"""The test harness: what starts our servers and stands in for the world around them.

Tests, benchmarks and ``make run`` use it; it imports only ``services`` and itself (never the
tests or the development tooling).

- ``processes``: our servers as subprocesses on free loopback ports, the repository's paths and
  the environment they run in;
- ``local_cluster``: replicas of the servers behind HAProxy, a stand-in for Kubernetes Services;
- ``prometheus``: a Prometheus server from Debian's package scraping them; ``dashboard``: the
  Grafana dashboard's queries evaluated against it;
- ``chart_run``: the chart's pods as rendered, under podman (``make chart-run``);
- ``fakes``: servers of other makes, written from their descriptions.
"""
