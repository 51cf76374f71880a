"""Reading scenario files, applying ``--set`` overrides, and turning errors into clear messages.

:func:`load_scenario` and :func:`scenario_from_dict` give a scenario checked against the
schema and the configuration's own checks (:func:`facility.config.checks.check_scenario`), its
configuration library attached (:func:`config_library`). The layers take
:func:`facility.scenario.load_scenario`'s, which adds every domain's checks and library entries
(it builds on :func:`scenario_input` and :func:`parse_scenario`).

May import: :mod:`facility.config` and :mod:`facility.errors` only.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import tomli_w
from pydantic import ValidationError

from facility.config import files
from facility.config.checks import check_scenario
from facility.config.library import GpuModel, load_gpu, load_spec_table
from facility.config.messages import format_validation_error
from facility.config.schema import STORAGE_NAMES, Scenario
from facility.config.resolved import Library
from facility.config.technology import StorageTechnology, apply_technologies, load_technology
from facility.errors import ScenarioError

__all__ = [
    "load_scenario",
    "scenario_from_dict",
    "scenario_input",
    "parse_scenario",
    "config_library",
    "require_library",
    "read_toml",
    "apply_overrides",
    "parse_override",
    "dump_scenario_toml",
]


def read_toml(path: str | Path) -> dict:
    """Read a scenario TOML file through the shared reader (:mod:`facility.config.files`).

    Raises
    ------
    ScenarioError
        Missing file, a folder, no read permission, a path too long or holding a NUL byte, not
        UTF-8, bad TOML (line and column), nesting too deep; the message names the file.
    """
    return files.read_toml(path, what="scenario file")


def _parse_value(text: str) -> Any:
    """A TOML value (number, bool, string, array); bare words are strings."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, ValueError):   # ValueError: an integer of over 4,300 digits
        return text
    except RecursionError:
        raise ScenarioError(f"--set value {files.shown(text)}: arrays nested too deeply; a scenario "
                            "value needs at most 2 levels") from None


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``section.key=value`` into a key path and a parsed value.

    Examples
    --------
    >>> parse_override("bess.e_rated_mwh=20")
    (['bess', 'e_rated_mwh'], 20)
    """
    if "=" not in item:
        raise ScenarioError(f"--set {files.shown(item)}: expected KEY=VALUE, e.g. bess.e_rated_mwh=20")
    key, _, value = item.partition("=")
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ScenarioError(f"--set {files.shown(item)}: empty key")
    return path, _parse_value(value.strip())


def _set_path(data: dict, path: list[str], value: Any, raw: str) -> None:
    node: Any = data
    for i, part in enumerate(path[:-1]):
        if isinstance(node, list):
            node = node[_list_index(node, part, path[: i + 1], raw)]
            continue
        if part == "spec" and isinstance(node.get("spec"), str):
            node["spec"] = {"base": node["spec"]}
        if part not in node:
            node[part] = {}
        node = node[part]
        if not isinstance(node, (dict, list)):
            raise ScenarioError(f"--set {raw}: {'.'.join(path[: i + 1])} is not a section")
    last = path[-1]
    if isinstance(node, list):
        node[_list_index(node, last, path, raw)] = value
    else:
        node[last] = value


def _list_index(node: list, part: str, path: list[str], raw: str) -> int:
    if part.lstrip("-").isdigit():
        idx = int(part)
        if not -len(node) <= idx < len(node):
            raise ScenarioError(f"--set {raw}: index {idx} out of range (there are {len(node)})")
        return idx
    for i, item in enumerate(node):
        if isinstance(item, dict) and item.get("name") == part:
            return i
    names = [str(it.get("name")) for it in node if isinstance(it, dict)]
    raise ScenarioError(
        f"--set {raw}: no entry named {part!r} in {'.'.join(path[:-1]) or 'list'}; "
        f"use an index 0..{len(node) - 1} or one of: {', '.join(names)}"
    )


def apply_overrides(data: dict, overrides: Iterable[str] | None) -> dict:
    """Return a copy of the raw scenario dict with ``section.key=value`` overrides applied.

    List entries (``[[jobs]]``) are addressed by index (``jobs.0.n_gpus=8``) or by name
    (``jobs.llm.n_gpus=8``).
    """
    files.check_depth(data, source="scenario")
    out = copy.deepcopy(data)
    for item in overrides or ():
        path, value = parse_override(item)
        files.check_depth(value, source=f"--set {files.shown(item)}", max_depth=files.MAX_DEPTH - len(path))
        _set_path(out, path, value, item)
    return out


def _resolve_spec(data: dict, source: str) -> dict:
    spec = data.get("spec")
    if isinstance(spec, str):
        spec = {"base": spec}
    if isinstance(spec, dict) and spec.get("base"):
        base = load_spec_table(str(spec["base"]), key=f"{source}: spec.base")
        merged = dict(base)
        merged.update(spec)
        data = dict(data)
        data["spec"] = merged
    return data


def override_keys(data: dict, overrides: Iterable[str] | None) -> list[tuple[str, str]]:
    """``(dotted key, item)`` of each ``--set`` item, list entries named by their index
    (``jobs.llm.n_gpus=8`` -> ``jobs.0.n_gpus``); ``data`` is the table before the overrides."""
    out = []
    for item in overrides or ():
        try:
            path, _ = parse_override(item)
        except ScenarioError:
            continue
        node: Any = data
        parts = []
        for part in path:
            if isinstance(node, list):
                try:
                    idx = _list_index(node, part, path, item)
                except ScenarioError:
                    parts.append(part)
                    node = None
                    continue
                parts.append(str(idx))
                node = node[idx] if idx < len(node) else None
            else:
                parts.append(part)
                node = node.get(part) if isinstance(node, dict) else None
        out.append((".".join(parts), item))
    return out


def config_library(scenario: Scenario, technologies: dict[str, StorageTechnology] | None = None,
                   strict: bool = True) -> Library:
    """The entries of the configuration's own libraries a scenario names: its jobs' GPU models
    and its storage technologies, each read once (:mod:`facility.config.resolved`).

    Parameters
    ----------
    scenario : Scenario
    technologies : dict, optional
        Technologies already read, by reference (what :func:`apply_technologies` returned).
    strict : bool
        Raise on a GPU model that cannot be read; else leave it out (the checks report it:
        :func:`facility.config.checks.check_jobs`).
    """
    gpus: dict[str, GpuModel] = {}
    for i, job in enumerate(scenario.jobs):
        if job.gpu not in gpus:
            try:
                gpus[job.gpu] = load_gpu(job.gpu, key=f"jobs[{i}].gpu")
            except ScenarioError:
                if strict:
                    raise
    techs: dict[str, StorageTechnology] = {}
    known = technologies or {}
    for sec, cfg in ((n, getattr(scenario, n)) for n in STORAGE_NAMES):
        for ref in ([cfg.technology] if cfg.technology else []) + list(cfg.technologies or []):
            if ref not in techs:
                techs[ref] = known[ref] if ref in known else load_technology(ref, key=f"{sec}.technology")
    return Library(gpus=gpus, technologies=techs)


def require_library(scenario: Scenario, lib: Library | None, source: str = "<scenario>") -> Library:
    """``lib`` (the scenario's library, or None) with every configuration entry the scenario
    names, or the :class:`ScenarioError` of the first that cannot be read (prefixed with
    ``source``)."""
    if lib is not None and all(job.gpu in lib.gpus for job in scenario.jobs):
        return lib
    try:
        full = config_library(scenario, technologies=dict(lib.technologies) if lib else None)
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    return full if lib is None else replace(lib, gpus=full.gpus)


def parse_scenario(data: dict, source: str = "<scenario>", base_dir: Path | None = None,
                   overrides: list[tuple[str, str]] | None = None) -> Scenario:
    """A raw scenario dict validated against the schema (no physics checks), its configuration
    library attached, leaving out a GPU model that cannot be read (the checks report it; see
    :func:`scenario_from_dict` for the parameters)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a table of keys, got {type(data).__name__}")
    try:
        files.check_depth(data, source=source)
        if base_dir is not None:
            data = _absolute_paths(data, Path(base_dir))
        data = _resolve_spec(data, source)
        data, provenance, techs = apply_technologies(data, source)
        try:
            scenario = Scenario(**data)
        except ValidationError as exc:
            raise ScenarioError(format_validation_error(exc, source, Scenario, overrides=overrides)) from None
        except TypeError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
        for sec, notes in provenance.items():
            getattr(scenario, sec)._defaults_from = notes
        try:
            scenario._library = config_library(scenario, technologies=techs, strict=False)
        except ScenarioError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
    except RecursionError:
        raise _too_deep(source) from None
    return scenario


def _too_deep(source: str) -> ScenarioError:
    return ScenarioError(f"{source}: the scenario is nested too deeply to validate; a scenario "
                         "needs at most 4 levels of tables and arrays")


def scenario_from_dict(data: dict, source: str = "<scenario>", base_dir: Path | None = None,
                       check: bool = True, overrides: list[tuple[str, str]] | None = None) -> Scenario:
    """Validate a raw scenario dict (schema, then the configuration's physics checks).

    The layers take :func:`facility.scenario.scenario_from_dict`'s (every domain's checks
    too, and the domain library entries).

    Parameters
    ----------
    data : dict
        Raw scenario (as read from TOML, overrides applied).
    source : str
        Name of the file for messages.
    base_dir : pathlib.Path, optional
        Folder that relative ``trace_file`` paths resolve against.
    check : bool
        Run the physics checks of :mod:`facility.config.checks`.
    overrides : list of (str, str), optional
        The ``--set`` items applied to ``data`` (:func:`override_keys`): a schema error at a
        key they set names the item.
    """
    scenario = parse_scenario(data, source=source, base_dir=base_dir, overrides=overrides)
    try:
        if check:
            check_scenario(scenario, source)
        scenario._library = require_library(scenario, scenario._library, source)
    except RecursionError:
        raise _too_deep(source) from None
    return scenario


def _absolute(value: Any, base_dir: Path, explicit_only: bool) -> Any:
    """``value`` made absolute against ``base_dir`` when it is a relative path (a pure string
    operation: no file system call, so a NUL byte or an overlong name is left to the reader
    to report with its key)."""
    if not isinstance(value, str) or not value or (explicit_only and not files.is_explicit_path(value)):
        return value
    if "\x00" in value or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(str(base_dir), value))


