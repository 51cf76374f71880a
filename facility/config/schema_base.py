"""The scenario schema's base: the field helper that carries a unit (:func:`F`) and the strict
model every section derives from (:class:`StrictModel`). :mod:`facility.config.schema` and
:mod:`facility.config.operation` build on it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["F", "StrictModel", "MIN_NONZERO"]


def F(default: Any = ..., *, unit: str = "-", description: str, **kw: Any) -> Any:
    """A pydantic ``Field`` that carries its unit in the JSON schema (``json_schema_extra``)."""
    extra = kw.pop("json_schema_extra", {}) or {}
    extra["unit"] = unit
    return Field(default, description=description, json_schema_extra=extra, **kw)


#: Smallest magnitude of a nonzero number a scenario may hold: nothing in a facility is
#: 1e-300 of its unit, and subnormal values overflow the divisions downstream.
MIN_NONZERO = 1e-9


class StrictModel(BaseModel):
    """Base model: unknown keys are errors, instances are frozen, assignment is validated;
    a number must be 0 or of magnitude at least :data:`MIN_NONZERO`, and finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _not_tiny(cls, v: Any) -> Any:
        if isinstance(v, float) and v != 0.0 and abs(v) < MIN_NONZERO:
            raise ValueError(f"a nonzero value this small is not physical; use 0 (where allowed) or "
                             f"a magnitude of at least {MIN_NONZERO:g}")
        return v
