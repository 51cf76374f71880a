"""Transformer and UPS types shipped as TOML data in ``models/trafos/`` and ``models/ups/``.

Like pandapower's std_types: a scenario names a type (``grid.trafo_type``,
``grid.lv_trafo_type``, ``grid.ups_type``) and the network builder takes its ratings from it.
"""

from __future__ import annotations

from pydantic import ValidationError

from facility.config.files import is_explicit_path, shown
from facility.config.library import MODELS_DIR, cached_by_reference, read_library
from facility.config.messages import format_validation_error
from facility.config.schema import F, StrictModel
from facility.errors import ScenarioError

_SUB_KEYS = {  # GridConfig key -> TrafoType attribute
    "trafo_sn_mva": "sn_mva", "trafo_vk_percent": "vk_percent", "trafo_vkr_percent": "vkr_percent",
    "trafo_pfe_kw": "pfe_kw", "trafo_i0_percent": "i0_percent", "trafo_tap_step_percent": "tap_step_percent",
}
_LV_KEYS = {"lv_trafo_sn_mva": "sn_mva", "lv_trafo_vk_percent": "vk_percent", "lv_trafo_vkr_percent": "vkr_percent"}

__all__ = ["TrafoType", "UpsType", "list_trafo_types", "list_ups_types", "load_trafo_type", "load_ups_type"]


class TrafoType(StrictModel):
    """A two-winding transformer type (pandapower ``create_transformer_from_parameters`` keys)."""

    name: str = F(description="Type name (file stem).")
    description: str = F("", description="Free text.")
    sn_mva: float = F(unit="MVA", gt=0, le=1e5, description="Rated apparent power.")
    vn_hv_kv: float = F(unit="kV", gt=0, le=1200.0, description="Rated voltage of the HV winding.")
    vn_lv_kv: float = F(unit="kV", gt=0, le=1200.0, description="Rated voltage of the LV winding.")
    vk_percent: float = F(unit="%", gt=0, le=40.0, description="Short-circuit voltage.")
    vkr_percent: float = F(unit="%", ge=0, le=10.0, description="Real part of the short-circuit voltage.")
    pfe_kw: float = F(unit="kW", ge=0, le=1e5, description="Iron (no-load) losses.")
    i0_percent: float = F(unit="%", ge=0, le=5.0, description="No-load current.")
    tap_step_percent: float = F(1.25, unit="%", ge=0, le=5.0, description="Voltage change per tap step.")
    source: str = F("", description="Where the values come from.")


class UpsType(StrictModel):
    """Shape of a UPS efficiency curve: shares of the rated loss (they sum to 1 or are all 0)."""

    name: str = F(description="Type name (file stem).")
    description: str = F("", description="Free text.")
    noload_loss_share: float = F(unit="frac", ge=0, le=1, description="Constant (no-load) share of the rated loss.")
    linear_loss_share: float = F(unit="frac", ge=0, le=1, description="Share proportional to the load fraction.")
    quadratic_loss_share: float = F(unit="frac", ge=0, le=1, description="Share proportional to the load fraction squared.")
    source: str = F("", description="Where the values come from.")
    # behaviour in a voltage sag (facility.electrical.sags); a scenario's [ups] keys override them
    transfer_vm_pu: float = F(0.85, unit="pu", ge=0, le=1.0, description="Input voltage below which the load transfers to the battery.")
    transfer_delay_s: float = F(0.005, unit="s", ge=0, le=60.0, description="Time below transfer_vm_pu before the transfer.")
    retransfer_vm_pu: float = F(0.9, unit="pu", gt=0, le=1.0, description="Input voltage above which the load returns to the grid.")
    retransfer_delay_s: float = F(10.0, unit="s", ge=0, le=3600.0, description="Time above retransfer_vm_pu before the walk-in starts.")
    walk_in_s: float = F(10.0, unit="s", ge=0, le=600.0, description="Walk-in ramp of the rectifier after retransfer.")
    max_input_current_pu: float = F(1.2, unit="pu", gt=0, le=3.0, description="Rectifier input current limit, pu of the rating at 1 pu voltage.")
    recharge_frac: float = F(0.1, unit="frac of p_rated_mw", gt=0, le=1.0, description="Charger power after an event.")
    sag_source: str = F("", description="Where the sag-behaviour values come from.")

    @property
    def shares(self) -> tuple[float, float, float]:
        """(no-load, linear, quadratic) shares of the rated loss."""
        return (self.noload_loss_share, self.linear_loss_share, self.quadratic_loss_share)


def _names(sub: str) -> list[str]:
    return sorted(p.stem for p in (MODELS_DIR / sub).glob("*.toml"))


def list_trafo_types() -> list[str]:
    """Names of the transformer types in ``models/trafos/``."""
    return _names("trafos")


def list_ups_types() -> list[str]:
    """Names of the UPS types in ``models/ups/``."""
    return _names("ups")


def _read(sub: str, name: str, what: str, key: str) -> dict:
    """A type's table: a name in models/<sub>/ or an explicit .toml path (the shared reader)."""
    data, _ = read_library(sub, name, what, key)
    if is_explicit_path(name):
        data.setdefault("name", name.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".toml"))
    return data


def _malformed(exc: Exception, sub: str, name: str, key: str) -> str:
    label = name if is_explicit_path(name) else f"models/{sub}/{name}.toml"
    if isinstance(exc, ValidationError):
        model = TrafoType if sub == "trafos" else UpsType
        return (f"{key} = {shown(name)}: {label} is not a valid {model.__name__} table:\n"
                + format_validation_error(exc, label, model))
    return f"{key} = {shown(name)}: {label}: {exc}"


@cached_by_reference
def load_trafo_type(name: str, key: str = "grid.trafo_type") -> TrafoType:
    """Load a transformer type by name (file stem in ``models/trafos/``).

    Raises
    ------
    ScenarioError
        Unknown name or malformed file.
    """
    data = _read("trafos", name, "transformer type", key)
    try:
        return TrafoType(**data)
    except (ValidationError, TypeError) as exc:
        raise ScenarioError(_malformed(exc, "trafos", name, key)) from None


@cached_by_reference
def load_ups_type(name: str, key: str = "grid.ups_type") -> UpsType:
    """Load a UPS type by name (file stem in ``models/ups/``).

    Raises
    ------
    ScenarioError
        Unknown name, malformed file, or shares that neither sum to 1 nor are all 0.
    """
    data = _read("ups", name, "UPS type", key)
    try:
        ups = UpsType(**data)
    except (ValidationError, TypeError) as exc:
        raise ScenarioError(_malformed(exc, "ups", name, key)) from None
    total = sum(ups.shares)
    if total != 0.0 and abs(total - 1.0) > 1e-9:
        label = name if is_explicit_path(name) else f"models/ups/{name}.toml"
        raise ScenarioError(f"{key} = {shown(name)}: {label}: the loss shares sum to {total:g}; they "
                            "must sum to 1 (or all be 0)")
    return ups
