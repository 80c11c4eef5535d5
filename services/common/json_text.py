"""What makes decoded JSON unacceptable to the libraries downstream: depth and lone surrogates.

The JSON decoder overflows its stack on deep nesting, and protobuf and UTF-8 encoders raise on
a lone UTF-16 surrogate, which JSON text may escape. Both are refused at the door
(:mod:`services.common.guard`) and in the purple agent's reading of a query.
"""

from __future__ import annotations

from typing import Any


def json_problem(value: Any, max_depth: int) -> str | None:
    """What makes a decoded JSON value unacceptable (too deep, lone surrogates), or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return f"JSON nested deeper than {max_depth} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str) and has_lone_surrogate(item):
            return f"text {LONE_SURROGATE}"
    return None


def plainly_acceptable(text: str, max_depth: int) -> bool:
    r"""Whether JSON ``text`` cannot decode to a value :func:`json_problem` refuses, by its text.

    Each level of nesting opens a bracket, so a text with at most ``max_depth`` of them (counted
    inside strings too) is not too deep; a lone surrogate needs a ``\u`` escape or a
    non-ASCII character. Most requests pass this scan in C and skip walking the decoded value.
    """
    return text.isascii() and "\\u" not in text and text.count("{") + text.count("[") <= max_depth


LONE_SURROGATE = "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate JSON let through: no UTF-8 encoder can write it."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
