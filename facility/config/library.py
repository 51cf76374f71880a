"""Equipment and utility-spec libraries shipped as TOML data in ``models/``.

``models/gpus/<name>.toml`` describe GPU models (:class:`GpuModel`); ``models/specs/<name>.toml``
hold utility limits in the keys of :class:`facility.config.schema.SpecConfig`.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import ValidationError

from facility.config import files
from facility.config.schema_base import F, StrictModel
from facility.errors import ScenarioError

__all__ = ["MODELS_DIR", "GpuModel", "list_gpus", "list_specs", "load_gpu", "load_spec_table",
           "library_file", "read_library"]

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


_SINGULAR = {"gpus": "gpu", "specs": "spec", "trafos": "trafo", "ups": "ups"}


def library_file(sub: str, name: str, what: str, key: str) -> Path:
    """The file a library reference points to.

    A reference is either one of the library's own names (a file stem in ``models/<sub>/``,
    looked up in the list of names, never joined into a path) or an explicit path to a TOML
    file (it has a folder separator or ends in ``.toml``; relative paths resolve against the
    scenario's folder when the scenario is loaded from a file, see
    :func:`facility.config.load.scenario_from_dict`).

    Raises
    ------
    ScenarioError
        An unknown name (the message lists the available ones), or a path that is not a
        readable file (see :func:`facility.config.files.check_file`).
    """
    if files.is_explicit_path(name):
        return files.check_file(name, key=key, what=f"{what} file", max_bytes=files.MAX_TOML_BYTES)
    names = _names(sub)
    if name not in names:
        raise ScenarioError(
            f"{key} = {files.shown(name)}: unknown {what}; available: {', '.join(names) or '(none)'} "
            f"(or the path of a .toml file of your own, e.g. ./my_{_SINGULAR.get(sub, sub)}.toml)"
        )
    return MODELS_DIR / sub / f"{name}.toml"


def read_library(sub: str, name: str, what: str, key: str) -> tuple[dict, str]:
    """The table of a library reference and how to name it in messages (``models/<sub>/<name>.toml``
    or the explicit path)."""
    path = library_file(sub, name, what, key)
    label = str(path) if files.is_explicit_path(name) else f"models/{sub}/{name}.toml"
    return files.read_toml(path, key=key, what=f"{what} file"), label


def _read(sub: str, name: str, what: str, key: str) -> dict:
    return read_library(sub, name, what, key)[0]


def _label(sub: str, name: str) -> str:
    return name if files.is_explicit_path(name) else f"models/{sub}/{name}.toml"


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
    if files.is_explicit_path(name):
        data.setdefault("name", Path(name).stem)
    try:
        return GpuModel(**data)
    except ValidationError as exc:  # library data error: still a clear message
        raise ScenarioError(_malformed(exc, "gpus", name, key, GpuModel)) from None
    except TypeError as exc:  # a top-level key that is not a string
        raise ScenarioError(f"{_label('gpus', name)} ({key}): {exc}") from None


def _malformed(exc: ValidationError, sub: str, name: str, key: str, model) -> str:
    from facility.config.messages import format_validation_error

    return (f"{key} = {files.shown(name)}: {_label(sub, name)} is not a valid {model.__name__} "
            f"table:\n" + format_validation_error(exc, _label(sub, name), model))


def load_spec_table(name: str, key: str = "spec.base") -> dict:
    """The limit keys of a library spec, without its ``description`` and ``source``."""
    data = _read("specs", name, "utility spec", key)
    return {k: v for k, v in data.items() if k not in ("description", "source", "name")}
