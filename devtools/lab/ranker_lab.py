"""Ranker experiments on dev: seed spread, seed ensembles, more training signal, more features.

``python -m devtools.lab.ranker_lab [--fresh] [--only NAME ...]`` (``make ranker-lab``) loads the
candidates of every judged train, dev and test query (:mod:`.data`: the train-only index of
``make eval-quality``, cached in ``var/lab``), runs the experiments of :mod:`.experiments` and
writes ``reports/ranker_lab.json`` and its table in ``docs/quality.md``. Settings are chosen on dev; test is shown beside it only to
report, never to choose.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from devtools.eval.doc_sections import replace_section
from devtools.lab.data import load
from devtools.lab.evaluation import SEEDS
from devtools.lab.experiments import EXPERIMENTS
from harness.processes import REPO


def _cell(m: Any) -> str:
    if isinstance(m, dict):
        return f"{m['mean']:.4f} ± {m['std']:.4f}"
    return f"{m:.4f}"


def render(results: dict[str, Any]) -> str:
    """The experiments as a Markdown table: dev (and, only to report, test) NDCG."""
    lines = [
        f"`make ranker-lab`: each row trains one model {len(SEEDS)} times (LightGBM seeds "
        f"{', '.join(map(str, SEEDS))}) on the train queries of the train-only index and gives "
        'the mean ± standard deviation over seeds; "ensemble" averages the five models\' '
        "scores. The served ranker is one 63-leaf model (the single-model rows); round 3 served "
        'the sum of three (the "ensembles of three" rows). '
        "Candidates and features are computed once, as the indexer does. Test is shown "
        "only to report: every choice was made on dev.",
        "",
        "| experiment | dev NDCG@5 | dev NDCG@10 | test NDCG@5 | test NDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in EXPERIMENTS:
        r = results.get(name)
        if r is None:
            continue
        if "dev" in r and "test" in r:
            dev, test = r["dev"], r["test"]
            lines.append(
                f"| {name} | {_cell(dev['ndcg@5'])} | {_cell(dev['ndcg@10'])} "
                f"| {_cell(test['ndcg@5'])} | {_cell(test['ndcg@10'])} |"
            )
            if "ensemble" in dev:
                cells = [*dev["ensemble"], *test["ensemble"]]
                lines.append(f"| ↳ five-seed ensemble | {' | '.join(f'{c:.4f}' for c in cells)} |")
        else:
            for label, m in r.items():
                test = " | ".join(f"{t:.4f}" for t in m["test"]) if "test" in m else "– | –"
                lines.append(
                    f"| {name}: {label} | {_cell(m['ndcg@5'])} | {_cell(m['ndcg@10'])} | {test} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="recompute the candidates")
    parser.add_argument("--only", nargs="*", help="run only these experiments")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "ranker_lab.json")
    args = parser.parse_args()
    lab = load(args.fresh)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for name, run in EXPERIMENTS.items():
        if args.only and name not in args.only:
            continue
        print(f"== {name}", flush=True)
        results[name] = run(lab)
        print(json.dumps(results[name], indent=1), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    replace_section(REPO / "docs" / "quality.md", "ranker-lab", render(results))


if __name__ == "__main__":
    main()
