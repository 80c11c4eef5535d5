"""The README's settings table and the code agree, both ways: every environment variable a
settings class or a module of the shipped code (services/) reads is a row of the table,
with the default the code has, and every variable in the table is read by the code."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

import services
from devtools.runtime_check import LOCUST_ONLY
from harness.processes import REPO
from services.nfcorpus.dataset import DEFAULT_DATA_DIR
from services.retrieval.settings import REPO_ROOT, Env

PREFIXES = ("RETRIEVAL_", "MCP_", "PURPLE_", "GREEN_", "SERVER_", "OTEL_", "LOG_", "PROMETHEUS_")


# --- what the code reads ---------------------------------------------------------------------


def _settings_classes() -> list[type[BaseSettings]]:
    for module in pkgutil.walk_packages(services.__path__, "services."):
        # The locustfile imports Locust, which patches the standard library for gevent.
        if not module.name.endswith("__main__") and not module.name.startswith(LOCUST_ONLY):
            importlib.import_module(module.name)
    found: list[type[BaseSettings]] = []
    todo: list[type[Any]] = [BaseSettings]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("services."):
                found.append(sub)
    return found


def render_default(value: object) -> str:
    """A default as the README's table writes it."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Path):
        if value == DEFAULT_DATA_DIR:
            return "../shared/data/nfcorpus"
        if value.is_relative_to(REPO_ROOT):
            return str(value.relative_to(REPO_ROOT))
        if value.is_relative_to(Path.home()):
            return "~/" + str(value.relative_to(Path.home()))
        return str(value)
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 20} MB"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


def _field_default(info: FieldInfo) -> object:
    return None if info.default_factory is not None else info.default


def settings_variables() -> dict[str, set[str]]:
    """Variable -> the defaults the settings classes give it."""
    found: dict[str, set[str]] = defaultdict(set)
    for cls in _settings_classes():
        prefix = str(cls.model_config.get("env_prefix", ""))
        for name, info in cls.model_fields.items():
            group = info.annotation
            if isinstance(group, type) and issubclass(group, BaseModel):  # a group of settings
                for field in group.model_fields.values():
                    for env in (m for m in field.metadata if isinstance(m, Env)):
                        found[env.name].add(render_default(_field_default(field)))
                continue
            found[(prefix + name).upper()].add(render_default(_field_default(info)))
    return found


def _reads(tree: ast.AST) -> Iterator[tuple[str, object]]:
    """``(name, default)`` of every ``os.environ.get/setdefault``, ``os.getenv`` and
    ``os.environ[...]`` with a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = ast.unparse(node.func)
            if func in ("os.environ.get", "os.getenv", "os.environ.setdefault", "environ.get"):
                default = node.args[1] if len(node.args) > 1 else None
                value = default.value if isinstance(default, ast.Constant) else None
                yield str(node.args[0].value), value
        if (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "os.environ"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.ctx, ast.Load)
        ):
            yield str(node.slice.value), None


def module_variables() -> dict[str, set[str]]:
    """Variable -> the defaults the modules of services/ read it with."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in (REPO / "services").rglob("*.py"):
        for name, default in _reads(ast.parse(path.read_text())):
            if name.startswith(PREFIXES):
                found[name].add(render_default(default))
    return found


def code_variables() -> dict[str, set[str]]:
    found = settings_variables()
    for name, defaults in module_variables().items():
        found.setdefault(name, set()).update(defaults)
    return found


# --- what the README says ----------------------------------------------------------------------


def readme_settings(text: str) -> dict[str, str]:
    """Variable -> its default cell (the part for it when a row names several), from the table
    under "## Settings"."""
    section = text.split("\n## Settings", 1)[1].split("\n## ", 1)[0]
    table: dict[str, str] = {}
    for line in section.splitlines():
        cells = (
            [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        )
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        defaults = [d.strip() for d in cells[2].split(" / ")]
        if len(defaults) != len(names):
            defaults = [cells[2]] * len(names)
        for name, default in zip(names, defaults, strict=True):
            assert name not in table, f"{name} has two rows"
            table[name] = default
    return table


def default_matches(rendered: str, cell: str) -> bool:
    """The cell states ``rendered``: as one of its code spans, or as its text before any note."""
    spans = re.findall(r"`([^`]*)`", cell)
    plain = re.sub(r"\s*\(.*\)\s*$", "", cell).strip().strip("`")
    return rendered in spans or rendered == plain


def table_problems(code: dict[str, set[str]], table: dict[str, str]) -> list[str]:
    problems = [
        f"{v} is read by the code but not in the README's table" for v in code.keys() - table.keys()
    ]
    problems += [
        f"{v} is in the README's table but no code reads it" for v in table.keys() - code.keys()
    ]
    for name in sorted(code.keys() & table.keys()):
        for rendered in sorted(code[name]):
            if not default_matches(rendered, table[name]):
                problems.append(
                    f"{name}: the code's default is {rendered!r}, the README says {table[name]!r}"
                )
    return sorted(problems)


def test_the_readme_settings_table_and_the_code_agree() -> None:
    table = readme_settings((REPO / "README.md").read_text())
    assert table_problems(code_variables(), table) == []


def test_the_table_check_catches_each_kind_of_drift() -> None:
    code = {"MCP_PORT": {"8000"}, "MCP_HOST": {"127.0.0.1"}, "MCP_NEW": {"—"}}
    table = {"MCP_PORT": "`8080`", "MCP_HOST": "`127.0.0.1`", "MCP_GONE": "`true`"}
    assert table_problems(code, table) == [
        "MCP_GONE is in the README's table but no code reads it",
        "MCP_NEW is read by the code but not in the README's table",
        "MCP_PORT: the code's default is '8000', the README says '`8080`'",
    ]


def test_the_readers_find_settings_fields_and_module_reads() -> None:
    code = code_variables()
    assert code["MCP_PORT"] == {"8000"}  # a settings field
    assert code["RETRIEVAL_KNN_NEIGHBOURS"] == {"20"}  # a grouped field's own variable
    assert code["MCP_AUTH_TOKENS"] == {"—"}  # inherited from AuthFields
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in code  # os.environ.get in a module
    tree = ast.parse(
        "import os\nos.environ['LOG_X']\nos.getenv('LOG_Y', 'a')\nos.environ['LOG_Z'] = '1'"
    )
    assert sorted(_reads(tree)) == [("LOG_X", None), ("LOG_Y", "a")]


def test_the_table_parser_splits_rows_that_name_several_variables() -> None:
    text = (
        "\n## Settings\n\n| variable | meaning | default |\n| --- | --- | --- |\n"
        "| `MCP_HOST` / `MCP_PORT` | bind | `127.0.0.1` / `8000` |\n"
        "| `MCP_AUTH_TOKENS` | tokens | — (authentication off) |\n\n## Next\n"
    )
    assert readme_settings(text) == {
        "MCP_HOST": "`127.0.0.1`",
        "MCP_PORT": "`8000`",
        "MCP_AUTH_TOKENS": "— (authentication off)",
    }
    assert default_matches("—", "— (authentication off)")
    assert not default_matches("1", "`10`")
