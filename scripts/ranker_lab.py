"""Ranker experiments on dev: seed spread, seed ensembles, more training signal, more features.

``python scripts/ranker_lab.py [--fresh] [--only NAME ...]`` (``make ranker-lab``) loads the
candidates of every judged train, dev and test query (``lab_data.py``: the train-only index of
``make eval-quality``, cached in ``var/lab``), runs the experiments of ``lab_experiments.py`` and
writes ``reports/ranker_lab.json``. Settings are chosen on dev; test is shown beside it only to
report, never to choose.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lab_data import REPO, load
from lab_experiments import EXPERIMENTS


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


if __name__ == "__main__":
    main()
