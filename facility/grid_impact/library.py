"""The bundled grid-side models in ``models/grid_impact/`` (shafts and mode sets).

A file with ``masses`` is a shaft (:class:`~facility.grid_impact.shaft.ShaftModel`), one with
``[[modes]]`` or ``[smib]`` a mode set (:class:`~facility.grid_impact.modal.ModeSet`). Every
number's source is stated in its file.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import numpy as np

from facility.config.files import is_explicit_path
from facility.errors import ScenarioError
from facility.grid_impact.modal import Mode, ModeSet, Rest, calibrate_gain, hz_gain, pair_response, smib_mode
from facility.grid_impact.shaft import ShaftModel

__all__ = ["GRID_IMPACT_DIR", "list_shafts", "list_mode_sets", "load_shaft", "load_mode_set",
           "load_section_models", "mode_set_from_dict", "read_mode_set_file"]

GRID_IMPACT_DIR = Path(__file__).resolve().parent.parent / "models" / "grid_impact"


@functools.lru_cache(maxsize=None)
def _read(name: str) -> dict:
    p = GRID_IMPACT_DIR / f"{name}.toml"
    with open(p, "rb") as fh:
        return tomllib.load(fh)


def _names(kind: str) -> list[str]:
    out = []
    for p in sorted(GRID_IMPACT_DIR.glob("*.toml")):
        d = _read(p.stem)
        if (kind == "shaft") == ("masses" in d):
            out.append(p.stem)
    return out


def list_shafts() -> list[str]:
    """Names of the bundled shaft models."""
    return _names("shaft")


def list_mode_sets() -> list[str]:
    """Names of the bundled mode sets."""
    return _names("modes")


def _check(name: str, kind: str, field: str) -> dict:
    names = _names(kind)
    if name not in names:
        raise ScenarioError(f"grid_impact.{field} = {name!r} is not a bundled "
                            f"{'shaft model' if kind == 'shaft' else 'mode set'}; choose one of {', '.join(names)}")
    return _read(name)


def load_shaft(name: str, damping_ratio: float | None = None) -> ShaftModel:
    """A bundled shaft (floating: :meth:`ShaftModel.connect` connects it), with its modal
    damping ratio or ``damping_ratio`` [frac] instead."""
    d = _check(name, "shaft", "shaft_model")
    return ShaftModel(tuple(d["masses"]), np.array(d["h_s"]), np.array(d["k_pu_per_rad"]),
                      np.array(d["d_pu"]),
                      float(d["mech_damping_ratio"] if damping_ratio is None else damping_ratio),
                      d["masses"].index(d["generator"]), float(d["f0_hz"]), float(d["s_rated_mva"]), name,
                      turbine_torque_frac=(np.array(d["turbine_torque_frac"], dtype=float)
                                           if "turbine_torque_frac" in d else None),
                      fatigue=dict(d["fatigue"]) if "fatigue" in d else None)


def load_mode_set(name: str) -> ModeSet:
    """A bundled mode set, or a mode set file given by its path (a name with a folder separator
    or ending in ``.toml``, e.g. what ``facility grid-modes`` writes); gains resolved
    (calibrated or from the observed machine)."""
    if is_explicit_path(name):
        return read_mode_set_file(name)
    return _mode_set_from_table(_check(name, "modes", "mode_set"), name)


def load_section_models(cfg) -> tuple[ShaftModel, ModeSet]:
    """The shaft (with the section's ``mech_damping_ratio``) and the mode set a
    :class:`~facility.config.grid_impact.GridImpactConfig` names, looked up by name: for a
    section built in code without a scenario (a resolved scenario carries both on
    ``scenario.library``)."""
    return load_shaft(cfg.shaft_model, cfg.mech_damping_ratio), load_mode_set(cfg.mode_set)


def _mode_set_from_table(d: dict, name: str) -> ModeSet:
    if "derived" in d:
        return mode_set_from_dict(d, name)
    f0, h, s = float(d["f0_hz"]), float(d["observed_h_s"]), float(d["observed_s_mva"])
    if "smib" in d:
        m = d["smib"]
        return ModeSet(name, (smib_mode(h, s, m["ks_pu_per_rad"], m["d_pu"], m["share_frac"], f0),),
                       d.get("description", ""),
                       smib={k: float(m[k]) for k in ("ks_pu_per_rad", "d_pu")})
    rows = d["modes"]
    if "calibrate_f_hz" in d:
        k = calibrate_gain(np.array([r["f_hz"] for r in rows]), np.array([r["damping_ratio"] for r in rows]),
                           float(d["calibrate_f_hz"]), float(d["calibrate_gain_mw_per_mw"]))
        gains = [k] * len(rows)
    else:
        gains = [float(r["gain_mw_per_mw"]) for r in rows]
    modes = tuple(Mode(r["name"], float(r["f_hz"]), float(r["damping_ratio"]), g,
                       hz_gain(g, float(r["f_hz"]), h, s, f0)) for r, g in zip(rows, gains))
    return ModeSet(name, modes, d.get("description", ""), f0_hz=f0)


#: output → the key suffix of its residues and feedthrough in a derived set's file
_KEYS = {"mw": "mw", "hz": "hz", "speed": "speed_pu"}


def _c(pair) -> complex:
    return complex(float(pair[0]), float(pair[1]))


def mode_set_from_dict(d: dict, name: str | None = None) -> ModeSet:
    """A derived mode set (``facility grid-modes``) from its file's table: every mode a pole
    pair with its residues, and the remainder ``[rest]`` (module docs of
    :mod:`facility.grid_impact.modal`)."""
    modes = []
    for r in d["modes"]:
        res = {out: _c(r[f"residue_{key}"]) for out, key in _KEYS.items() if f"residue_{key}" in r}
        f, z = float(r["f_hz"]), float(r["damping_ratio"])
        m = Mode(r["name"], f, z, 0.0, 0.0, res)
        # band-pass equivalent gains: the same resonant peak, |H(jω_n)| = k / (2ζ)
        g = {out: float(abs(pair_response(np.array([f]), m.pole, res[out])[0])) * 2.0 * z
             for out in ("mw", "hz") if out in res}
        modes.append(Mode(r["name"], f, z, g.get("mw", 0.0), g.get("hz", 0.0), res))
    rest = None
    if "rest" in d:
        t = d["rest"]
        rest = Rest({out: float(t.get(f"d_{key}", 0.0)) for out, key in _KEYS.items()},
                    np.array([_c(p) for p in t.get("poles", [])], dtype=complex),
                    {out: np.array([_c(p) for p in t.get(f"residue_{key}", [])], dtype=complex)
                     for out, key in _KEYS.items()})
    return ModeSet(name or d["name"], tuple(modes), d.get("description", ""), rest,
                   float(d["f0_hz"]), dict(d["derived"]))


def read_mode_set_file(path) -> ModeSet:
    """A mode set from a file of one's own: written by ``facility grid-modes`` (no ANDES needed)
    or in the bundled band-pass form (``[[modes]]`` with gains, or ``[smib]``)."""
    try:
        with open(path, "rb") as fh:
            d = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ScenarioError(f"grid_impact.mode_set = {str(path)!r}: cannot read it as a mode set file ({e})") from None
    if "modes" not in d and "smib" not in d:
        raise ScenarioError(f"grid_impact.mode_set = {str(path)!r}: not a mode set file (no [[modes]] or [smib])")
    try:
        return _mode_set_from_table(d, str(d.get("name", Path(path).stem)))
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ScenarioError(f"grid_impact.mode_set = {str(path)!r}: malformed mode set file ({type(e).__name__}: {e})"
                            ) from None
