"""The figures ``docs/`` quotes from the scale benchmarks' reports.

``devtools.figures`` records them: ``make bench-scale``'s records per size and mode, ``make
bench-scale-build``'s builds.

Kept apart from the benchmarks themselves, which load the model and the corpus: recording a
section imports only this.
"""

from __future__ import annotations

from typing import Any

#: A scale record's figures: its name in the record -> its name in a quote (the ending says how it
#: is written, see :func:`formatted`), and the decimals it keeps.
SCALE_FIGURES = {
    "cpu_ms_per_query": ("cpu_ms", 2),
    "p50_ms_c1": ("p50_c1_ms", 1),
    "p99_ms_c1": ("p99_c1_ms", 1),
    "p50_ms_c4": ("p50_c4_ms", 1),
    "p99_ms_c4": ("p99_c4_ms", 1),
    "rss_mb_after_start": ("rss_after_start_mb", 0),
    "rss_mb_after_queries": ("rss_after_queries_mb", 0),
    "rss_anon_mb_after_start": ("rss_anon_after_start_mb", 0),
    "rss_anon_mb_after_queries": ("rss_anon_after_queries_mb", 0),
    "ready_s": ("ready_s", 1),
    "index_mb": ("index_mb", 0),
    "ndcg5": ("ndcg5", 4),
    "ndcg10": ("ndcg10", 4),
    "ndcg5_judged": ("ndcg5_judged", 4),
    "distractor_share_top10": ("distractor_share_top10", 4),
    "recall_at_100": ("recall_at_100", 4),
}
#: The large size's figure over the small one's: record field -> quoted name (+ ``_x``).
SCALE_RATIOS = {
    "cpu_ms_per_query": "cpu",
    "p99_ms_c4": "p99_c4",
    "rss_mb_after_start": "rss_after_start",
    "ready_s": "ready",
    "index_mb": "index",
}
SCALE_RECORD_FIELDS = (
    "documents", "distractors", "mode", "queries", "failed", "quality_queries",
    "cpu_ms_per_query", "cpu_ms_per_query_c4", "cpu_ms_event_loop", "cpu_ms_other_threads",
    "stage_ms", "store_call_ms", "store_calls_per_query", "p50_ms_c1", "p99_ms_c1", "p50_ms_c4", "p99_ms_c4", "rss_mb_after_start",
    "rss_mb_after_queries", "rss_anon_mb_after_start", "rss_anon_mb_after_queries", "ready_s",
    "index_mb", "ndcg5", "ndcg10", "ndcg5_judged",
    "distractor_share_top10", "queries_with_distractor_top5", "recall_at_100",
)  # fmt: skip


def _rounded(value: Any, places: int = 4) -> Any:
    if isinstance(value, float):
        return round(value, places)
    if isinstance(value, dict):
        return {k: _rounded(v, places) for k, v in value.items()}
    return value


