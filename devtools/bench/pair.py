"""Two commits' servers on one machine, measured in turns: what a change did to a query's cost.

``python -m devtools.bench.pair --base <commit> [--rounds 2] [--queries 200] [--out F]``
``python -m devtools.bench.pair --base-env MCP_RANK_BATCH=1 [...]``: the base is this checkout
with those settings (a switch's effect, same code and index).

This machine's speed drifts from minute to minute, so a change is measured as a pair: the base
commit is checked out in a worktree under ``var/pair/``, indexes NFCorpus into its own store
(its own code, its own schema; the vector cache is shared), and then the base's servers and this
checkout's take turns, the order alternating by round. Each turn starts an MCP server and our
purple agent of that checkout (result cache off), sends the dev queries one at a time, then
keeps 16 in flight for 20 s, and reads both servers' CPU from /proc. The load generator and the
encoder's CPU per query (the unit of the ratios) are this checkout's, the same for both sides.
The encoder is measured right before each turn, and each turn's CPU is stated in the encoder
measured with it: a side's ratio is the median of its turns' ratios. A ratio of two figures
taken minutes apart would carry the machine's drift between them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from devtools.bench.a2a_agents import (
    SATURATION_CONCURRENCY,
    encoder_cpu_ms,
    mcp_server,
    measure_agent,
    our_agent,
)
from harness.processes import BASE_ENV, REPO
from services.green_agent.evaluation.dataset import load_test_set
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.settings import RetrievalSettings

SAT = f"concurrency_{SATURATION_CONCURRENCY}"


def side_env(root: Path, data_dir: Path) -> dict[str, str]:
    """The environment of a checkout's servers: its code, its own index, the same data."""
    return {
        "PYTHONPATH": str(root),
        "RETRIEVAL_DATA_DIR": str(data_dir),
        "RETRIEVAL_EDGE_PATH": str(root / "var" / "qdrant-edge"),
    }


def prepare_base(commit: str, data_dir: Path) -> Path:
    """The base commit in a worktree of its own, with its own index built by its own code."""
    sha = subprocess.run(
        ["git", "rev-parse", commit], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    root = REPO / "var" / "pair" / sha[:12]
    if not root.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(root), sha], cwd=REPO, check=True)
    subprocess.run(
        [sys.executable, "-m", "services.retrieval.indexing.index"],
        cwd=root,
        env={**os.environ, **BASE_ENV, **side_env(root, data_dir)},
        check=True,
    )
    return root


def measure(
    root: Path,
    data_dir: Path,
    texts: list[str],
    valid: frozenset[str],
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One turn: the checkout at ``root``'s MCP server and purple agent (``extra`` env) under load."""
    env = {**side_env(root, data_dir), **(extra or {})}
    with mcp_server(env=env, cwd=root) as mcp, our_agent(mcp.base_url + "/mcp", env, root) as agent:
        return measure_agent(mcp, agent, texts, valid)


def summary(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over a side's turns: throughput, latency, CPU per query and its ratio.

    Each turn holds the encoder's CPU per query measured right before it; the ratio is the
    median of the turns' own ratios.
    """
    out: dict[str, Any] = {}
    encoder = [t["encoder_cpu_ms_per_query"] for t in turns]
    for phase in ("concurrency_1", SAT):
        figures = [t[phase] for t in turns]
        cpu = [f["mcp_cpu_ms_per_query"] + f["agent_cpu_ms_per_query"] for f in figures]
        out[phase] = {
            "throughput_qps": statistics.median(f["throughput_qps"] for f in figures),
            "p50_ms": statistics.median(f["latency"]["p50_s"] * 1000 for f in figures),
            "p99_ms": statistics.median(f["latency"]["p99_s"] * 1000 for f in figures),
            "server_cpu_ms_per_query": statistics.median(cpu),
            "cpu_over_encoder": statistics.median(c / e for c, e in zip(cpu, encoder, strict=True)),
            "failed": sum(f["failed"] for f in figures),
        }
    out["mcp_rss_after_start_mb"] = statistics.median(
        t["rss_after_start"]["mcp_rss_mb"] for t in turns
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--base", help="the commit to compare this checkout with")
    what.add_argument(
        "--base-env",
        action="append",
        metavar="K=V",
        help="compare this checkout with itself under these settings instead (repeatable)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200, help="dev queries per turn")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "pair.json")
    args = parser.parse_args()
    settings = RetrievalSettings()
    queries = load_queries(settings.data_dir)
    dev = sorted(load_qrels(settings.data_dir, "dev"))
    texts = [queries[q] for q in dev if q in queries][: args.queries]
    valid = load_test_set(settings.data_dir).doc_ids
    base_env = dict(kv.split("=", 1) for kv in args.base_env or [])
    base_root = REPO if base_env else prepare_base(args.base, settings.data_dir)
    sides, envs = {"base": base_root, "head": REPO}, {"base": base_env, "head": {}}
    turns: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    for round_ in range(args.rounds):
        order = ["base", "head"] if round_ % 2 == 0 else ["head", "base"]
        for side in order:
            unit_ms = encoder_cpu_ms(texts)  # the unit of this turn's ratios
            turn = measure(sides[side], settings.data_dir, texts, valid, envs[side])
            turns[side].append({**turn, "encoder_cpu_ms_per_query": unit_ms})
    encode_ms = statistics.median(t["encoder_cpu_ms_per_query"] for s in turns.values() for t in s)
    base, head = summary(turns["base"]), summary(turns["head"])
    ratio = head[SAT]["throughput_qps"] / base[SAT]["throughput_qps"]
    result = {
        "base_commit": args.base or "this checkout with " + " ".join(args.base_env),
        "rounds": args.rounds,
        "encoder_cpu_ms_per_query": encode_ms,
        "base": base,
        "head": head,
        "throughput_c16_head_over_base": ratio,
        "turns": turns,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for side, figures in (("base", base), ("head", head)):
        for phase in ("concurrency_1", SAT):
            f = figures[phase]
            print(
                f"{side} {phase}: {f['throughput_qps']:.1f} q/s, p50 {f['p50_ms']:.1f} ms, "
                f"p99 {f['p99_ms']:.1f} ms, server CPU {f['server_cpu_ms_per_query']:.2f} ms "
                f"per query ({f['cpu_over_encoder']:.2f}x the encoder), {f['failed']} failed"
            )
        print(f"{side} MCP server RSS after start: {figures['mcp_rss_after_start_mb']:.0f} MB")
    print(f"encoder: {encode_ms:.2f} ms CPU per query; concurrency 16 throughput {ratio:.2f}x")


if __name__ == "__main__":
    main()
