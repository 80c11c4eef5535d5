"""The A2A tables of ``reports/bench.md``: our agent against the pipeline and the minimal agent."""

from __future__ import annotations

from typing import Any

from devtools.bench.a2a_agents import CACHED_ENTRIES, SATURATION_CONCURRENCY

SAT = f"concurrency_{SATURATION_CONCURRENCY}"


def ratios(a2a: dict[str, Any]) -> dict[str, float]:
    """Ours over minimal: agent CPU and MCP server CPU per answered query, latency, throughput."""
    ours, minimal = a2a["ours"], a2a["minimal"]
    out = {}
    for phase, tag in (("concurrency_1", "c1"), (SAT, f"c{SATURATION_CONCURRENCY}")):
        for server in ("agent", "mcp"):
            key = f"{server}_cpu_ms_per_query"
            out[f"{server}_cpu_{tag}"] = ours[phase][key] / minimal[phase][key]
        mine, theirs = ours[phase], minimal[phase]
        total = mine["agent_cpu_ms_per_query"] + mine["mcp_cpu_ms_per_query"]
        out[f"total_cpu_{tag}"] = total / (
            theirs["agent_cpu_ms_per_query"] + theirs["mcp_cpu_ms_per_query"]
        )
        out[f"throughput_{tag}"] = mine["throughput_qps"] / theirs["throughput_qps"]
    one = "concurrency_1"
    out["latency_p50_c1"] = ours[one]["latency"]["p50_s"] / minimal[one]["latency"]["p50_s"]
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _ours_table(results: dict[str, Any], a2a: dict[str, Any]) -> list[str]:
    encode, rank = results["query_encode"], results["full_retrieve_and_rank"]
    pipeline_p50 = encode["p50_ms"] + rank["p50_ms"]
    pipeline_mean = encode["mean_ms"] + rank["mean_ms"]
    ours = a2a["ours"]
    one, sat = ours["concurrency_1"], ours[SAT]
    cpu = one["mcp_cpu_ms_per_query"] + one["agent_cpu_ms_per_query"]
    sat_cpu = sat["mcp_cpu_ms_per_query"] + sat["agent_cpu_ms_per_query"]
    encode_cpu = a2a["encoder_cpu_ms_per_query"]
    start, end = ours["rss_after_start"], ours["rss_after_load"]
    return [
        "## The A2A path (purple agent -> MCP server) against the in-process pipeline",
        "",
        "| what | figure |",
        "| --- | --- |",
        f"| in-process pipeline (encode + retrieve and rank), one thread | p50 {pipeline_p50:.2f} ms, "
        f"mean {pipeline_mean:.2f} ms |",
        f"| CPU of encoding one query alone (the served model, one thread, this run) | "
        f"{encode_cpu:.2f} ms |",
        f"| server CPU per answered A2A query, concurrency 1: MCP server + purple agent | "
        f"{one['mcp_cpu_ms_per_query']:.2f} + {one['agent_cpu_ms_per_query']:.2f} = {cpu:.2f} ms "
        f"(**{cpu / encode_cpu:.2f}x the encoder**, {cpu / pipeline_mean:.2f}x the pipeline's "
        f"mean) |",
        f"| the same at concurrency {SATURATION_CONCURRENCY} | "
        f"{sat['mcp_cpu_ms_per_query']:.2f} + {sat['agent_cpu_ms_per_query']:.2f} = "
        f"{sat_cpu:.2f} ms (**{sat_cpu / encode_cpu:.2f}x the encoder**) |",
        f"| A2A round trip, concurrency 1 | p50 {_ms(one['latency']['p50_s'])} ms "
        f"({one['latency']['p50_s'] * 1000 / pipeline_p50:.2f}x the pipeline's p50), "
        f"p99 {_ms(one['latency']['p99_s'])} ms, {one['throughput_qps']:.1f} q/s |",
        f"| A2A at concurrency {SATURATION_CONCURRENCY} (load generator on the same cores) | "
        f"{sat['throughput_qps']:.1f} q/s, p99 {sat['latency']['p99_s'] * 1000:.0f} ms, "
        f"{sat['failed']} failed |",
        f"| RSS after start, after the load: MCP server / purple agent | "
        f"{start['mcp_rss_mb']:.0f} / {start['agent_rss_mb']:.0f} MB, "
        f"{end['mcp_rss_mb']:.0f} / {end['agent_rss_mb']:.0f} MB |",
        *_cached_row(a2a),
    ]


