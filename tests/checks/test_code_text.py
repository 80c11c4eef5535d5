"""No measured figure in the text of the code: a figure goes stale where no target rewrites it.

What a run measures lives in docs/*.md and docs/figures.json (written by the targets that measure
it, devtools/figures.py); a comment, a docstring or a description points to the page ("measured
in docs/performance.md") instead of stating the figure. A description ships too: a pydantic
``Field(description=...)`` is in every MCP client's tool schema, an argparse ``help=`` in every
``--help``.

What is scanned, in every ``.py`` file git tracks (or would: not ignored) under services/,
harness/, devtools/ and tests/: comments (``tokenize``), every string that stands as a statement
(module, class and function docstrings, and an attribute's docstring under it: ``ast``), and
every string passed as a ``description=`` or ``help=`` keyword argument (an f-string's fields
read as ``{}``). Other strings are the code's own output and are left alone (a report's header,
a format string).

What is a figure (``FIGURE``): a number written in digits (``2,000`` and ``0.47`` included) with a
unit of time under a second or of size, with or without a space or a hyphen between them: ms,
millisecond(s), µs or us, microsecond(s), KB, kB, MB, GB, TB and their KiB, MiB, GiB, TiB; or a
multiple, a number immediately followed by ``x`` or ``×`` and then no letter or digit. Not a
figure: seconds (timeouts and settings are given in seconds), percentages, zero (none of a unit
is no measurement), a hexadecimal number or its prefix (``0x``), a dimension (a digit right after
the ``x``), a number spaced from its ``x`` (a matrix's shape), and a format specification (a
number right after a colon). A number inside a word or after a decimal point starts no figure.

A size or a time that is a setting or a constant of the code is not a measurement, but the text
names the constant (``over MAX_BODY_BYTES``) rather than its value, so the text cannot disagree
with it. What must state a value anyway is in ``ALLOWED``, by path and figure, with the reason.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from harness.processes import REPO
from tests.checks.repo_copy import tracked_files

FOLDERS = ("services", "harness", "devtools", "tests")
#: The keyword arguments whose string describes something to a reader: pydantic's Field, argparse.
DESCRIBING = frozenset({"description", "help"})

# Not zero: "0 ms" is none, and "0x" a hexadecimal prefix.
_NUMBER = r"(?<![\w.:])(?!0(?:\.0+)?(?![\d.,]))\d+(?:,\d{3})*(?:\.\d+)?"
_UNIT = r"(?:ms|milliseconds?|[µμu]s|microseconds?|[kKMGT]i?B)"
FIGURE = re.compile(rf"{_NUMBER}(?:[ \u00a0-]?{_UNIT}(?!\w)|[x×](?![\w×]))")

#: (path, figure) -> why the text must state it. Empty is the goal: name the constant instead.
ALLOWED: dict[tuple[str, str], str] = {}


def _tracked() -> list[str]:
    return sorted(
        name
        for name in tracked_files()
        if name.endswith(".py") and name.split("/", 1)[0] in FOLDERS
    )


def _texts(source: str) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, text) of each comment, standing string and description."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.end[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                yield node.lineno, node.end_lineno or node.lineno, node.value.value
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                text = _literal(keyword.value) if keyword.arg in DESCRIBING else None
                if text is not None:
                    value = keyword.value
                    yield value.lineno, value.end_lineno or value.lineno, text


def _literal(node: ast.expr) -> str | None:
    """A string literal's text; an f-string's with ``{}`` for each field; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
            for part in node.values
        )
    return None


def figures(source: str, path: str = "<source>") -> list[str]:
    """``path:line: text`` for each line of ``source``'s code text that states a figure."""
    lines = source.splitlines()
    found: dict[int, str] = {}
    for first, last, text in _texts(source):
        for match in FIGURE.finditer(text):
            if (path, match.group()) in ALLOWED:
                continue
            before = text[: match.start()]
            line = first + before.count("\n")
            if line > last or match.group() not in lines[line - 1]:
                # A string continued over several literals, or an escaped newline: the source
                # line that holds the figure, else the string's first.
                holding = (n for n in range(first, last + 1) if match.group() in lines[n - 1])
                line = next(holding, first)
            said = text[before.rfind("\n") + 1 :].split("\n", 1)[0].strip()
            found.setdefault(line, said)
    return [f"{path}:{line}: {found[line]}" for line in sorted(found)]


def test_no_code_text_states_a_measured_figure() -> None:
    offenders = [
        offender
        for name in _tracked()
        for offender in figures((REPO / name).read_text(encoding="utf-8"), name)
    ]
    assert not offenders, (
        "measured figures belong in docs/*.md or docs/figures.json; point there instead:\n"
        + "\n".join(offenders)
    )


def test_every_allowed_figure_is_still_stated() -> None:
    tracked = set(_tracked())
    for path, figure in ALLOWED:
        assert path in tracked, f"{path}: no longer tracked, drop it from ALLOWED"
        assert figure in (REPO / path).read_text(), f"{path}: {figure} is gone, drop it"


SAMPLE = '''"""Module: a search takes 3.4 ms."""

import argparse

from pydantic import BaseModel, Field


class Answer(BaseModel):
    """An answer; text makes it 2x larger."""

    text: str = Field(description="Each hit's text (about 40 KB for ten).")
    size: int = 0
    """Bytes; 1.8 µs to count them."""


def parse() -> argparse.Namespace:
    """Parse."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", help=f"rows, {1 + 1} of them at 12 us each")
    parser.add_argument(
        "--m",
        help="first part, "
        "then 500 MiB",
    )
    return parser.parse_args()  # ready in 250ms
'''


def test_a_figure_in_a_comment_a_docstring_or_a_description_is_caught() -> None:
    assert figures(SAMPLE, "sample.py") == [
        "sample.py:1: Module: a search takes 3.4 ms.",
        "sample.py:9: An answer; text makes it 2x larger.",
        "sample.py:11: Each hit's text (about 40 KB for ten).",
        "sample.py:13: Bytes; 1.8 µs to count them.",
        "sample.py:19: rows, {} of them at 12 us each",
        "sample.py:23: first part, then 500 MiB",
        "sample.py:25: # ready in 250ms",
    ]


def test_what_is_not_a_measured_figure_passes() -> None:
    source = '''"""Settings and shapes, not measurements.

Times out after 30 s, 2.5 seconds between tries; 95% of queries; a 384 x 384 matrix, 128x384
embeddings, a 2×2 block; the mask 0x1F and the 0x prefix; ids as {trace_id:032x}; x2 and v3;
a 512-dimension vector; 1.5 times the rate; a gap, not a drop to 0 ms or 0.0 KB.
"""

LABEL = "p50 ms: 3 ms, 40 KB, 2x"  # the 0x7F byte
print(f"{LABEL} took 3 ms")
'''
    assert figures(source) == []


def test_each_unit_and_multiple_is_a_figure() -> None:
    said = (
        "5 ms, 5ms, 5-ms, 5 milliseconds, 1 millisecond, 6 µs, 6 μs, 6us, 2 microseconds, "
        "8 KB, 8 kB, 8 KiB, 2,000 MB, 0.5 MiB, 1 GB, 1 GiB, 2 TB, 3.4x, 2x, 2×, 0.5x"
    )
    assert [m.group() for m in FIGURE.finditer(said)] == said.split(", ")


def test_the_scanned_files_are_the_tracked_code() -> None:
    names = _tracked()
    assert "tests/checks/test_code_text.py" in names
    assert {name.split("/", 1)[0] for name in names} == set(FOLDERS)
    assert all(Path(name).suffix == ".py" for name in names)
