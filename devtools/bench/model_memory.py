"""What the prepared encoder model saves in memory: figures of this machine, reported not asserted.

``python -m devtools.bench.model_memory --out reports/model_memory.json`` (part of ``make bench``) runs
two probes, each in a fresh process:

- ``growth``: resident memory gained by importing and loading the encoder and encoding ``--queries`` NFCorpus
  queries one at a time, with the prepared model and with the source model. The ratio is the
  point; the MB depend on the allocator and on transparent huge pages.
- ``word_table``: MB of the weights file resident after those queries, in a model built for the
  probe (so no other process has read its pages). It depends on the kernel's fault-around, the
  file system and the page cache: a few pages where ``MADV_RANDOM`` holds, the whole table where
  faults bring in their neighbours anyway.

The tests assert the mechanisms (int8 table kept, file mapped, mappings advised random); this
script says what they bought on the machine it runs on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.processes import BASE_ENV, REPO

_PROBE = """
import json, sys
from pathlib import Path
def rss_mb():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmRSS"))
    return int(line.split()[1]) / 1024
before = rss_mb()
from services.nfcorpus.dataset import load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.encoders.memory_trim import mappings_of
from services.retrieval.settings import RetrievalSettings
cache, prepare, count = Path(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
encoder = OnnxMiniLM(threads=1, cache_dir=cache, prepare=prepare)
for text in sorted(load_queries(RetrievalSettings().data_dir).values())[:count]:
    encoder.encode([text])
data = encoder.model_path.with_name("model.onnx.data")
maps = mappings_of(data) if data.exists() else []
print(json.dumps({
    "grown_mb": rss_mb() - before,
    "weights_file_rss_mb": sum(m.rss_kb for m in maps) / 1024,
    "mappings_advised_random": [m.random for m in maps],
}))
"""


def probe(cache: Path, *, prepare: bool, queries: int) -> dict[str, Any]:
    """One fresh process's figures after encoding ``queries`` queries."""
    argv = [sys.executable, "-c", _PROBE, str(cache), "1" if prepare else "0", str(queries)]
    done = subprocess.run(argv, env=BASE_ENV, cwd=REPO, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "model_memory.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="model-memory-") as scratch:
        cache = Path(scratch)
        # The first prepared run builds the model: its word table pages are the probe's own.
        word_table = probe(cache, prepare=True, queries=args.queries)
        prepared = probe(cache, prepare=True, queries=args.queries)
        source = probe(cache, prepare=False, queries=args.queries)
    report = {
        "queries": args.queries,
        "growth_mb": {"prepared": prepared["grown_mb"], "source": source["grown_mb"]},
        "prepared_over_source": prepared["grown_mb"] / source["grown_mb"],
        "word_table_resident_mb": word_table["weights_file_rss_mb"],
        "weights_file_mappings": len(word_table["mappings_advised_random"]),
        "of_which_advised_random": sum(word_table["mappings_advised_random"]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
