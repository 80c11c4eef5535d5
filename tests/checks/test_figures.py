"""The pages quote the headline figures from docs/figures.json, which the measuring targets
write (devtools/figures.py): a quote that differs from the file, or names a figure the file does
not hold, fails."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from devtools.figures import FIGURES, FigureError, formatted, load, record, render, stale

FIGURES_NOW = {"image": {"ndcg@5": 0.51864, "ready_s": 2.04, "rankings_sha256_a2a": "e6730e43ab"}}


def test_every_page_quotes_the_figures_file() -> None:
    assert stale(load()) == [], "run the measuring target, or python -m devtools.figures"


def test_the_headline_figures_are_quoted() -> None:
    figures = load()
    assert {"served", "rankings", "image", "chart"} <= set(figures), sorted(figures)
    for section in figures.values():
        assert {"target", "date", "commit"} <= set(section)


def test_a_stale_quote_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("NDCG@5 <!-- figure:image.ndcg@5 -->0.5203<!-- /figure --> through A2A\n")
    assert stale(FIGURES_NOW, (page,)) == [page]
    assert render(page.read_text(), FIGURES_NOW) == (
        "NDCG@5 <!-- figure:image.ndcg@5 -->0.5186<!-- /figure --> through A2A\n"
    )


def test_a_quote_of_a_figure_the_file_lacks_fails() -> None:
    with pytest.raises(FigureError, match=r"image\.size_bytes: no such figure"):
        render("<!-- figure:image.size_bytes -->840 MB<!-- /figure -->", FIGURES_NOW)


def test_figures_are_written_as_their_names_say() -> None:
    assert formatted("image.ndcg@5", 0.51864) == "0.5186"
    assert formatted("image.ready_s", 2.04) == "2.0 s"
    assert formatted("image.size_bytes", 839_912_345) == "840 MB"
    assert formatted("rankings.sha256", "e6730e43ab") == "`e6730e43…`"
    assert formatted("chart.load_requests", 5081) == "5,081"
    assert formatted("scale_build.n363300_limited_completed", True) == "yes"  # not "1"
    assert formatted("chart.load_p95_ms", 41.27) == "41.3 ms"
    assert formatted("chart.load_p95_ms", 412.7) == "413 ms"
    assert formatted("pair.head_c1_cpu_ms", 8.7261) == "8.73 ms"
    assert formatted("pair.c16_throughput_x", 1.6161) == "1.62x"
    assert formatted("pair.head_c16_qps", 175.61) == "175.6 q/s"
    assert formatted("pair.head_rss_mb", 263.96) == "264 MB"
    assert formatted("scale.full_large_ndcg5_judged", 0.517) == "0.5170"
    assert formatted("scale.full_ndcg5_judged_delta", -0.0012) == "-0.0012"
    assert formatted("scale.full_cpu_x", 1.234) == "1.23x"


def test_recording_a_run_rewrites_the_section_and_every_quote(tmp_path: Path) -> None:
    path, page = tmp_path / "figures.json", tmp_path / "page.md"
    path.write_text(json.dumps({"chart": {"ndcg@5": 0.5}}))
    page.write_text("<!-- figure:image.ready_s -->9.9 s<!-- /figure -->")
    record("image", {"ready_s": 2.04}, "make test-image", path, (page,))
    written = json.loads(path.read_text())
    assert written["chart"] == {"ndcg@5": 0.5}  # other sections stay
    assert written["image"]["ready_s"] == 2.04 and written["image"]["target"] == "make test-image"
    assert page.read_text() == "<!-- figure:image.ready_s -->2.0 s<!-- /figure -->"


def test_the_figures_file_is_committed_json() -> None:
    assert FIGURES.is_file() and isinstance(json.loads(FIGURES.read_text()), dict)


def _record_many(path: Path, section: str) -> None:
    for n in range(20):
        record(section, {"n": n}, f"make {section}", path, ())


def test_targets_recording_at_once_keep_each_other_s_sections(tmp_path: Path) -> None:
    path = tmp_path / "figures.json"
    path.write_text("{}\n")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_record_many, args=(path, name))
        for name in ("image", "chart", "load")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    written = json.loads(path.read_text())
    assert {name: written[name]["n"] for name in written} == {"image": 19, "chart": 19, "load": 19}
    assert [p.name for p in tmp_path.iterdir()] == ["figures.json"]  # no temporary file left
