"""A LightGBM model's trees run by onnxruntime's ``TreeEnsemble``: LightGBM's scores, to the bit.

The served model is scored once per query over a few hundred candidate rows, which
onnxruntime's tree kernel walks faster than LightGBM's own ``predict`` (measured in
docs/performance.md, "Why the trees are faster"). Training, the model's text in the store and
every figure stay LightGBM's: this is only another reader of the same trees, built from
``Booster.dump_model()`` when a model is loaded, and it gives the same float64 scores because
each step is LightGBM's own:

- rows go in as float64 (as LightGBM converts them), values within ``1e-35f`` of zero as 0.0
  (LightGBM leaves such values out of a row, so its trees see 0.0);
- every split is ``value <= threshold`` (the left child) on the same float64 threshold, read
  from the model's text (its JSON dump writes an infinite threshold as 1e300);
- a missing value (NaN) goes where LightGBM sends it: the node's default side where the feature
  had missing values in training (missing type ``NaN``), else where 0.0 goes (type ``None``:
  LightGBM reads NaN as 0.0);
- the leaf values are summed in float64 in tree order from 0.0, one row at a time (onnxruntime's
  ``SUM`` on one thread), as ``GBDT::PredictRaw`` adds them.

A model using anything else (categorical splits, zero as missing, linear trees, several trees
per round, a transformed output) is not converted: :func:`tree_graph` returns None and LightGBM
scores it. ``tests/unit/test_onnx_trees.py`` holds the bits against LightGBM on NaN, tiny,
signed-zero, infinite and on-threshold values, and the rankings digest on the served model.

The graph is made when the ranker is trained and stored beside the model's text
(:mod:`~services.retrieval.query.ranker`): making one imports LightGBM and onnx, running one
(:class:`OnnxTrees`) only onnxruntime, so a server needs neither (docs/image.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

if TYPE_CHECKING:
    import lightgbm as lgb

#: LightGBM's ``kZeroThreshold``: a row's values this close to zero are read as 0.0. It is the
#: float literal ``1e-35f`` as a double (1.0000000180025095e-35), not the double 1e-35.
ZERO_THRESHOLD = float(np.float32(1e-35))
#: Objectives whose ``predict`` is the raw sum of the trees (no link function).
_RAW_OBJECTIVES = ("lambdarank", "rank_xendcg", "regression")
_BRANCH_LEQ = 0
#: LightGBM's JSON dump writes an infinite number as +-1e300 (``AvoidInf``); its text, as inf.
_INFINITE = 1e300

Scorer = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float64]]


class _Unsupported(Exception):
    """The model uses something this reader does not map exactly."""


def _text_thresholds(model_text: str) -> list[list[float]]:
    """Each tree's split thresholds by split index, from the model's text.

    The JSON dump gives a tree's shape, but writes an infinite threshold (a split that only
    tells missing values apart) as +-1e300; the text writes every threshold as the double it is
    (17 digits, or ``inf``).
    """
    trees: list[list[float]] = []
    for line in model_text.splitlines():
        if line.startswith("Tree="):
            trees.append([])
        elif line.startswith("threshold=") and trees:
            trees[-1] = [float(v) for v in line.removeprefix("threshold=").split()]
    return trees


class _Nodes:
    """``TreeEnsemble``'s flat node and leaf arrays, appended tree by tree."""

    def __init__(self) -> None:
        self.features: list[int] = []
        self.splits: list[float] = []
        self.missing_left: list[int] = []  # onnx: missing value tracks the true (<=) branch
        self.true_ids: list[int] = []
        self.true_leaf: list[int] = []
        self.false_ids: list[int] = []
        self.false_leaf: list[int] = []
        self.leaf_weights: list[float] = []
        self.roots: list[int] = []

    def tree(self, structure: dict[str, Any], thresholds: list[float]) -> None:
        """Append one tree (``thresholds``: its splits' by split index), root first, depth first."""
        if "leaf_value" in structure:
            # A tree of one leaf: a split whose both sides are that leaf adds its value alike.
            root = self._split(0, 0.0, 1)
            leaf = self._leaf(structure)
            self._children(root, (leaf, 1), (leaf, 1))
        else:
            root = self._node(structure, thresholds)
        self.roots.append(root)

    def _leaf(self, leaf: dict[str, Any]) -> int:
        if "leaf_coeff" in leaf:
            raise _Unsupported("a linear leaf")
        self.leaf_weights.append(float(leaf["leaf_value"]))
        return len(self.leaf_weights) - 1

    def _child(self, child: dict[str, Any], thresholds: list[float]) -> tuple[int, int]:
        """(index, is a leaf) of a child, its subtree appended."""
        if "leaf_value" in child:
            return self._leaf(child), 1
        return self._node(child, thresholds), 0

    def _node(self, node: dict[str, Any], thresholds: list[float]) -> int:
        if node.get("decision_type") != "<=":
            raise _Unsupported(f"a {node.get('decision_type')!r} split (categorical)")
        threshold = thresholds[int(node["split_index"])]
        dumped = float(node["threshold"])
        if threshold != dumped and not (abs(dumped) >= _INFINITE and np.isinf(threshold)):
            raise _Unsupported(f"the text's threshold {threshold!r} is not the dump's {dumped!r}")
        missing = node.get("missing_type")
        if missing == "NaN":
            left = bool(node["default_left"])
        elif missing == "None":
            left = threshold >= 0.0  # NaN is read as 0.0, and 0.0 <= threshold goes left
        else:
            raise _Unsupported(f"missing type {missing!r}")
        # Depth first, a node before its subtrees: a row's path goes forward through the list.
        at = self._split(int(node["split_feature"]), threshold, int(left))
        left_child = self._child(node["left_child"], thresholds)  # the left subtree first
        self._children(at, left_child, self._child(node["right_child"], thresholds))
        return at

    def _split(self, feature: int, threshold: float, left: int) -> int:
        """Append a split whose children :meth:`_children` sets; its index."""
        self.features.append(feature)
        self.splits.append(threshold)
        self.missing_left.append(left)
        self.true_ids.append(-1)
        self.true_leaf.append(0)
        self.false_ids.append(-1)
        self.false_leaf.append(0)
        return len(self.features) - 1

    def _children(self, at: int, true: tuple[int, int], false: tuple[int, int]) -> None:
        """Point split ``at``: ``true`` (value <= threshold) and ``false``, each (index, leaf)."""
        self.true_ids[at], self.true_leaf[at] = true
        self.false_ids[at], self.false_leaf[at] = false


