"""``make bench-scale-build``: the indexer's build at several corpus sizes, and its encoding split.

Each size is prepared as ``make bench-scale`` prepares it (NFCorpus plus distractors, every
vector in the indexer's checkpoints, :mod:`.prepare`), then built from scratch by the ordinary
indexer in full mode into a scratch store: its wall time, its peak RSS and the time and memory
of each phase (the indexer's ``build phase`` log lines, its own ``/proc`` figures). The
checkpoints hold every vector, so these builds measure what a build does besides encoding;
encoding is measured apart, as the split.

The limited builds: each size but the smallest built again under a memory limit of 1.4 times
the smallest's peak (:mod:`.memory_limit`), as a pod's limit holds it. The store's files are
mapped, so their pages count in the resident set; under a limit the kernel takes them back
first, and whether the build completes, and how much slower, says what memory it needs. The
limit keeps a margin below issue 54's bound (docs/scale.md): pages already in the page cache (the
libraries, the model) stay charged to whoever read them first, so the process's resident set
may exceed its cgroup's charge by them.

The split: the real indexer's slices encoding the first documents of NFCorpus from empty
checkpoints, once as one process of one model thread, once as two such processes at once (two
slices). On a machine of two cores a sound split encodes nearly twice as fast; a process that
already used every core would say nothing about the split.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.bench.scale.memory_limit import MemoryCgroup, NoCgroup, memory_limit
from devtools.bench.scale.prepare import Plan, prepare, size_folder
from harness.processes import BASE_ENV, REPO
from services.common.files import atomic_write_text
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.settings import RetrievalSettings
from services.telemetry.logging import setup_logging

log = logging.getLogger("devtools.bench.scale.build")
INDEXER = [sys.executable, "-m", "services.retrieval.indexing.index"]
PHASE = re.compile(r"build phase (\w+): ([\d.]+) s, rss (\d+) MB, anon (\d+) MB, peak (\d+) MB")
ENCODED = "encoded chunk"


@dataclass(frozen=True)
class Run:
    """A finished child: its wall seconds, exit code, major page faults and log."""

    wall_s: float
    returncode: int
    major_faults: int
    text: str


def run_logged(
    command: Sequence[str], env: dict[str, str], log_path: Path, cgroup: MemoryCgroup | None
) -> Run:
    """Run ``command`` to its end (in ``cgroup`` if given), its output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "wb") as out:
        child = subprocess.Popen(
            list(command), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=cgroup.join if cgroup else None,
        )  # fmt: skip
        # wait4 for the child's own page faults (re-reading what a limit made the kernel drop).
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    return Run(wall, child.returncode, usage.ru_majflt, log_path.read_text(errors="replace"))


def measure_build(
    size: int,
    data_dir: Path,
    cache_dir: Path,
    work: Path,
    mode: str,
    cgroup: MemoryCgroup | None = None,
) -> dict[str, Any]:
    """A build of one size from scratch in ``mode`` (its vectors already checkpointed).

    In ``cgroup`` (a memory limit) the build may be killed; its record then says so, with the
    phases it finished. Without one a failed build is an error.
    """
    root = size_folder(work, size) / "build"
    shutil.rmtree(root, ignore_errors=True)
    env = {
        **os.environ, **BASE_ENV,
        "RETRIEVAL_DATA_DIR": str(data_dir),
        "RETRIEVAL_STORE": "embedded",
        "RETRIEVAL_EDGE_PATH": str(root / "edge"),
        "RETRIEVAL_CACHE_DIR": str(cache_dir),
        "RETRIEVAL_MODE": mode,
        "RETRIEVAL_INDEX_SLICES": "1",
    }  # fmt: skip
    log.info("n=%d: building from scratch%s", size, " under a memory limit" if cgroup else "")
    run = run_logged(INDEXER, env, root / "index.log", cgroup)
    shutil.rmtree(root / "edge", ignore_errors=True)  # gigabytes at the larger sizes
    if run.returncode != 0 and cgroup is None:
        raise RuntimeError(f"the build of {size} failed ({run.returncode}):\n{run.text[-2000:]}")
    # After each phase: the resident set, the process's own part of it, the peak so far.
    phases = {
        m[1]: {"s": float(m[2]), "rss": int(m[3]), "anon": int(m[4]), "peak": int(m[5])}
        for m in PHASE.finditer(run.text)
    }
    return {
        "documents": size,
        "mode": mode,
        "completed": run.returncode == 0,
        "wall_s": run.wall_s,
        # The indexer's own high-water mark (VmHWM) up to its last phase (the alias moved).
        # Not wait4's ru_maxrss: Linux carries the forking parent's (this harness's, holding
        # every size's vectors) into the child's across exec.
        "peak_rss_mb": float(max((p["peak"] for p in phases.values()), default=0)),
        "major_faults": run.major_faults,
        "phases_s": {name: p["s"] for name, p in phases.items()},
        "phases_mb": {
            name: {k: p[k] for k in ("rss", "anon", "peak")} for name, p in phases.items()
        },
        "encoded_chunks": run.text.count(ENCODED),
    }


