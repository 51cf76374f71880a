"""Pydantic validation errors as messages: one line per error, naming the key, its unit and
allowed range, and the file or ``--set`` item it came from.

The lowest module of :mod:`facility.config` that knows the schema: the libraries
(:mod:`facility.config.library`, :mod:`facility.config.technology`,
:mod:`facility.electrical.library`) word their errors with it, and so does
:mod:`facility.config.load`.
"""

from __future__ import annotations

import difflib
from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError

from facility.config import files

__all__ = ["format_validation_error", "closest_key"]


def _field_for(model: type[BaseModel] | None, loc: tuple) -> tuple[Any, str]:
    """The FieldInfo at a pydantic error location, and the dotted key path."""
    info = None
    keys: list[str] = []
    cur: Any = model
    for part in loc:
        keys.append(str(part))
        if isinstance(part, int) or cur is None:
            continue
        fields = getattr(cur, "model_fields", None)
        if not fields or part not in fields:
            cur = None
            info = None
            continue
        info = fields[part]
        ann = info.annotation
        cur = _inner_model(ann)
    return info, ".".join(keys)


def _model_at(model: type[BaseModel] | None, loc: tuple) -> Any:
    """The model whose keys a location's last part is one of (None where unknown)."""
    cur: Any = model
    for part in loc[:-1]:
        if isinstance(part, int) or cur is None:
            continue
        fields = getattr(cur, "model_fields", None)
        if not fields or part not in fields:
            return None
        cur = _inner_model(fields[part].annotation)
    return cur


def closest_key(key: str, known) -> str | None:
    """The known key closest to a mistyped one (:func:`difflib.get_close_matches`), or None.

    >>> closest_key("e_rated_mw", ["p_rated_mw", "e_rated_mwh", "extendable"])
    'e_rated_mwh'
    """
    m = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    return m[0] if m else None


def _inner_model(ann: Any) -> Any:
    import typing

    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in typing.get_args(ann):
        m = _inner_model(arg)
        if m is not None:
            return m
    return None


def _describe_range(info: Any) -> str:
    if info is None:
        return ""
    parts = []
    for meta in info.metadata:
        for attr, sym in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            val = getattr(meta, attr, None)
            if val is not None and isinstance(meta, (annotated_types.Gt, annotated_types.Ge,
                                                       annotated_types.Lt, annotated_types.Le,
                                                       annotated_types.Interval)):
                parts.append(f"{sym} {val:g}" if isinstance(val, (int, float)) else f"{sym} {val}")
    unit = (info.json_schema_extra or {}).get("unit", "-") if isinstance(info.json_schema_extra, dict) else "-"
    bits = []
    if unit and unit != "-":
        bits.append(f"unit: {unit}")
    if parts:
        bits.append("allowed: " + " and ".join(parts))
    return f" [{'; '.join(bits)}]" if bits else ""


def _blame(source: str, key: str, overrides: list[tuple[str, str]]) -> str:
    """``source``, or the ``--set`` item that set ``key`` (or a table around it, or a key in it)."""
    for okey, item in reversed(overrides):
        if key and (okey == key or key.startswith(okey + ".") or okey.startswith(key + ".")):
            return f"--set {files.shown(item)} (on {source})"
    return source


def format_validation_error(exc: ValidationError, source: str, model: type[BaseModel],
                            overrides: list[tuple[str, str]] | None = None) -> str:
    """One line per error: ``file: key.path = value: reason [unit: …; allowed: …]``.

    ``model`` is the model that raised (the scenario's :class:`~facility.config.schema.Scenario`,
    a library table's model): the caller passes it, so this module needs no schema.

    An error at a key a ``--set`` item set (``overrides``: :func:`facility.config.load.override_keys`) names that
    item instead of the file: ``--set jobs.0.n_gpu=8000 (on default.toml): jobs.0.n_gpu: …``.
    """
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        info, key = _field_for(model, loc)
        source_of = _blame(source, key, overrides or [])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            parent = _model_at(model, loc)
            near = closest_key(loc[-1], parent.model_fields) if parent is not None and loc else None
            lines.append(f"{source_of}: {key}: unknown key; did you mean {near!r}? (see docs/scenario-reference.md)"
                         if near else
                         f"{source_of}: {key}: unknown key (check the spelling; see docs/scenario-reference.md)")
            continue
        if err["type"] == "missing":
            lines.append(f"{source_of}: {key}: required key is missing{_describe_range(info)}")
            continue
        val = err.get("input")
        shown = "" if isinstance(val, (dict, list)) or val is None else f" = {val!r}"
        lines.append(f"{source_of}: {key or '(top level)'}{shown}: {msg}{_describe_range(info)}")
    return "\n".join(lines)