def _absolute_paths(data: dict, base_dir: Path) -> dict:
    """Relative file paths of a scenario resolved against its folder: ``jobs.*.trace_file``,
    ``grid_events.*.trace_file`` and
    library references given as paths (``jobs.*.gpu``, ``grid.trafo_type``,
    ``grid.lv_trafo_type``, ``grid.ups_type``, ``spec`` / ``spec.base``,
    ``grid_impact.mode_set``)."""
    data = dict(data)
    jobs = data.get("jobs")
    if isinstance(jobs, list):
        new_jobs = []
        for job in jobs:
            if isinstance(job, dict):
                job = dict(job)
                if "trace_file" in job:
                    job["trace_file"] = _absolute(job["trace_file"], base_dir, explicit_only=False)
                if "gpu" in job:
                    job["gpu"] = _absolute(job["gpu"], base_dir, explicit_only=True)
            new_jobs.append(job)
        data["jobs"] = new_jobs
    grid = data.get("grid")
    if isinstance(grid, dict):
        data["grid"] = {k: (_absolute(v, base_dir, explicit_only=True)
                            if k in ("trafo_type", "lv_trafo_type", "ups_type") else v)
                        for k, v in grid.items()}
    gi = data.get("grid_impact")
    if isinstance(gi, dict) and "mode_set" in gi:
        data["grid_impact"] = dict(gi, mode_set=_absolute(gi["mode_set"], base_dir, explicit_only=True))
    events = data.get("grid_events")
    if isinstance(events, list):
        data["grid_events"] = [dict(ev, trace_file=_absolute(ev["trace_file"], base_dir, explicit_only=False))
                               if isinstance(ev, dict) and "trace_file" in ev else ev for ev in events]
    for sec in STORAGE_NAMES:
        st = data.get(sec)
        if isinstance(st, dict) and ("technology" in st or "technologies" in st):
            st = dict(st)
            if "technology" in st:
                st["technology"] = _absolute(st["technology"], base_dir, explicit_only=True)
            if isinstance(st.get("technologies"), list):
                st["technologies"] = [_absolute(t, base_dir, explicit_only=True) for t in st["technologies"]]
            data[sec] = st
    spec = data.get("spec")
    if isinstance(spec, str):
        data["spec"] = _absolute(spec, base_dir, explicit_only=True)
    elif isinstance(spec, dict) and "base" in spec:
        data["spec"] = dict(spec, base=_absolute(spec["base"], base_dir, explicit_only=True))
    return data


