"""Observability shared by every service: Prometheus metrics, OpenTelemetry tracing, logging."""
