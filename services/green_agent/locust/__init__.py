"""Locust as a way into the load generator: a locustfile of ours, for people who run Locust.

No server imports it: it runs in Locust's own process, in an image with Locust
(``docs/observability.md``).
"""
