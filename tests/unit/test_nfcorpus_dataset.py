import gzip
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.nfcorpus.dataset import (
    DEFAULT_DATA_DIR,
    DatasetError,
    Document,
    corpus_fingerprint,
    load_corpus,
    load_qrels,
    load_queries,
)
from services.nfcorpus.download import ensure_dataset
from tests.support.archive import serve_archive

CORPUS: list[dict[str, object]] = [
    {"_id": "MED-1", "title": "Title one", "text": "Text one", "metadata": {"url": "http://x/1"}},
    {"_id": "MED-2", "title": "", "text": "Text two", "metadata": {}},
]
QUERIES: list[dict[str, object]] = [
    {"_id": "PLAIN-1", "text": "query one", "metadata": {"url": "http://y"}}
]
QRELS = "query-id\tcorpus-id\tscore\nPLAIN-1\tMED-1\t2\nPLAIN-1\tMED-2\t0\n"


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _write_beir(folder: Path, gz: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES)):
        if gz:
            with gzip.open(folder / f"{name}.gz", "wt") as f:
                f.write(_jsonl(rows))
        else:
            (folder / name).write_text(_jsonl(rows))
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text(QRELS)


@pytest.mark.parametrize("gz", [False, True])
def test_reads_plain_and_gzipped_beir_files(tmp_path: Path, gz: bool) -> None:
    _write_beir(tmp_path, gz)
    docs = load_corpus(tmp_path)
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("MED-1", "Title one", "Text one"),
        ("MED-2", "", "Text two"),
    ]
    assert load_corpus(tmp_path, limit=1)[0].doc_id == "MED-1"
    assert load_queries(tmp_path) == {"PLAIN-1": "query one"}
    assert load_qrels(tmp_path, "test") == {"PLAIN-1": {"MED-1": 2}}  # grade 0 is not relevant


def test_clear_errors_for_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"corpus\.jsonl \(or corpus\.jsonl\.gz\) not found"):
        load_corpus(tmp_path)
    (tmp_path / "corpus.jsonl").write_text('{"_id": "MED-1", "text": "ok"}\nnot json\n')
    with pytest.raises(DatasetError, match="line 2: not JSON"):
        load_corpus(tmp_path)
    with pytest.raises(DatasetError, match="qrels file not found"):
        load_qrels(tmp_path, "dev")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "dev.tsv").write_text("q\td\n")
    with pytest.raises(DatasetError, match="expected 3 tab-separated fields"):
        load_qrels(tmp_path, "dev")


def test_fingerprint_changes_with_content() -> None:
    a = [Document("MED-1", "t", "x")]
    assert corpus_fingerprint(a) == corpus_fingerprint(list(a))
    assert corpus_fingerprint(a) != corpus_fingerprint([Document("MED-1", "t", "y")])


def test_shared_dataset_matches_source_md() -> None:
    folder = DEFAULT_DATA_DIR
    docs = load_corpus(folder)
    assert len(docs) == 3633 and len({d.doc_id for d in docs}) == 3633
    assert len(load_qrels(folder, "test")) == 323
    assert len(load_qrels(folder, "dev")) == 324
    assert len(load_queries(folder)) == 3237


# --- the download path, against a local HTTP server ---------------------------------------


def _beir_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("nfcorpus/corpus.jsonl", _jsonl(CORPUS))
        zf.writestr("nfcorpus/queries.jsonl", _jsonl(QUERIES))
        zf.writestr("nfcorpus/qrels/test.tsv", QRELS)
        zf.writestr("nfcorpus/../escape.txt", "must not be written outside the folder")
    return buffer.getvalue()


@pytest.fixture
def archive_server() -> Iterator[tuple[str, bytes]]:
    payload = _beir_zip()
    with serve_archive(payload) as served:
        yield served.base_url, payload


def test_downloads_checks_md5_and_unpacks(
    tmp_path: Path, archive_server: tuple[str, bytes]
) -> None:
    base, payload = archive_server
    md5 = hashlib.md5(payload).hexdigest()
    folder = tmp_path / "data" / "nfcorpus"
    assert ensure_dataset(folder, f"{base}/nfcorpus.zip", md5) == folder
    assert [d.doc_id for d in load_corpus(folder)] == ["MED-1", "MED-2"]
    assert load_qrels(folder, "test") == {"PLAIN-1": {"MED-1": 2}}
    assert not (tmp_path / "data" / "escape.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["corpus.jsonl", "qrels", "queries.jsonl"]
    # Present now: a second call downloads nothing (a wrong URL would fail otherwise).
    assert ensure_dataset(folder, f"{base}/missing.zip", md5) == folder


def test_rejects_a_wrong_checksum_and_keeps_nothing(
    tmp_path: Path, archive_server: tuple[str, bytes]
) -> None:
    base, _ = archive_server
    folder = tmp_path / "nfcorpus"
    with pytest.raises(DatasetError, match=r"md5 .* does not match expected 0{32}"):
        ensure_dataset(folder, f"{base}/nfcorpus.zip", "0" * 32)
    assert list(folder.iterdir()) == []


def test_reports_http_failures(tmp_path: Path, archive_server: tuple[str, bytes]) -> None:
    base, _ = archive_server
    with pytest.raises(DatasetError, match=r"download of .*/missing\.zip failed"):
        ensure_dataset(tmp_path / "x", f"{base}/missing.zip", "0" * 32)
