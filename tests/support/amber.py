"""What Amber (the AgentBeats deployer) requires of a component manifest and of a scenario.

Written from Amber's manifest format as AgentBeats documents it (``manifest_version`` 0.1.0, a
JSON Schema of the config, the program, slots, provides, exports) and from the AgentBeats
gateway's manifest at tag v0.3, whose interface :data:`GATEWAY_V03` states: a scenario that
passes these checks names only what exists, binds what must be bound, and configures each
component as its schema allows. At run time Amber builds the scenario's own config from
``AMBER_CONFIG_*`` variables, one per leaf of its ``config_schema``, and fills each component's
``${config.X}`` from it (:func:`root_config`, :func:`component_config`; Amber's
compiler/config/src/env.rs and template.rs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs

#: Where leaderboard scenarios take the gateway's manifest from.
GATEWAY_MANIFEST_URL = (
    "https://raw.githubusercontent.com/RDI-Foundation/agentbeats-gateway/refs/tags/v0.3/"
    "amber-manifest.json5"
)
#: The AgentBeats gateway's interface at v0.3: the green agent and up to five participants are
#: bound to its slots; it provides its reverse proxy and the results endpoint.
GATEWAY_V03: dict[str, Any] = {
    "config_schema": {
        "type": "object",
        "properties": {
            "assessment_config": {"type": "object"},
            "participant_roles": {"type": "object"},
        },
        "required": ["assessment_config", "participant_roles"],
    },
    "slots": {
        "green": {"kind": "a2a"},
        "green_mcp": {"kind": "mcp", "optional": True},
        "purple1": {"kind": "a2a"},
        **{f"purple{n}": {"kind": "a2a", "optional": True} for n in range(2, 6)},
    },
    "provides": {
        "proxy": {"kind": "a2a", "endpoint": "proxy"},
        "results": {"kind": "http", "endpoint": "results"},
    },
}


def amber_problems(manifest: dict[str, Any]) -> list[str]:
    """What Amber would refuse in ``manifest``; empty when nothing."""
    problems = []
    if manifest.get("manifest_version") != "0.1.0":
        problems.append(f"manifest_version {manifest.get('manifest_version')!r} is not 0.1.0")
    schema = manifest.get("config_schema", {})
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        problems.append(f"config_schema is no JSON Schema: {e.message}")
    if schema.get("type") != "object":
        problems.append("config_schema is not an object schema")
    program = manifest.get("program", {})
    missing = {"image", "entrypoint", "network"} - set(program)
    if missing:
        return [*problems, f"program lacks {sorted(missing)}"]
    env = program.get("env", {})
    problems += [f"env {k} is not a string" for k, v in env.items() if not isinstance(v, str)]
    listed = program["network"]["endpoints"]
    endpoints = {e["name"]: e["port"] for e in listed}
    if len(endpoints) != len(listed):
        problems.append("two endpoints share a name")
    for name, provided in manifest.get("provides", {}).items():
        if provided.get("kind") != "a2a" or provided.get("endpoint") not in endpoints:
            problems.append(f"provides {name}: not an a2a capability on a declared endpoint")
    for export in set(manifest.get("exports", {}).values()) - set(manifest.get("provides", {})):
        problems.append(f"exports {export}, which it does not provide")
    slots = set(manifest.get("slots", {}))
    for value in [program["entrypoint"], *(v for v in env.values() if isinstance(v, str))]:
        for slot in re.findall(r"\$\{slots\.(\w+)", value):
            if slot not in slots:
                problems.append(f"{value} names an undeclared slot")
        for key in re.findall(r"\$\{config\.(\w+)", value):
            if key not in schema.get("properties", {}):
                problems.append(f"{value} names an undeclared config key")
    return problems


def _reference(value: str) -> tuple[str, str] | None:
    """``#component.name`` as its two parts (None when malformed)."""
    match = re.fullmatch(r"#(\w+)\.(\w+)", value)
    return (match.group(1), match.group(2)) if match else None


