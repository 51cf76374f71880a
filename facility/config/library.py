"""Equipment and utility-spec libraries shipped as TOML data in ``models/``.

``models/gpus/<name>.toml`` describe GPU models (:class:`GpuModel`); ``models/specs/<name>.toml``
hold utility limits in the keys of :class:`facility.config.schema.SpecConfig`.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from facility.config import files
from facility.config.messages import format_validation_error
from facility.config.schema_base import F, StrictModel
from facility.errors import ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import SpecConfig

__all__ = ["MODELS_DIR", "GpuModel", "list_gpus", "list_specs", "load_gpu", "load_spec_table",
           "spec_limit_keys", "library_file", "read_library", "spec_limits_text", "cached_by_reference"]

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


def cached_by_reference(fn=None, *, maxsize: int = 64):
    """Cache a library loader ``fn(name, key=..., ...)`` by its arguments other than ``key``.

    ``key`` names the reference in the messages of a failure, and a failure is not cached: so a
    library file is read once, whichever scenario key asks for it first (an
    :func:`functools.lru_cache` over ``(name, key)`` read it again for every other key). The
    oldest entry goes past ``maxsize``. ``loader.cache_clear()`` empties the cache.
    """
    if fn is None:
        return functools.partial(cached_by_reference, maxsize=maxsize)
    sig = inspect.signature(fn)
    cache: dict = {}

    @functools.wraps(fn)
    def load(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        ref = tuple(v for k, v in bound.arguments.items() if k != "key")
        try:
            return cache[ref]
        except KeyError:
            pass
        out = fn(*args, **kwargs)
        if len(cache) >= maxsize:
            cache.pop(next(iter(cache)))
        cache[ref] = out
        return out

    load.cache_clear = cache.clear
    return load


@cached_by_reference
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
    return (f"{key} = {files.shown(name)}: {_label(sub, name)} is not a valid {model.__name__} "
            f"table:\n" + format_validation_error(exc, _label(sub, name), model))


def spec_limit_keys(data: dict) -> dict:
    """The limit keys of a spec file's table (the keys of
    :class:`~facility.config.schema.SpecConfig`), without its ``description`` and ``source``."""
    return {k: v for k, v in data.items() if k not in ("description", "source", "name")}


def load_spec_table(name: str, key: str = "spec.base") -> dict:
    """The limit keys of a library spec, without its ``description`` and ``source``."""
    return spec_limit_keys(_read("specs", name, "utility spec", key))


def spec_limits_text(spec: "SpecConfig") -> list[str]:
    """The limits of a spec, one short phrase each, with units:
    ``max_window_swing_mw <= 10 MW (window_s 5 s)``, a band's peak limit, the ride-through
    curve (and its recovery when the spec sets one). The band and window keys are shown with
    the limit they qualify, as the spec holds them (its defaults where the file sets none)."""
    out = []
    for k in ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s"):
        if getattr(spec, k) is not None:
            out.append(f"{k} <= {getattr(spec, k):g} MW/s (ramp_window_s {spec.ramp_window_s:g} s)")
    if spec.max_ramp_mw_per_min is not None:
        out.append(f"max_ramp_mw_per_min <= {spec.max_ramp_mw_per_min:g} MW/min (60 s window)")
    if spec.max_window_swing_mw is not None:
        out.append(f"max_window_swing_mw <= {spec.max_window_swing_mw:g} MW (window_s {spec.window_s:g} s)")
    band = f"{spec.band_min_hz:g}-{spec.band_max_hz:g} Hz"
    if spec.max_band_energy_frac is not None:
        out.append(f"max_band_energy_frac <= {spec.max_band_energy_frac:g} (band {band})")
    if spec.max_band_peak_mw is not None:
        out.append(f"max_band_peak_mw <= {spec.max_band_peak_mw:g} MW (band {band})")
    if spec.max_dynamic_range_mw is not None:
        out.append(f"max_dynamic_range_mw <= {spec.max_dynamic_range_mw:g} MW")
    for b in spec.bands:
        out.append(f"band {b.name}: FFT-bin peak <= {b.max_peak_mw:g} MW in {b.min_hz:g}-{b.max_hz:g} Hz")
    rt = spec.ride_through
    if rt is not None:
        curve = ", ".join(f">= {s:g} s below {v:g} pu" for v, s in zip(rt.band_max_vm_pu, rt.band_min_ride_s))
        recover = ("" if rt.recovery_frac is None else
                   f"; recover to {rt.recovery_frac:g} of the pre-event power within {rt.max_recovery_s:g} s")
        out.append(f"ride_through: stay connected {curve}{recover}")
    return out or ["(no limit)"]