def scenario_input(path: str | Path, overrides: Iterable[str] | None = None) -> tuple[dict, dict]:
    """A scenario file read and overridden: ``(data, options)``, ``options`` the keywords
    (``source``, ``base_dir``, ``overrides``) of :func:`parse_scenario` and
    :func:`scenario_from_dict`.

    Raises
    ------
    ScenarioError
        Missing file, bad TOML, a bad ``--set`` item.
    """
    text = files.check_path_text(path, hint="; give the path of a scenario TOML file")
    raw = read_toml(text)
    data = apply_overrides(raw, overrides)
    base_dir = Path(os.path.abspath(os.path.dirname(text) or "."))
    return data, {"source": str(path), "base_dir": base_dir, "overrides": override_keys(raw, overrides)}


def load_scenario(path: str | Path, overrides: Iterable[str] | None = None, check: bool = True) -> Scenario:
    """Load, override and validate a scenario file (the configuration's checks; the layers take
    :func:`facility.scenario.load_scenario`'s).

    Parameters
    ----------
    path : str or pathlib.Path
        TOML scenario file.
    overrides : iterable of str, optional
        ``section.key=value`` items applied before validation.
    check : bool
        Run the physics checks too.

    Raises
    ------
    ScenarioError
        Missing file, bad TOML, schema or physics error; the message names the file, the key
        path, the unit and the allowed range.
    """
    data, options = scenario_input(path, overrides)
    return scenario_from_dict(data, check=check, **options)


def _drop_none(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_drop_none(v) for v in obj]
    return obj


def dump_scenario_toml(scenario: Scenario) -> str:
    """The fully resolved scenario (defaults filled in, library spec merged) as TOML text.

    A storage section whose keys came from its ``technology`` carries a comment under its
    header naming them and where they came from (the values themselves are written as keys,
    so the file loads back to the same scenario)."""
    text = tomli_w.dumps(_drop_none(scenario.model_dump(mode="json")))
    for sec in STORAGE_NAMES:
        notes = getattr(getattr(scenario, sec), "_defaults_from", None) or {}
        if not notes:
            continue
        by_source: dict[str, list[str]] = {}
        for k, src in notes.items():
            by_source.setdefault(src, []).append(k)
        comment = "".join(f"# {src}: {', '.join(keys)}\n" for src, keys in by_source.items())
        text = text.replace(f"[{sec}]\n", f"[{sec}]\n{comment}", 1)
    return text
