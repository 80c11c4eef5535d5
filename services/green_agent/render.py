"""Human-readable views of the reports: rich tables for the terminal, plain text for A2A."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from services.green_agent.load import LoadReport
from services.green_agent.report import EvalReport

_HEADLINE = ("ndcg@5", "ndcg@10", "mrr", "precision@5", "recall@5", "precision@10", "recall@10")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def eval_tables(report: EvalReport) -> Group:
    """Metrics, latency and failures of an evaluation run as rich tables."""
    title = (
        f"{report.agent} (A2A {report.protocol}): {report.answered}/{report.num_queries} "
        f"queries answered, top_k={report.top_k}, seed={report.seed}"
    )
    metrics = Table(title=title)
    for column in ("metric", "mean", "median", "std", "min", "max"):
        metrics.add_column(column, justify="left" if column == "metric" else "right")
    for name in _HEADLINE:
        row = [name, f"{report.metrics.get(name, 0.0):.4f}"]
        spread = report.ndcg_spread.get(name)
        cells = [spread.median, spread.std, spread.min, spread.max] if spread else []
        metrics.add_row(*row, *(f"{v:.4f}" for v in cells))
    for k in (5, 10):
        name = f"agentbeats_ndcg@{k}"
        metrics.add_row(f"{name} (retrieved ideal)", f"{report.metrics.get(name, 0.0):.4f}")
    timing = Table(title="latency and throughput")
    for column in ("p50", "p95", "p99", "max", "throughput", "wall"):
        timing.add_column(column, justify="right")
    lat = report.latency
    timing.add_row(
        _ms(lat.p50_s),
        _ms(lat.p95_s),
        _ms(lat.p99_s),
        _ms(lat.max_s),
        f"{report.throughput_qps:.1f} q/s",
        f"{report.wall_s:.1f} s",
    )
    parts: list[Table] = [metrics, timing]
    if report.failures:
        failures = Table(title=f"{report.failed} failures")
        for column in ("query", "reason", "message"):
            failures.add_column(column)
        for f in report.failures[:20]:
            failures.add_row(f.query_id, f.reason, f.message[:120])
        parts.append(failures)
    return Group(*parts)


def eval_summary(report: EvalReport) -> str:
    """Summarise an evaluation run in a few lines (the text part of the A2A results)."""
    m = report.metrics
    lines = [
        f"Evaluated {report.agent} on {report.num_queries} NFCorpus test queries "
        f"(top_k={report.top_k}, seed={report.seed}): {report.answered} answered, "
        f"{report.failed} failed.",
        f"NDCG@5 {m.get('ndcg@5', 0.0):.4f}, NDCG@10 {m.get('ndcg@10', 0.0):.4f}, "
        f"MRR {m.get('mrr', 0.0):.4f} (trec_eval definitions; AgentBeats retrieved-ideal "
        f"NDCG@5 {m.get('agentbeats_ndcg@5', 0.0):.4f}).",
        f"Latency p50 {_ms(report.latency.p50_s)}, p95 {_ms(report.latency.p95_s)}, "
        f"p99 {_ms(report.latency.p99_s)}; {report.throughput_qps:.1f} queries/s.",
    ]
    if report.failures_by_reason:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(report.failures_by_reason.items()))
        lines.append(f"Failures by reason: {reasons}.")
    lines.extend(report.notes[2:])
    return "\n".join(lines)


def load_table(report: LoadReport) -> Table:
    """Show a load run as one rich table."""
    setting = (
        f"concurrency {report.concurrency}"
        if report.concurrency is not None
        else f"rate {report.target_rate:g}/s"
    )
    table = Table(title=f"load on {report.agent} (A2A {report.protocol}, {setting})")
    for column in ("sent", "ok", "err", "drop", "rps", "p50", "p95", "p99", "max"):
        table.add_column(column, justify="right")
    lat = report.latency
    table.add_row(
        str(report.requests),
        str(report.ok),
        str(report.errors),
        str(report.dropped),
        f"{report.throughput_rps:.1f}",
        _ms(lat.p50_s),
        _ms(lat.p95_s),
        _ms(lat.p99_s),
        _ms(lat.max_s),
    )
    table.caption = workload_line(report)
    return table


def workload_line(report: LoadReport) -> str:
    """What the run asked, and how much of it the MCP server's result cache answered."""
    pool = "every NFCorpus query" if report.query_pool == "all" else "the test queries"
    line = (
        f"{report.distinct_queries:,} distinct queries of {pool} ({report.pool_size:,}), "
        f"{report.repeats:,} asked again"
    )
    cache = report.result_cache
    if cache is None:
        return line + "; result cache: not read (give --mcp-url)"
    if cache.hit_ratio is None:
        return line + "; result cache: no lookups (off)"
    return line + f"; result cache hits {cache.hit_ratio:.1%} of {cache.lookups:,} lookups"