def measure_limited(
    size: int, data_dir: Path, cache_dir: Path, work: Path, mode: str, limit_mb: int
) -> dict[str, Any]:
    """The build of :func:`measure_build` again, under a memory limit of ``limit_mb``.

    The record adds the limit, the cgroup's own peak (what the limit holds: each page charged
    once) and the processes the kernel killed for want of memory; or says why no limit could
    be set here.
    """
    try:
        with memory_limit(f"bench-scale-build-{os.getpid()}-{size}", limit_mb) as cgroup:
            record = measure_build(size, data_dir, cache_dir, work, mode, cgroup)
            record.update(
                limit_mb=limit_mb, cgroup_peak_mb=cgroup.peak_mb(), oom_kills=cgroup.oom_kills()
            )
    except NoCgroup as e:
        log.warning("n=%d: no build under a memory limit: %s", size, e)
        return {"limit_mb": limit_mb, "skipped": str(e)}
    log.info(
        "n=%d under %d MB: completed %s in %.1f s, peak %.0f MB",
        size, limit_mb, record["completed"], record["wall_s"], record["peak_rss_mb"],
    )  # fmt: skip
    return record


def measure_split(source: Path, cache_dir: Path, work: Path, documents: int) -> dict[str, Any]:
    """Encoding ``documents`` of NFCorpus: one process of one thread against two at once."""
    walls = {}
    for processes in (1, 2):
        cache = work / "split" / f"processes-{processes}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        # The prepared model is shared; the checkpoints start empty.
        (cache / "models").symlink_to((cache_dir / "models").resolve())
        env = {
            **os.environ, **BASE_ENV,
            "RETRIEVAL_DATA_DIR": str(source),
            "RETRIEVAL_CACHE_DIR": str(cache),
            "RETRIEVAL_INDEX_SLICES": str(processes),
            "RETRIEVAL_ENCODE_THREADS": "1",
        }  # fmt: skip
        command = [*INDEXER, "--max-docs", str(documents)]
        started = time.monotonic()
        slices = [
            subprocess.Popen(
                [*command, "--slice", str(i)],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(processes)
        ]
        logs = [p.communicate()[1] for p in slices]
        walls[processes] = time.monotonic() - started
        failed = [p.returncode for p in slices if p.returncode != 0]
        if failed:
            raise RuntimeError(f"a slice failed: {logs[0][-2000:]}")
        chunks = sum(text.count(ENCODED) for text in logs)
        log.info("%d process(es): %d chunks in %.1f s", processes, chunks, walls[processes])
        shutil.rmtree(cache)
    return {
        "documents": documents,
        "wall_s_1_proc": walls[1],
        "wall_s_2_procs": walls[2],
        "docs_per_s_1_proc": documents / walls[1],
        "docs_per_s_2_procs": documents / walls[2],
        "encode_speedup_2_procs": walls[1] / walls[2],
    }


def run(
    plan: Plan, split_documents: int, mode: str = "full", limit_ratio: float = 1.4
) -> dict[str, Any]:
    """Prepare every size, build each from scratch, then measure the split: the report.

    Each size but the smallest is then built again under a memory limit of ``limit_ratio``
    times the smallest's peak (its record's ``limited``); a ratio of 0 leaves that out.
    """
    load = os.getloadavg()
    encoder = OnnxMiniLM(threads=2, cache_dir=plan.cache_dir)
    prepared = prepare(plan, encoder)
    del encoder
    records = [
        measure_build(size, prepared.folders[size].path, plan.cache_dir, plan.work, mode)
        for size in sorted(plan.sizes)
    ]
    if limit_ratio > 0:
        limit_mb = round(limit_ratio * records[0]["peak_rss_mb"])
        for record in records[1:]:
            size = record["documents"]
            data = prepared.folders[size].path
            record["limited"] = measure_limited(
                size, data, plan.cache_dir, plan.work, mode, limit_mb
            )
    split = measure_split(plan.source, plan.cache_dir, plan.work, split_documents)
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": load},
        "sizes": sorted(plan.sizes),
        "chunk": RetrievalSettings().index_chunk,
        "limit_ratio": limit_ratio,
        "records": records,
        "split": split,
    }


def main() -> None:
    """Parse the options, run, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="36330,363300", help="corpus sizes, comma-separated")
    parser.add_argument("--base-docs", type=int, default=None, help="real documents (default all)")
    parser.add_argument(
        "--split-docs", type=int, default=1024, help="NFCorpus documents the split encodes"
    )
    parser.add_argument("--mode", choices=("full", "zero-shot"), default="full")
    parser.add_argument(
        "--measure", type=int, default=1000, help="distractors encoded to measure composition"
    )
    parser.add_argument(
        "--limit-ratio",
        type=float,
        default=1.4,
        help="build the larger sizes again under this many times the smallest's peak (0: not)",
    )
    parser.add_argument("--work", type=Path, default=REPO / "var" / "bench-scale")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench_scale_build.json")
    args = parser.parse_args()
    setup_logging()
    settings = RetrievalSettings()
    sizes = tuple(int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip())
    plan = Plan(
        settings.data_dir, args.work.resolve(), settings.cache_dir, sizes, args.base_docs,
        measure=args.measure,
    )  # fmt: skip
    report = run(plan, args.split_docs, args.mode, args.limit_ratio)
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    log.info("report written to %s", args.out)


if __name__ == "__main__":
    main()
