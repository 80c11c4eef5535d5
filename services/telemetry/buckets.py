"""The latency bucket layout every histogram of the services shares."""

# Latency buckets in seconds: dense where searches and answers fall (5-500 ms), with an edge at
# every threshold an SLO or alert uses (25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10, 30, 60 s), so
# "the share of requests under X" is exact rather than interpolated inside a doubling bucket.
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.35, 0.5, 0.75, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
