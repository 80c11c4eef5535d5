"""The service frame every server composes: app factory, readiness, A2A plumbing, limits.

Cross-cutting behaviour (health, readiness, metrics, request telemetry, serving options, the
contract's limits) lives here once; a server brings its own routes and nothing else.
"""