def scale(report: dict[str, Any]) -> dict[str, Any]:
    """Every record (rounded), the composed vectors' error, and the figures a page quotes.

    A page quotes the smallest and the largest size of the run, whatever sizes it had:
    ``scale.<mode>_<small|large>_<figure>`` (``full_large_cpu_ms``; ``zs`` for zero-shot), any
    size by its number of documents (``full_n36330_cpu_ms``; a stage's time per query as
    ``full_n36330_store_stage_ms``, a store operation's as ``full_n36330_retrieve_call_ms``), and
    the large size against the small one as issue 53 states its bounds: ``<mode>_<figure>_x``
    for cost, latency, memory and start-up, ``<mode>_ndcg5_judged_delta``. A figure the run did
    not measure (recall without its helper) is left out of the quotable ones.
    """
    records = [{k: _rounded(r.get(k)) for k in SCALE_RECORD_FIELDS} for r in report["records"]]
    sizes = sorted(report["sizes"])
    out: dict[str, Any] = {
        "sizes": sizes,
        "documents_small": sizes[0],
        "documents_large": sizes[-1],
        "records": records,
        "machine_cpus": report["machine"]["cpus"],
    }
    out.update({f"composed_{k}": _rounded(v) for k, v in report["composed_vectors"].items()})
    for mode, tag in (("full", "full"), ("zero-shot", "zs")):
        by_size = {r["documents"]: r for r in report["records"] if r["mode"] == mode}
        roles = [("small", sizes[0]), ("large", sizes[-1])] + [(f"n{n}", n) for n in sizes]
        for role, size in roles:
            for field, (name, places) in SCALE_FIGURES.items():
                value = by_size.get(size, {}).get(field)
                if value is not None:
                    out[f"{tag}_{role}_{name}"] = round(float(value), places)
            for stage, ms in (by_size.get(size, {}).get("stage_ms") or {}).items():
                out[f"{tag}_{role}_{stage}_stage_ms"] = round(float(ms), 1)
            for operation, ms in (by_size.get(size, {}).get("store_call_ms") or {}).items():
                out[f"{tag}_{role}_{operation}_call_ms"] = round(float(ms), 2)
        small, large = by_size.get(sizes[0]), by_size.get(sizes[-1])
        if small is None or large is None:
            continue
        for field, name in SCALE_RATIOS.items():
            if small.get(field) and large.get(field) is not None:
                out[f"{tag}_{name}_x"] = round(large[field] / small[field], 2)
        out[f"{tag}_ndcg5_judged_delta"] = round(large["ndcg5_judged"] - small["ndcg5_judged"], 4)
    return out


def build(report: dict[str, Any]) -> dict[str, Any]:
    """The figures ``docs/`` quotes (``scale_build.n<N>_wall_s``, ``..._peak_rss_mb``, …)."""
    out: dict[str, Any] = {"sizes": report["sizes"], "chunk": report["chunk"]}
    for r in report["records"]:
        n = r["documents"]
        out[f"n{n}_wall_s"] = round(r["wall_s"], 1)
        out[f"n{n}_peak_rss_mb"] = round(r["peak_rss_mb"])
        if "major_faults" in r:
            out[f"n{n}_major_faults"] = r["major_faults"]
        out.update({f"n{n}_{name}_s": round(s, 1) for name, s in r["phases_s"].items()})
        for name, mb in r.get("phases_mb", {}).items():
            out.update({f"n{n}_{name}_{kind}_mb": value for kind, value in mb.items()})
        limited = r.get("limited", {})
        if "completed" in limited:  # not skipped
            out[f"n{n}_limited_completed"] = limited["completed"]
            out[f"n{n}_limited_wall_s"] = round(limited["wall_s"], 1)
            out[f"n{n}_limited_peak_rss_mb"] = round(limited["peak_rss_mb"])
            out[f"n{n}_limited_major_faults"] = limited["major_faults"]
            out.update(
                {f"n{n}_limited_{name}_s": round(s, 1) for name, s in limited["phases_s"].items()}
            )
            if limited["cgroup_peak_mb"] is not None:
                out[f"n{n}_limited_cgroup_peak_mb"] = round(limited["cgroup_peak_mb"])
    records = sorted(report["records"], key=lambda r: r["documents"])
    out["records"] = records
    if len(records) > 1:
        first, last = records[0], records[-1]
        out["peak_rss_x"] = round(last["peak_rss_mb"] / first["peak_rss_mb"], 2)
        out["wall_x"] = round(last["wall_s"] / first["wall_s"], 2)
        limited = last.get("limited", {})
        if "completed" in limited:
            out["limit_mb"] = limited["limit_mb"]
            out["limit_x"] = report["limit_ratio"]
            out["limited_peak_rss_x"] = round(limited["peak_rss_mb"] / first["peak_rss_mb"], 2)
            if limited["cgroup_peak_mb"] is not None:
                out["limited_cgroup_peak_x"] = round(
                    limited["cgroup_peak_mb"] / first["peak_rss_mb"], 2
                )
    split = report["split"]
    out["split_documents"] = split["documents"]
    out["encode_docs_per_s_1_proc"] = round(split["docs_per_s_1_proc"], 1)
    out["encode_docs_per_s_2_procs"] = round(split["docs_per_s_2_procs"], 1)
    out["encode_speedup_2_procs"] = round(split["encode_speedup_2_procs"], 2)
    return out
