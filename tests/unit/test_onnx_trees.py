"""LightGBM's trees in onnxruntime score every row to LightGBM's bits, or are not used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt
import pytest

from harness.processes import REPO
from services.retrieval.indexing import training
from services.retrieval.query.features import FEATURES
from services.retrieval.query.onnx_trees import ZERO_THRESHOLD, OnnxTrees, onnx_trees, scorer

WIDTH = len(FEATURES)


def _training(seed: int = 0, queries: int = 40, per_query: int = 15) -> training.Grouped:
    """Rows where feature 0 has missing values (a NaN split) and feature 1 none (no NaN seen).

    Feature 2 is zero in half the rows and decides too: LightGBM then splits at its zero
    threshold (+-1e-35f), where a value read as zero or not goes another way. Feature 3 is 0.0
    or missing, and missing ones are relevant: a split at an infinite threshold, which only
    tells missing values apart (the served model has one).
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(queries * per_query, WIDTH)).astype(np.float32)
    x[rng.random(len(x)) < 0.5, 2] = 0.0
    missing = rng.random(len(x)) < 0.3
    x[:, 3] = np.where(missing, np.nan, 0.0)
    y = (x[:, 0] + x[:, 1] + x[:, 2] + 0.2 * rng.normal(size=len(x)) > 0.5) | missing
    x[rng.random(len(x)) < 0.2, 0] = np.nan
    return training.Grouped(x, y.astype(np.float32), [per_query] * queries)


def _booster(
    params: dict[str, Any] | None = None, data: training.Grouped | None = None
) -> lgb.Booster:
    data = data or _training()
    train_set = lgb.Dataset(data.features, data.labels, group=data.groups)
    settings = {**training.PARAMS, "num_leaves": 15, "min_data_in_leaf": 5, **(params or {})}
    return lgb.train(settings, train_set, num_boost_round=20)


def _splits(booster: lgb.Booster) -> list[dict[str, Any]]:
    out, stack = [], [t["tree_structure"] for t in booster.dump_model()["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_feature" in node:
            out.append(node)
            stack += [node["left_child"], node["right_child"]]
    return out


def _probe(booster: lgb.Booster) -> npt.NDArray[np.float32]:
    """Random rows, then every feature at each awkward value and at every split's threshold."""
    rng = np.random.default_rng(7)
    rows = [rng.normal(size=(200, WIDTH)).astype(np.float32)]
    tiny = np.float32(ZERO_THRESHOLD)
    above = np.nextafter(tiny, np.float32(1.0))
    awkward = [np.nan, 0.0, -0.0, 1e-40, -1e-40, tiny, -tiny, above, -above, np.inf, -np.inf]
    finite = [n["threshold"] for n in _splits(booster) if abs(n["threshold"]) < 1e38]
    thresholds = [np.float32(t) for t in finite]  # the infinite ones: inf is probed anyway
    for value in awkward + thresholds:
        for feature in range(WIDTH):
            row = rng.normal(size=(4, WIDTH)).astype(np.float32)
            row[:, feature] = value
            rows.append(row)
    everything_missing = np.full((1, WIDTH), np.nan, dtype=np.float32)
    return np.concatenate([*rows, everything_missing])


def _lightgbm(booster: lgb.Booster, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    return np.asarray(booster.predict(rows, num_threads=1), dtype=np.float64)


def test_the_trees_give_lightgbm_s_bits_on_missing_tiny_signed_zero_infinite_and_split_values() -> (
    None
):
    booster = _booster()
    splits = _splits(booster)
    assert {n["missing_type"] for n in splits} == {"NaN", "None"}  # both ways NaN can go
    assert any(abs(n["threshold"]) == ZERO_THRESHOLD for n in splits)  # a split at zero
    assert any(n["threshold"] >= 1e300 for n in splits)  # one at infinity (the dump's 1e300)
    trees = onnx_trees(booster)
    assert isinstance(trees, OnnxTrees)
    probe = _probe(booster)
    assert trees(probe).tobytes() == _lightgbm(booster, probe).tobytes()


def test_a_tree_of_one_leaf_adds_its_value() -> None:
    data = _training()
    constant = training.Grouped(data.features, np.zeros_like(data.labels), data.groups)
    booster = _booster({"boost_from_average": False}, constant)
    assert any("leaf_value" in t["tree_structure"] for t in booster.dump_model()["tree_info"])
    trees = onnx_trees(booster)
    assert trees is not None
    probe = _probe(booster)
    assert trees(probe).tobytes() == _lightgbm(booster, probe).tobytes()


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"zero_as_missing": True}, "zero as missing"),
        ({"objective": "binary", "metric": "auc"}, "a sigmoid on the sum"),
        ({"linear_tree": True}, "linear leaves"),
    ],
)
def test_a_model_the_trees_would_not_match_is_left_to_lightgbm(
    params: dict[str, Any], why: str
) -> None:
    booster = _booster(params)
    assert onnx_trees(booster) is None, why
    probe = _probe(booster)
    assert scorer(booster)(probe).tobytes() == _lightgbm(booster, probe).tobytes()


def test_a_categorical_split_is_left_to_lightgbm() -> None:
    data = _training()
    data.features[:, 2] = np.floor(np.abs(data.features[:, 2]) * 3)
    data.labels[:] = (data.features[:, 2] == 1).astype(np.float32)
    train_set = lgb.Dataset(data.features, data.labels, group=data.groups, categorical_feature=[2])
    booster = lgb.train({**training.PARAMS, "min_data_in_leaf": 5}, train_set, num_boost_round=5)
    assert any(n["decision_type"] == "==" for n in _splits(booster))
    assert onnx_trees(booster) is None


def test_the_ranker_scores_with_the_trees_and_sums_its_models_in_order() -> None:
    data = _training()
    served = training.train(data, seeds=(42, 43))
    boosters = [lgb.Booster(model_str=m) for m in json.loads(served.to_text())]
    probe = _probe(boosters[0])
    assert all(isinstance(s, OnnxTrees) for s in served._scorers)
    expected = np.zeros(len(probe))
    for booster in boosters:
        expected += _lightgbm(booster, probe)
    assert served.score(probe).tobytes() == expected.tobytes()


# A server's process: the stored ranker read and scored where LightGBM and onnx cannot be imported.
_SERVED_WITHOUT_LIGHTGBM = """
import sys
sys.modules["lightgbm"] = sys.modules["onnx"] = None  # an import of either fails
import json, numpy as np
from services.retrieval.query.ranker import Ranker
models, graphs, rows = sys.argv[1:]
ranker = Ranker.from_text(open(models).read(), {}, open(graphs).read())
sys.stdout.write(ranker.score(np.load(rows)).tobytes().hex())
try:
    Ranker.from_text(open(models).read(), {})
except ImportError as e:
    print("", "without graphs:", e.name)
"""


def test_a_stored_ranker_scores_without_lightgbm_and_onnx_and_falls_back_to_them(
    tmp_path: Path,
) -> None:
    served = training.train(_training(), seeds=(42, 43))
    (tmp_path / "models").write_text(served.to_text())
    (tmp_path / "graphs").write_text(served.graphs_text())
    probe = _probe(lgb.Booster(model_str=json.loads(served.to_text())[0]))
    np.save(tmp_path / "rows.npy", probe)
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            _SERVED_WITHOUT_LIGHTGBM,
            *(str(tmp_path / n) for n in ("models", "graphs", "rows.npy")),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    scores, fallback = run.stdout.split(" ", 1)
    assert bytes.fromhex(scores) == served.score(probe).tobytes()
    assert fallback.strip() == "without graphs: lightgbm"  # the fallback needs LightGBM
