"""The ``[grid_impact]`` response limits as the optimizer's band rows.

A response limit on shaft torque (in the torsional band: bins f_k ≥ ``torsional_band_min_hz``,
no torque cap below it) or on a mode's generator-power swing, taken per FFT bin of the PCC
power, is linear in that bin: a_k |H(f_k)| ≤ L ⇔ a_k ≤ L / |H(f_k)|. Those per-bin caps
(:func:`facility.grid_impact.metrics.bin_caps_mw`, the smallest over sections and modes) join
the spec's band limits in :func:`facility.optimize.model.spectral.bin_limits`, which writes each
limited bin as the inscribed-polygon rows of the band limits, generated lazily: what holds for
``max_band_peak_mw`` holds for them (the polygon gives up 1 − cos(π/256) = 7.5e-5 of the cap,
``optimize.limit_margin_frac`` tightens them like every limit).

Exact: ``grid_impact.shaft_bin_peak_torque_pu`` ≤ max_shaft_torque_pu and
``grid_impact.mode_bin_peak_mw`` ≤ max_mode_response_mw, the compliance rows' metrics.
Not held by the LP: the time-domain peaks (``peak_torque_pu``, ``peak_mw``; a sum over bins,
at most Σ_k a_k |H(f_k)|), the shaft's quasi-static torque (reported, not limited) and the
fatigue damage (nonlinear in the torque); the verification run checks
``max_fatigue_damage_per_year``.
"""

from __future__ import annotations

import numpy as np

from facility.grid_impact.metrics import LIMIT_METRIC, bin_caps_mw, bin_metrics, build_model

__all__ = ["LpSpec", "lp_spec", "lp_limit_rows"]


class LpSpec:
    """A spec (``SpecConfig``) plus per-bin amplitude caps: every attribute of the spec, and
    :meth:`bin_caps_mw`, which :func:`facility.optimize.model.spectral.bin_limits` reads.

    Parameters
    ----------
    spec : SpecConfig
    model : GridImpactModel
    max_shaft_torque_pu, max_mode_response_mw : float or None
        The limits. [pu, MW]
    """

    def __init__(self, spec, model, max_shaft_torque_pu, max_mode_response_mw):
        self.__dict__.update(_spec=spec, _model=model, _t=max_shaft_torque_pu, _r=max_mode_response_mw)

    def __getattr__(self, name):
        if name.startswith("__") or "_spec" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["_spec"], name)

    def __setattr__(self, name, value):
        raise AttributeError("LpSpec is frozen")

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    def bin_caps_mw(self, f_hz: np.ndarray, dt_s: float) -> np.ndarray:
        """Cap of each frequency's single-sided amplitude on a grid of step ``dt_s`` [s]. [MW]"""
        return bin_caps_mw(f_hz, dt_s, self._model, self._t, self._r)


def lp_limit_rows(scenario) -> list[str]:
    """Compliance rows of the ``[grid_impact]`` limits the LP holds (the response limits)."""
    gi = scenario.grid_impact
    out = []
    if gi.enabled and gi.max_shaft_torque_pu is not None:
        out.append("grid_impact_max_shaft_torque_pu")
    if gi.enabled and gi.max_mode_response_mw is not None:
        out.append("grid_impact_max_mode_response_mw")
    return out


def lp_spec(scenario):
    """The spec the optimizer gets: ``scenario.spec``, with the ``[grid_impact]`` response
    limits as per-bin caps when any is set (``scenario`` resolved: its ``library`` holds the
    shaft and mode set)."""
    if not lp_limit_rows(scenario):
        return scenario.spec
    gi = scenario.grid_impact
    lib = scenario.library
    return LpSpec(scenario.spec, build_model(gi, lib.shaft, lib.mode_set), gi.max_shaft_torque_pu,
                  gi.max_mode_response_mw)


def margin_row(res, key: str, lossless_pcc_mw: np.ndarray) -> tuple[float, float, float]:
    """(limit, verified metric, lossless metric) of one ``[grid_impact]`` LP limit, for the
    size-and-verify margin loop (:func:`facility.sizing.needed_margin_frac`)."""
    limit_key, metric_key = LIMIT_METRIC[key]
    sc = res.scenario
    gi = sc.grid_impact
    model = build_model(gi, sc.library.shaft, sc.library.mode_set)
    lo = bin_metrics(lossless_pcc_mw, sc.time.dt_s, model)[metric_key]
    return float(getattr(gi, limit_key)), float(res.metrics["grid_impact"][metric_key]), float(lo)
