"""Development tooling: what the tests, benchmarks and scripts use and no server imports.

- ``processes``: our servers started as subprocesses on free loopback ports, and the repository's
  paths and environment for them;
- ``cluster``: replicas of the servers behind HAProxy, a stand-in for Kubernetes Services;
- ``prometheus``: a Prometheus server from Debian's package scraping them;
- ``dashboard``: the Grafana dashboard's queries evaluated against it.
"""
