"""Generated sections of a hand-written Markdown page, between ``<!-- name:start/end -->`` marks.

``make eval-quality`` and ``make ranker-lab`` each rewrite their own table in ``docs/quality.md``;
the prose around them, written by people, stays as it is.
"""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, name: str, body: str) -> None:
    """Put ``body`` between the marks of section ``name`` (appended with its marks if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
