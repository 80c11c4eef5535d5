"""A BEIR archive served over loopback HTTP, as the official download site serves it.

The download code is real and runs against this server (no machine here reaches the internet):
the tests point ``*_DOWNLOAD_URL`` at it and check what it was asked for.
"""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class ArchiveServer:
    """Where the archive is served; ``requests`` lists every path asked for, in order."""

    base_url: str
    requests: list[str] = field(default_factory=list)


def zip_folder(folder: Path, top: str = "nfcorpus") -> bytes:
    """The files of ``folder`` zipped under one top-level directory, as BEIR packs them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            zf.write(path, f"{top}/{path.relative_to(folder)}")
    return buffer.getvalue()


@contextmanager
def serve_archive(
    payload: bytes, path: str = "/nfcorpus.zip", stall_after: int | None = None
) -> Iterator[ArchiveServer]:
    """Serve ``payload`` at ``path`` on a loopback port (404 elsewhere) while the block runs.

    With ``stall_after``, only that many bytes are sent, then nothing until the block ends: a
    download caught in the middle, for a test to kill.
    """
    served = ArchiveServer("")
    released = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.requests.append(self.path)
            if self.path != path:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if stall_after is None:
                self.wfile.write(payload)
                return
            self.wfile.write(payload[:stall_after])
            self.wfile.flush()
            released.wait()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        released.set()
        server.shutdown()
        server.server_close()
