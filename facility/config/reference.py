"""Generate ``docs/scenario-reference.md`` from the pydantic schema (single source of truth).

Run ``python -m facility.config.reference`` to regenerate; ``tests/config/test_reference.py``
fails when the checked-in file is stale.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from facility.config.schema import JobFailuresConfig, RideThroughSpec, Scenario, SpecBand

__all__ = ["render_reference", "REFERENCE_PATH", "main"]

REFERENCE_PATH = Path(__file__).resolve().parents[2] / "docs" / "scenario-reference.md"


def _type_name(ann) -> str:
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in typing.get_args(ann))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(a) for a in typing.get_args(ann))
    if origin is list:
        return f"list of {_type_name(typing.get_args(ann)[0])}"
    if ann is type(None):
        return "none"
    return getattr(ann, "__name__", str(ann))


def _range(info) -> str:
    bits = []
    for meta in info.metadata:
        for attr, sym in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            v = getattr(meta, attr, None)
            if v is not None:
                bits.append(f"{sym} {v:g}" if isinstance(v, (int, float)) else f"{sym} {v}")
    return ", ".join(bits)


def _default(info) -> str:
    d = info.default
    if d is PydanticUndefined:
        return "required"
    if isinstance(d, BaseModel):
        return "(table)"
    if d is None:
        return "none"
    if isinstance(d, list):
        return f"`{d!r}`" if d and all(isinstance(v, (str, int, float)) for v in d) else "[]"
    return f"`{d!r}`" if isinstance(d, str) else f"`{d}`"


def _rows(model: type[BaseModel]) -> list[str]:
    out = ["| key | type | unit | default | range | description |", "|---|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        unit = (info.json_schema_extra or {}).get("unit", "-") if isinstance(info.json_schema_extra, dict) else "-"
        desc = (info.description or "").replace("|", "\\|")
        out.append(f"| `{name}` | {_type_name(info.annotation)} | {unit} | {_default(info)} | {_range(info)} | {desc} |")
    return out


def render_reference() -> str:
    """Markdown reference of every scenario key, generated from :class:`Scenario`."""
    lines = ["# Scenario reference", "",
             "Generated from `facility/config/schema.py` (its operation sections in `operation.py`) by "
             "`python -m facility.config.reference`; "
             "do not edit by hand. Unknown keys are errors. A number is written as a number: a string "
             "(`\"2.0\"`) or a boolean (`true`) where a number belongs (a key of type float or int, "
             "or a value of a table or array of them such as `unit_p_rated_mw`) is refused, naming "
             "the key and the value. Units are in the key names and in the unit "
             "column; GPU power fractions are fractions of the GPU's TDP.", "",
             "## Top level", ""]
    top = [n for n, i in Scenario.model_fields.items()
           if not (isinstance(i.default, BaseModel) or n in ("jobs", "grid_events"))]
    lines += _rows(type("Top", (BaseModel,), {"__annotations__": {}}))[:2]
    for name in top:
        info = Scenario.model_fields[name]
        unit = (info.json_schema_extra or {}).get("unit", "-")
        lines.append(f"| `{name}` | {_type_name(info.annotation)} | {unit} | {_default(info)} | {_range(info)} | "
                     f"{info.description} |")
    sections = [(n, i) for n, i in Scenario.model_fields.items() if n not in top]
    for name, info in sections:
        model = info.annotation
        if name in ("jobs", "grid_events"):
            model = typing.get_args(model)[0]
            header = f"## `[[{name}]]`"
        else:
            model = next((a for a in (model, *typing.get_args(model)) if isinstance(a, type) and issubclass(a, BaseModel)))
            header = f"## `[{name}]`"
        lines += ["", header, "", (model.__doc__ or "").strip().splitlines()[0], ""]
        if name == "spec":
            lines += ["A scenario may also write `spec = \"<name>\"` to use a library spec from "
                      "`models/specs/` unchanged, or `base = \"<name>\"` inside `[spec]` to start from it "
                      "and override single limits.", ""]
        lines += _rows(model)
    lines += ["", "## `[jobs.failures]`", "", " ".join((JobFailuresConfig.__doc__ or "").split()),
              ""] + _rows(JobFailuresConfig)
    lines += ["", "## `[[spec.bands]]`", "", (SpecBand.__doc__ or "").strip(), ""] + _rows(SpecBand)
    lines += ["", "## `[spec.ride_through]`", "", (RideThroughSpec.__doc__ or "").strip(), ""] + _rows(RideThroughSpec)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference file (or print it with ``--stdout``)."""
    text = render_reference()
    if argv and "--stdout" in argv:
        sys.stdout.write(text)
    else:
        REFERENCE_PATH.write_text(text)
        print(f"wrote {REFERENCE_PATH}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