def _cached_row(a2a: dict[str, Any]) -> list[str]:
    cached, uncached = a2a["cached"], a2a["ours"]["concurrency_1"]
    first, second = cached["first_pass"], cached["second_pass"]
    ignored = (
        ""
        if cached["cache_setting_known"]
        else " (this MCP server has no result cache yet: it ignores the variable)"
    )
    return [
        f"| the concurrency-1 pass again, second MCP server with `MCP_RESULT_CACHE_ENTRIES="
        f"{CACHED_ENTRIES}`, after one warm pass (every query cached){ignored} | "
        f"MCP server {second['mcp_cpu_ms_per_query']:.2f} ms CPU (uncached "
        f"{uncached['mcp_cpu_ms_per_query']:.2f}, warm pass {first['mcp_cpu_ms_per_query']:.2f}), "
        f"agent {second['agent_cpu_ms_per_query']:.2f} ms; p50 {_ms(second['latency']['p50_s'])} "
        f"ms (uncached {_ms(uncached['latency']['p50_s'])}), {second['throughput_qps']:.1f} q/s, "
        f"{second['failed']} failed |",
    ]


def _row(name: str, ours: str, minimal: str, ratio: float | None) -> str:
    return f"| {name} | {ours} | {minimal} | {'' if ratio is None else f'{ratio:.2f}x'} |"


def _versus_table(a2a: dict[str, Any]) -> list[str]:
    ours, minimal, r = a2a["ours"], a2a["minimal"], ratios(a2a)
    lines = [
        "## Our purple agent against the minimal agent (same MCP server, same run)",
        "",
        "The minimal agent (`devtools/bench/minimal_agent.py`) is the seed's design on the same SDKs: "
        "parse the JSON text, one `search_nfcorpus` call with `query` and `top_k` over one MCP "
        "session kept open, one artifact `{doc_ids}`, `complete()`; no frame, metrics, tracing, "
        "auth, limits, retries, deadline or ranking policy. Ours asks for max(top_k, 20) "
        "candidates without abstracts; the minimal agent asks for top_k with abstracts.",
        "",
        "| figure | ours | minimal | ours / minimal |",
        "| --- | ---: | ---: | ---: |",
    ]
    for phase, tag in (("concurrency_1", "c1"), (SAT, f"c{SATURATION_CONCURRENCY}")):
        level = phase.replace("concurrency_", "concurrency ")
        for server, label in (("agent", "agent"), ("mcp", "MCP server")):
            key = f"{server}_cpu_ms_per_query"
            lines.append(
                _row(
                    f"{label} CPU per answered query, {level} (ms)",
                    f"{ours[phase][key]:.2f}",
                    f"{minimal[phase][key]:.2f}",
                    r[f"{server}_cpu_{tag}"],
                )
            )
        lines.append(
            _row(
                f"agent + MCP server CPU per answered query, {level} (ms)",
                f"{ours[phase]['agent_cpu_ms_per_query'] + ours[phase]['mcp_cpu_ms_per_query']:.2f}",
                f"{minimal[phase]['agent_cpu_ms_per_query'] + minimal[phase]['mcp_cpu_ms_per_query']:.2f}",
                r[f"total_cpu_{tag}"],
            )
        )
    one = "concurrency_1"
    lat = [ours[one]["latency"], minimal[one]["latency"]]
    lines += [
        _row(
            "round trip p50 / p99, concurrency 1 (ms)",
            f"{_ms(lat[0]['p50_s'])} / {_ms(lat[0]['p99_s'])}",
            f"{_ms(lat[1]['p50_s'])} / {_ms(lat[1]['p99_s'])}",
            r["latency_p50_c1"],
        ),
        _row(
            f"throughput, concurrency {SATURATION_CONCURRENCY} (q/s; failed)",
            f"{ours[SAT]['throughput_qps']:.1f}; {ours[SAT]['failed']}",
            f"{minimal[SAT]['throughput_qps']:.1f}; {minimal[SAT]['failed']}",
            r[f"throughput_c{SATURATION_CONCURRENCY}"],
        ),
        _row(
            "agent RSS after start / after its load (MB)",
            f"{ours['rss_after_start']['agent_rss_mb']:.0f} / "
            f"{ours['rss_after_load']['agent_rss_mb']:.0f}",
            f"{minimal['rss_after_start']['agent_rss_mb']:.0f} / "
            f"{minimal['rss_after_load']['agent_rss_mb']:.0f}",
            ours["rss_after_load"]["agent_rss_mb"] / minimal["rss_after_load"]["agent_rss_mb"],
        ),
    ]
    return lines


def a2a_tables(results: dict[str, Any], a2a: dict[str, Any]) -> list[str]:
    """Both A2A tables, in Markdown."""
    return [*_ours_table(results, a2a), "", *_versus_table(a2a)]
