import gzip
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.processes import REPO
from services.nfcorpus.dataset import (
    DEFAULT_DATA_DIR,
    DatasetError,
    Document,
    corpus_fingerprint,
    has_dataset,
    load_corpus,
    load_qrels,
    load_queries,
    missing_files,
)
from services.nfcorpus.download import STALE_STAGING_S, ensure_dataset, problems_of
from tests.support.archive import serve_archive
from tests.support.polling import wait_for

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

# Unlike the other qrels, so its bytes occur once in an archive and a test can alter them there.
TEST_QRELS = "query-id\tcorpus-id\tscore\nPLAIN-1\tMED-2\t1\n"


def _beir_zip(leave_out: str = "", corrupt_last: bool = False) -> bytes:
    """A BEIR archive, its files stored uncompressed, ``qrels/test.tsv`` the last data file.

    ``corrupt_last`` changes a byte of that file after its checksum was written: unpacking then
    fails on it, with the other files already written, as if it was cut short there.
    """
    files = {
        "corpus.jsonl": _jsonl(CORPUS),
        "queries.jsonl": _jsonl(QUERIES),
        "qrels/train.tsv": QRELS,
        "qrels/dev.tsv": QRELS,
        "qrels/test.tsv": TEST_QRELS,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for name, text in files.items():
            if name != leave_out:
                zf.writestr(f"nfcorpus/{name}", text)
        zf.writestr("nfcorpus/../escape.txt", "must not be written outside the folder")
    payload = buffer.getvalue()
    if corrupt_last:
        assert payload.count(TEST_QRELS.encode()) == 1
        payload = payload.replace(TEST_QRELS.encode(), TEST_QRELS.replace("1\n", "2\n").encode())
    return payload


@pytest.fixture
def archive_server() -> Iterator[tuple[str, bytes]]:
    payload = _beir_zip()
    with serve_archive(payload) as served:
        yield served.base_url, payload


def _md5(payload: bytes) -> str:
    return hashlib.md5(payload).hexdigest()


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def _assert_whole(folder: Path) -> None:
    assert has_dataset(folder)
    assert [d.doc_id for d in load_corpus(folder)] == ["MED-1", "MED-2"]
    assert load_qrels(folder, "test") == {"PLAIN-1": {"MED-2": 1}}
    assert load_qrels(folder, "train") == {"PLAIN-1": {"MED-1": 2}}


def test_downloads_checks_md5_and_unpacks(
    tmp_path: Path, archive_server: tuple[str, bytes]
) -> None:
    base, payload = archive_server
    md5 = _md5(payload)
    folder = tmp_path / "data" / "nfcorpus"
    assert ensure_dataset(folder, f"{base}/nfcorpus.zip", md5) == folder
    _assert_whole(folder)
    assert not (tmp_path / "data" / "escape.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["corpus.jsonl", "qrels", "queries.jsonl"]
    assert list((tmp_path / "data").iterdir()) == [folder]  # no staging folder left beside it
    # Present now: a second call downloads nothing (a wrong URL would fail otherwise).
    assert ensure_dataset(folder, f"{base}/missing.zip", md5) == folder


def test_an_empty_folder_is_filled(tmp_path: Path, archive_server: tuple[str, bytes]) -> None:
    base, payload = archive_server
    folder = tmp_path / "nfcorpus"
    folder.mkdir()  # a folder made ahead, as an image build or a volume provides it
    ensure_dataset(folder, f"{base}/nfcorpus.zip", _md5(payload))
    _assert_whole(folder)
    assert list(tmp_path.iterdir()) == [folder]  # nothing set aside: there was nothing to keep


def test_rejects_a_wrong_checksum_and_keeps_nothing(
    tmp_path: Path, archive_server: tuple[str, bytes]
) -> None:
    base, _ = archive_server
    folder = tmp_path / "nfcorpus"
    with pytest.raises(DatasetError, match=r"md5 .* does not match expected 0{32}"):
        ensure_dataset(folder, f"{base}/nfcorpus.zip", "0" * 32)
    assert list(tmp_path.iterdir()) == []


def test_reports_http_failures(tmp_path: Path, archive_server: tuple[str, bytes]) -> None:
    base, _ = archive_server
    with pytest.raises(DatasetError, match=r"download of .*/missing\.zip failed"):
        ensure_dataset(tmp_path / "x", f"{base}/missing.zip", "0" * 32)
    assert list(tmp_path.iterdir()) == []


def test_a_partial_folder_is_missing_and_downloaded_again(
    tmp_path: Path, archive_server: tuple[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    base, payload = archive_server
    folder = tmp_path / "nfcorpus"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(_jsonl(CORPUS[:1]))  # what a cut-short unpack leaves
    assert missing_files(folder) == [
        "queries.jsonl",
        "qrels/train.tsv",
        "qrels/dev.tsv",
        "qrels/test.tsv",
    ]
    assert not has_dataset(folder)
    with caplog.at_level(logging.WARNING, logger="services.nfcorpus.download"):
        ensure_dataset(folder, f"{base}/nfcorpus.zip", _md5(payload))
    _assert_whole(folder)
    said = caplog.text
    assert f"{folder} is not a whole data set" in said
    assert "no queries.jsonl, no qrels/train.tsv, no qrels/dev.tsv, no qrels/test.tsv" in said
    # The partial folder is set aside beside it, as it was, and the log says where.
    (aside,) = tmp_path.glob("nfcorpus.incomplete-*")
    assert _files(aside) == {"corpus.jsonl": _jsonl(CORPUS[:1])}
    assert f"set aside the incomplete {folder} as {aside}" in said


def test_an_older_in_place_unpack_cut_short_is_not_whole(
    tmp_path: Path, archive_server: tuple[str, bytes]
) -> None:
    base, payload = archive_server
    folder = tmp_path / "nfcorpus"
    _write_beir(folder, gz=False)
    for split in ("train", "dev"):
        (folder / "qrels" / f"{split}.tsv").write_text(QRELS)
    assert has_dataset(folder)
    # Every file is there, but the archive an older version unpacked from is too: it was killed
    # before it removed it, so the file it was writing may be cut short.
    (folder / "tmpab12cd").mkdir()
    (folder / "tmpab12cd" / "dataset.zip").write_bytes(payload[:100])
    assert problems_of(folder) == "unfinished download tmpab12cd/"
    ensure_dataset(folder, f"{base}/nfcorpus.zip", _md5(payload))
    _assert_whole(folder)
    assert problems_of(folder) == ""


@pytest.mark.parametrize("before", ["absent", "partial"])
def test_an_unpack_cut_short_leaves_the_target_untouched(tmp_path: Path, before: str) -> None:
    folder = tmp_path / "nfcorpus"
    if before == "partial":
        folder.mkdir()
        (folder / "corpus.jsonl").write_text("kept as it was\n")
    was = _files(folder) if folder.exists() else None
    broken = _beir_zip(corrupt_last=True)
    with serve_archive(broken) as served:
        url = f"{served.base_url}/nfcorpus.zip"
        # The md5 matches (the archive is what the server promised); unpacking fails at the
        # last file, after the others were written.
        with pytest.raises(DatasetError, match=r"could not be unpacked: Bad CRC-32"):
            ensure_dataset(folder, url, _md5(broken))
    assert (_files(folder) if folder.exists() else None) == was
    assert sorted(tmp_path.iterdir()) == ([folder] if was is not None else [])
    assert not has_dataset(folder)  # the next run tries again

    good = _beir_zip()
    with serve_archive(good) as served:
        ensure_dataset(folder, f"{served.base_url}/nfcorpus.zip", _md5(good))
    _assert_whole(folder)


def test_an_archive_without_every_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "nfcorpus"
    short = _beir_zip(leave_out="qrels/dev.tsv")
    refused = pytest.raises(DatasetError, match=r"nfcorpus\.zip lacks qrels/dev\.tsv")
    with serve_archive(short) as served, refused:
        ensure_dataset(folder, f"{served.base_url}/nfcorpus.zip", _md5(short))
    assert list(tmp_path.iterdir()) == []


def test_staging_of_a_killed_download_is_removed_once_stale(
    tmp_path: Path, archive_server: tuple[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    base, payload = archive_server
    folder = tmp_path / "nfcorpus"
    # What a download killed mid-unpack leaves: its staging folder, never the target.
    stale, running = tmp_path / ".nfcorpus.download-old", tmp_path / ".nfcorpus.download-new"
    for staging in (stale, running):
        (staging / "nfcorpus").mkdir(parents=True)
        (staging / "dataset.zip").write_bytes(payload)
        (staging / "nfcorpus" / "corpus.jsonl").write_text(_jsonl(CORPUS))
    long_ago = time.time() - STALE_STAGING_S - 60
    for path in (stale, stale / "nfcorpus", stale / "dataset.zip"):
        os.utime(path, (long_ago, long_ago))
    assert not has_dataset(folder)
    with caplog.at_level(logging.WARNING, logger="services.nfcorpus.download"):
        ensure_dataset(folder, f"{base}/nfcorpus.zip", _md5(payload))
    _assert_whole(folder)
    assert f"removing {stale}, left by a download that never finished" in caplog.text
    # A recent one may be another process's download in progress: left alone.
    assert sorted(tmp_path.iterdir()) == sorted([running, folder])


def _downloading(parent: Path) -> bool:
    # The archive file opens once the response has begun: the download is under way.
    return any(parent.glob(".nfcorpus.download-*/dataset.zip"))


def test_a_download_killed_midway_leaves_the_target_untouched(tmp_path: Path) -> None:
    payload = _beir_zip()
    folder = tmp_path / "nfcorpus"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("kept as it was\n")
    half = len(payload) // 2
    fetch = "from services.nfcorpus.download import ensure_dataset as e; e(Path(a[1]), a[2], a[3])"
    code = f"import sys; from pathlib import Path; a = sys.argv; {fetch}"
    with serve_archive(payload, stall_after=half) as served:
        url = f"{served.base_url}/nfcorpus.zip"
        child = subprocess.Popen(
            [sys.executable, "-c", code, str(folder), url, _md5(payload)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            wait_for(lambda: _downloading(tmp_path), 60, "download under way in a staging folder")
        finally:
            child.kill()  # SIGKILL, as a node drains or a pod is evicted: no clean-up runs
            child.wait()
    assert _files(folder) == {"corpus.jsonl": "kept as it was\n"}
    assert not has_dataset(folder)  # the next run tries again
    with serve_archive(payload) as served:
        ensure_dataset(folder, f"{served.base_url}/nfcorpus.zip", _md5(payload))
    _assert_whole(folder)
