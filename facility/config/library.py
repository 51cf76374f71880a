"""Equipment and utility-spec libraries shipped as TOML data in ``models/``.

``models/gpus/<name>.toml`` describe GPU models (:class:`GpuModel`); ``models/specs/<name>.toml``
hold utility limits in the keys of :class:`facility.config.schema.SpecConfig`.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from pydantic import ValidationError

from facility.config.schema import F, StrictModel
from facility.errors import ScenarioError

__all__ = ["MODELS_DIR", "GpuModel", "list_gpus", "list_specs", "load_gpu", "load_spec_table"]

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


class GpuModel(StrictModel):
    """A GPU model: power levels and the bounds of its power-smoothing controls."""

    name: str = F(description="Model name (file stem).")
    description: str = F("", description="Free text.")
    tdp_w: float = F(unit="W", gt=0, le=10_000, description="Thermal design power (the power ceiling, PL).")
    idle_w: float = F(unit="W", ge=0, le=10_000, description="Power of an idle GPU.")
    supports_power_smoothing: bool = F(False, description="Whether the GPU has hardware power smoothing (MPF, ramps).")
    min_floor_frac: float = F(0.0, unit="frac of TDP", ge=0, le=1, description="Lowest programmable floor.")
    max_floor_frac: float = F(0.0, unit="frac of TDP", ge=0, le=1, description="Highest programmable floor.")
    min_edp_frac: float = F(1.0, unit="frac of TDP", ge=1, le=3, description="Lowest EDP peak setting.")
    min_cap_frac: float = F(0.5, unit="frac of TDP", gt=0, le=1, description=(
        "Lowest programmable power limit (nvidia-smi -pl / Redfish PowerLimitWatts AllowableMin)."))
    gpus_per_rack: int = F(72, unit="GPU", gt=0, description="Default GPUs per rack.")
    source: str = F("", description="Where the values come from.")

    @property
    def idle_frac(self) -> float:
        """Idle power as a fraction of TDP. [frac]"""
        return self.idle_w / self.tdp_w


def _names(sub: str) -> list[str]:
    return sorted(p.stem for p in (MODELS_DIR / sub).glob("*.toml"))


def list_gpus() -> list[str]:
    """Names of the GPU models in ``models/gpus/``."""
    return _names("gpus")


def list_specs() -> list[str]:
    """Names of the utility specs in ``models/specs/``."""
    return _names("specs")


def _read(sub: str, name: str, what: str, key: str) -> dict:
    path = MODELS_DIR / sub / f"{name}.toml"
    if not path.is_file():
        raise ScenarioError(
            f"{key} = {name!r}: unknown {what}; available: {', '.join(_names(sub)) or '(none)'}"
        )
    with path.open("rb") as fh:
        return tomllib.load(fh)


@functools.lru_cache(maxsize=64)
def load_gpu(name: str, key: str = "gpu") -> GpuModel:
    """Load a GPU model by name.

    Parameters
    ----------
    name : str
        File stem in ``models/gpus/``.
    key : str
        Scenario key path used in the error message.

    Raises
    ------
    ScenarioError
        Unknown name or malformed file.
    """
    data = _read("gpus", name, "GPU model", key)
    try:
        return GpuModel(**data)
    except ValidationError as exc:  # library data error: still a clear message
        raise ScenarioError(f"models/gpus/{name}.toml is malformed: {exc}") from None


def load_spec_table(name: str, key: str = "spec.base") -> dict:
    """The limit keys of a library spec, without its ``description`` and ``source``."""
    data = _read("specs", name, "utility spec", key)
    return {k: v for k, v in data.items() if k not in ("description", "source")}