def _configured(value: Any, declared: Mapping[str, Any], problems: list[str], where: str) -> Any:
    """``value`` with each ``${config.X}`` checked against the scenario's own config keys."""
    if isinstance(value, dict):
        return {k: _configured(v, declared, problems, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_configured(v, declared, problems, where) for v in value]
    if isinstance(value, str):
        for key in re.findall(r"\$\{config\.(\w+)\}", value):
            if key not in declared:
                problems.append(f"{where}: {value} names an undeclared config key")
    return value


def scenario_problems(
    scenario: dict[str, Any], manifest_of: Callable[[str], dict[str, Any] | None]
) -> list[str]:
    """What Amber would refuse in a leaderboard ``scenario``; empty when nothing.

    ``manifest_of`` reads a component's manifest from its reference (None: it does not exist).
    """
    problems: list[str] = []
    if scenario.get("manifest_version") != "0.1.0":
        problems.append(f"manifest_version {scenario.get('manifest_version')!r} is not 0.1.0")
    declared = scenario.get("config_schema", {}).get("properties", {})
    manifests: dict[str, dict[str, Any]] = {}
    for name, component in scenario.get("components", {}).items():
        manifest = manifest_of(component.get("manifest", ""))
        if manifest is None:
            problems.append(f"component {name}: no manifest at {component.get('manifest')!r}")
            continue
        manifests[name] = manifest
        config = _configured(component.get("config", {}), declared, problems, name)
        if "${" not in str(config):  # a value Amber fills in later cannot be checked here
            for error in jsonschema.Draft202012Validator(manifest["config_schema"]).iter_errors(
                config
            ):
                problems.append(f"component {name}: config {error.message}")
    bound: set[tuple[str, str]] = set()
    for binding in scenario.get("bindings", []):
        to, source = _reference(binding.get("to", "")), _reference(binding.get("from", ""))
        if to is None or source is None:
            problems.append(f"binding {binding}: not #component.name on both sides")
            continue
        slot = manifests.get(to[0], {}).get("slots", {}).get(to[1])
        provided = manifests.get(source[0], {}).get("provides", {}).get(source[1])
        if slot is None:
            problems.append(f"binding to {binding['to']}: no such slot")
        if provided is None:
            problems.append(f"binding from {binding['from']}: no such capability")
        if slot and provided and slot["kind"] != provided["kind"]:
            problems.append(
                f"binding {binding['to']}: a {provided['kind']} capability in a {slot['kind']} slot"
            )
        if to in bound:
            problems.append(f"binding to {binding['to']}: bound twice")
        bound.add(to)
    for name, manifest in manifests.items():
        for slot, spec in manifest.get("slots", {}).items():
            if not spec.get("optional") and (name, slot) not in bound:
                problems.append(f"slot {name}.{slot} is not bound")
    for export, value in scenario.get("exports", {}).items():
        source = _reference(value)
        if source is None or source[1] not in manifests.get(source[0], {}).get("provides", {}):
            problems.append(f"exports {export} = {value}: no such capability")
    ids = scenario.get("metadata", {}).get("agentbeats_ids", {})
    agents = {n for n, m in manifests.items() if m is not GATEWAY_V03}
    if set(ids) != agents:
        problems.append(f"agentbeats_ids name {sorted(ids)}, the agents are {sorted(agents)}")
    return problems


#: Where Amber reads the scenario's config at run time (amber compiler/config/src/env.rs).
CONFIG_ENV_PREFIX = "AMBER_CONFIG_"
_CONFIG_KEY = re.compile(r"[a-z][a-z0-9_]*")
_MISSING = object()


def config_leaves(schema: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted paths of ``schema``'s leaves: each property that is no object of properties."""
    leaves = []
    for key, value in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        if "properties" in value:
            leaves += config_leaves(value, f"{path}.")
        else:
            leaves.append(path)
    return leaves


def env_var_for_path(path: str) -> str:
    """Amber's variable for the config path: ``api.key`` is ``AMBER_CONFIG_API__KEY``."""
    segments = path.split(".")
    for segment in segments:
        if not _CONFIG_KEY.fullmatch(segment) or "__" in segment:
            raise ValueError(f"invalid config path segment {segment!r} in {path!r}")
    return CONFIG_ENV_PREFIX + "__".join(s.upper() for s in segments)


def root_config(schema: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The scenario's config as Amber builds it from ``env`` (its ``build_root_config``).

    Every ``AMBER_CONFIG_*`` variable must be a leaf of ``schema``; an empty one is left out;
    a value is the JSON it parses as when the leaf's schema takes that, else the string; the
    whole must fit ``schema`` (ValueError otherwise).
    """
    leaves = set(config_leaves(schema))
    config: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(CONFIG_ENV_PREFIX):
            continue
        path = ".".join(s.lower() for s in name.removeprefix(CONFIG_ENV_PREFIX).split("__"))
        if path not in leaves:
            raise ValueError(f"{name} does not correspond to a leaf schema path")
        if not raw:
            continue
        *parents, leaf = path.split(".")
        node, leaf_schema = config, schema
        for parent in parents:
            node = node.setdefault(parent, {})
            leaf_schema = leaf_schema["properties"][parent]
        leaf_schema = leaf_schema["properties"][leaf]
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = _MISSING
        valid = parsed is not _MISSING and jsonschema.Draft202012Validator(leaf_schema).is_valid(
            parsed
        )
        node[leaf] = parsed if valid else raw
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(config)]
    if errors:
        raise ValueError("; ".join(errors))
    return config


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return _MISSING
        node = node[key]
    return node


def component_config(template: Any, config: Mapping[str, Any]) -> Any:
    """A component's ``config`` with each ``${config.X}`` filled from the scenario's ``config``.

    A string that is one reference becomes the value itself; a key whose value is absent from
    ``config`` is left out, as Amber leaves out what an optional root key does not hold.
    """
    if isinstance(template, dict):
        filled = {k: component_config(v, config) for k, v in template.items()}
        return {k: v for k, v in filled.items() if v is not _MISSING}
    if isinstance(template, list):
        return [component_config(v, config) for v in template]
    if isinstance(template, str):
        whole = re.fullmatch(r"\$\{config\.([\w.]+)\}", template)
        if whole:
            return _lookup(config, whole.group(1))
        parts = re.split(r"\$\{config\.([\w.]+)\}", template)
        for index in range(1, len(parts), 2):
            value = _lookup(config, parts[index])
            if value is _MISSING:
                return _MISSING
            parts[index] = value if isinstance(value, str) else json.dumps(value)
        return "".join(parts)
    return template