def _graph(nodes: _Nodes, width: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper  # index time only: see the module's doc

    ensemble = helper.make_node(
        "TreeEnsemble",
        ["X"],
        ["Y"],
        domain="ai.onnx.ml",
        aggregate_function=1,  # SUM
        post_transform=0,  # none
        n_targets=1,
        tree_roots=nodes.roots,
        nodes_featureids=nodes.features,
        nodes_modes=numpy_helper.from_array(
            np.full(len(nodes.features), _BRANCH_LEQ, dtype=np.uint8), "modes"
        ),
        nodes_splits=numpy_helper.from_array(np.array(nodes.splits, dtype=np.float64), "splits"),
        nodes_missing_value_tracks_true=nodes.missing_left,
        nodes_truenodeids=nodes.true_ids,
        nodes_trueleafs=nodes.true_leaf,
        nodes_falsenodeids=nodes.false_ids,
        nodes_falseleafs=nodes.false_leaf,
        leaf_targetids=[0] * len(nodes.leaf_weights),
        leaf_weights=numpy_helper.from_array(
            np.array(nodes.leaf_weights, dtype=np.float64), "leaves"
        ),
    )
    graph = helper.make_graph(
        [ensemble],
        "lightgbm_trees",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [None, width])],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, [None, 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)]
    )
    model.ir_version = 10
    return bytes(model.SerializeToString())


class OnnxTrees:
    """One LightGBM model's trees in an onnxruntime session (see the module docstring)."""

    def __init__(self, graph: bytes) -> None:
        """Open the ``TreeEnsemble`` graph on one thread: a query's rows are too few to share."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def __call__(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """The model's raw score of each row, as ``Booster.predict`` gives it."""
        x = rows.astype(np.float64)
        x[np.abs(x) <= ZERO_THRESHOLD] = 0.0
        (scores,) = self._session.run(None, {"X": x})
        return np.asarray(scores, dtype=np.float64)[:, 0]


def tree_graph(booster: lgb.Booster) -> bytes | None:
    """``booster``'s trees as an onnxruntime graph, or None for a model it would not score exactly."""
    model = booster.dump_model()
    objective = str(model.get("objective", "")).split(" ")[0]
    if (
        objective not in _RAW_OBJECTIVES
        or model.get("num_tree_per_iteration") != 1
        or model.get("average_output")
    ):
        return None
    thresholds = _text_thresholds(str(booster.model_to_string()))
    if len(thresholds) != len(model["tree_info"]):
        return None
    nodes = _Nodes()
    try:
        for tree, tree_thresholds in zip(model["tree_info"], thresholds, strict=True):
            nodes.tree(tree["tree_structure"], tree_thresholds)
    except (_Unsupported, IndexError):
        return None
    return _graph(nodes, int(model["max_feature_idx"]) + 1)


def onnx_trees(booster: lgb.Booster) -> OnnxTrees | None:
    """``booster``'s trees in onnxruntime, or None for a model they would not score exactly."""
    graph = tree_graph(booster)
    return None if graph is None else OnnxTrees(graph)


def scorer(booster: lgb.Booster) -> Scorer:
    """The fastest exact scorer of ``booster``: its trees in onnxruntime, else LightGBM itself."""
    trees = onnx_trees(booster)
    return trees if trees is not None else lightgbm_scorer(booster)


def lightgbm_scorer(booster: lgb.Booster) -> Scorer:
    """``booster`` scored by LightGBM itself: the fallback for a model no graph scores exactly."""
    # Single-threaded: a request's few hundred rows are too few to share.
    return lambda rows: np.asarray(booster.predict(rows, num_threads=1), dtype=np.float64)
