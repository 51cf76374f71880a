"""The scenario schema's base: the field helper that carries a unit (:func:`F`) and the strict
model every section derives from (:class:`StrictModel`). :mod:`facility.config.schema` and
:mod:`facility.config.operation` build on it.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = ["F", "StrictModel", "MIN_NONZERO", "not_a_number"]


def F(default: Any = ..., *, unit: str = "-", description: str, **kw: Any) -> Any:
    """A pydantic ``Field`` that carries its unit in the JSON schema (``json_schema_extra``)."""
    extra = kw.pop("json_schema_extra", {}) or {}
    extra["unit"] = unit
    return Field(default, description=description, json_schema_extra=extra, **kw)


#: Smallest magnitude of a nonzero number a scenario may hold: nothing in a facility is
#: 1e-300 of its unit, and subnormal values overflow the divisions downstream.
MIN_NONZERO = 1e-9


def _strip(ann: Any) -> Any:
    while typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    return ann


def _number_only(ann: Any) -> bool:
    """Whether a field of this annotation holds a number and nothing else (``float``, ``int``,
    ``float | None``): a string or a boolean there is a mistake, not a spelling of a number."""
    ann = _strip(ann)
    if ann in (int, float):
        return True
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        opts = [_strip(a) for a in typing.get_args(ann) if a is not type(None)]
        return bool(opts) and all(a in (int, float) for a in opts)
    return False


def not_a_number(ann: Any, value: Any, path: str = "") -> str | None:
    """Why ``value`` cannot stand where ``ann`` wants a number (None: it may): a boolean
    (``true`` is not 1.0 MW) or a string (``"2.0"`` is text, not a rating), also as the value of
    a table of numbers (``unit_p_rated_mw = {supercap = "2.0"}``) or an item of an array of them."""
    ann = _strip(ann)
    if _number_only(ann):
        if isinstance(value, bool):
            return f"{path}{'true' if value else 'false'} is a boolean, not a valid number"
        if isinstance(value, str):
            try:
                float(value)
                hint = ": write it without quotes"
            except ValueError:
                hint = ""
            return f"{path}{value!r} is a string, not a valid number{hint}"
        return None
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        opts = [a for a in typing.get_args(ann) if a is not type(None)]
        return not_a_number(opts[0], value, path) if len(opts) == 1 else None
    args = typing.get_args(ann)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        for k, v in value.items():
            why = not_a_number(args[1], v, f"{k} = ")
            if why:
                return why
    if origin in (list, tuple) and isinstance(value, list) and args and (origin is list or args[-1] is Ellipsis):
        for i, v in enumerate(value):
            why = not_a_number(args[0], v, f"item {i} = ")
            if why:
                return why
    return None


class StrictModel(BaseModel):
    """Base model: unknown keys are errors, instances are frozen, assignment is validated;
    a number must be 0 or of magnitude at least :data:`MIN_NONZERO`, and finite, and is
    written as a number (a boolean or a string where a number belongs is refused:
    :func:`not_a_number`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _a_number_is_a_number(cls, v: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name) if info.field_name else None
        if field is not None and v is not None:
            why = not_a_number(field.annotation, v)
            if why:
                raise ValueError(why)
        return v

    @field_validator("*", mode="after")
    @classmethod
    def _not_tiny(cls, v: Any) -> Any:
        if isinstance(v, float) and v != 0.0 and abs(v) < MIN_NONZERO:
            raise ValueError(f"a nonzero value this small is not physical; use 0 (where allowed) or "
                             f"a magnitude of at least {MIN_NONZERO:g}")
        return v
