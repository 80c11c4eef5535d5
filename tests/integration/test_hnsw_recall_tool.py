"""``devtools.bench.hnsw_recall`` runs end to end on a small synthetic shard cut into segments."""

from __future__ import annotations

import json
from pathlib import Path

from devtools.bench.hnsw_recall import main


def test_the_tool_measures_a_shard_cut_into_segments(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    main(
        [
            "--kind", "gaussian", "--points", "1500", "--dim", "16", "--queries", "10",
            "--k", "10", "--m", "8", "--ef-construct", "32", "--ef", "16,64",
            "--segment-points", "600", "--dir", str(tmp_path), "--out", str(out),
        ]
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report["points"] == 1500 and report["segment_points"] == 600
    searches = [(r["search"], r.get("ef"), r.get("quantization")) for r in report["results"]]
    assert searches == [
        ("hnsw", 16, "none"), ("hnsw", 64, "none"), ("hnsw", 16, "int8"), ("hnsw", 64, "int8"),
        ("exact", None, None),
    ]  # fmt: skip
    assert all(0.0 < r["recall_at_10"] <= 1.0 for r in report["results"])
