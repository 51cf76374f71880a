"""The ``grid_impact`` block of metrics.json, its compliance rows, and the per-bin caps the
optimizer holds.

Every response is computed on the PCC spectrum: X = rfft(P − mean P),
Y_k = H(f_k) sinc²(f_k Δt) X_k, y = irfft(Y). The factor sinc²(f Δt) = (sin(π f Δt) / (π f Δt))²
is the spectrum of a first-order hold: the PCC power between two samples is taken as the
straight line between them, as ``scipy.signal.lsim`` and an FOH-discretized simulation take it
(the benchmark agrees with such a per-step simulation to 1e-4 of the torque swing; without
the factor the band-limited reading of a stepped load gives ~10 % more torque at 15-50 Hz on
a 10 ms grid). That is the periodic steady state of the linear model driven by the horizon's
power repeated (circular convolution): the start-up transient of the model is not in it, and
lightly damped modes whose decay time is not short against the horizon wrap around its end
(tests/grid_impact compare it with ``scipy.signal.lsim``). O(N log N) for all models together.

The shaft's section torque is split at ``torsional_band_min_hz`` (f_b, by default half the
lowest torsional mode) into the **torsional band** (bins f ≥ f_b: the torsional modes'
resonances) and the **quasi-static** part (f < f_b: the shaft following the load and swinging
against the grid at its electromechanical mode); the two sum to the section's torque. Limits,
fatigue and the LP caps read the torsional band. Torques are in pu of the shaft model's torque
base S_rated / ω_m0 (the torque that carries the generator's MVA rating at synchronous speed).

Definitions (a_k the single-sided amplitude of bin k, as ``facility.metrics.spectrum``; T_s(f)
= share / S_rated · H_s(f) · sinc²(f Δt) · ΔP(f), H_s the connected shaft's response):

* ``shaft.sections.<s>.peak_torque_pu`` = max_t |T_s,band(t)|, the torsional band's torque.
* ``…bin_peak_torque_pu`` = max over bins f_k ≥ f_b of a_k · share / S · |H_s(f_k)| sinc²(f_k Δt):
  the largest single-frequency torsional torque component, the limited quantity (exact LP rows,
  :func:`bin_caps_mw`), ``…bin_peak_hz`` its bin. A time peak is at most the sum of the bins'
  components, so it may exceed the bin peak when several bins add.
* ``…quasi_static``: peak_torque_pu, bin_peak_torque_pu, bin_peak_hz of the part below f_b;
  ``…total_peak_torque_pu`` = max_t |T_s(t)| of both together.
* ``shaft.bin_peak_hz``, ``shaft.bin_peak_torque_pu``: where the largest single-bin torque of the
  whole section torque (both parts, any section) sits, and its amplitude.
* ``shaft.modes.<r>``: the peak of torsional mode r's own contribution (its pole pair, bins in
  the torsional band) in the section it loads most (``worst_section_index``);
  ``amplification`` = its peak / the air-gap torque swing share · max|ΔP| / S (how much the mode
  amplifies a rigid shaft's torque).
* ``shaft.connection``: the generator's synchronizing and damping torque, the electromechanical
  mode's frequency and damping ratio, the governor (when on), f_b.
* ``shaft.sections.<s>.fatigue``: rainflow + Miner of the torsional band's torque
  (:mod:`facility.grid_impact.fatigue`).
* ``modes.<i>``: peak_mw and bin_peak_mw of the observed generator's power swing, peak_hz of
  the frequency deviation, ``amplification`` = peak_mw / (k_i · max|ΔP|) (over a flat
  transmission with the mode's gain); ``rest`` (a set derived from a dynamic model): the
  same of its remainder (instantaneous share, governors, other poles); ``total``: the sum of
  all rows, the observed generator's whole swing. ``mode_bin_peak_mw`` is over the modes
  only (not the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facility.grid_impact.connection import connect_shaft, torsional_band_min_hz
from facility.grid_impact.fatigue import fatigue_metrics
from facility.grid_impact.modal import ModeSet
from facility.grid_impact.shaft import ShaftModel
from facility.metrics import COMPLIANCE_ABS_TOL

__all__ = ["hold_factor", "section_torque", "GridImpactModel", "build_model", "grid_impact_metrics",
           "grid_impact_compliance", "bin_caps_mw", "bin_metrics", "LIMIT_METRIC"]

#: compliance row -> (limit key in [grid_impact], metric path in the grid_impact block)
LIMIT_METRIC = {
    "grid_impact_max_shaft_torque_pu": ("max_shaft_torque_pu", "shaft_bin_peak_torque_pu"),
    "grid_impact_max_mode_response_mw": ("max_mode_response_mw", "mode_bin_peak_mw"),
    "grid_impact_max_fatigue_damage_per_year": ("max_fatigue_damage_per_year", "max_damage_per_year"),
}


def hold_factor(f_hz: np.ndarray, dt_s: float) -> np.ndarray:
    """sinc²(f Δt): the first-order hold's spectrum (the power linear between samples). [1]"""
    return np.sinc(np.asarray(f_hz, dtype=float) * dt_s) ** 2


@dataclass(frozen=True)
class GridImpactModel:
    """The resolved grid-side models of a ``[grid_impact]`` section.

    Attributes
    ----------
    shaft : ShaftModel
        The shaft, its generator connected to the grid (:mod:`facility.grid_impact.connection`).
    modes : ModeSet
    share_frac : float
        Generator's share of the PCC oscillation. [frac]
    sn : dict
        S-N curve: sn_exponent, t_endurance_pu, n_endurance_cycles.
    band_min_hz : float
        Lower edge of the torsional band; 0 = every bin torsional. [Hz]
    """

    shaft: ShaftModel
    modes: ModeSet
    share_frac: float
    sn: dict
    band_min_hz: float = 0.0

    @property
    def torque_per_mw(self) -> float:
        """Air-gap torque per MW at the PCC: share / S_rated. [pu/MW]"""
        return self.share_frac / self.shaft.s_rated_mva

    def torsional(self, f_hz: np.ndarray) -> np.ndarray:
        """Whether each frequency lies in the torsional band (f ≥ band_min_hz). [bool]"""
        return np.asarray(f_hz, dtype=float) >= self.band_min_hz

    def torque_response(self, f_hz: np.ndarray, modes: bool = False) -> np.ndarray:
        """Section torque per MW at the PCC, (sections, F) or, with ``modes``, (groups, sections,
        F) as :meth:`ShaftModel.frequency_response`. [pu/MW]"""
        h = self.shaft.frequency_response(f_hz, modes=modes)
        h *= self.torque_per_mw
        return h


def build_model(cfg, shaft: ShaftModel, modes: ModeSet) -> GridImpactModel:
    """The grid-side model of a :class:`~facility.config.grid_impact.GridImpactConfig`.

    Parameters
    ----------
    cfg : GridImpactConfig
        The ``[grid_impact]`` section (share, S-N overrides, connection, band edge).
    shaft : ShaftModel
        Its ``shaft_model`` with ``mech_damping_ratio``, not yet connected to the grid: a
        resolved scenario's ``library.shaft``.
    modes : ModeSet
        Its ``mode_set``: a resolved scenario's ``library.mode_set``.
    """
    if shaft.fatigue is None:
        raise ValueError(f"shaft {shaft.name!r} has no S-N curve (its library file's [fatigue] table)")
    sn = dict(shaft.fatigue)
    for key, over in (("sn_exponent", cfg.sn_exponent), ("t_endurance_pu", cfg.sn_endurance_torque_pu),
                      ("n_endurance_cycles", cfg.sn_endurance_cycles)):
        if over is not None:
            sn[key] = float(over)
    shaft = connect_shaft(cfg, shaft, modes)
    return GridImpactModel(shaft, modes, cfg.share_frac, sn, torsional_band_min_hz(cfg, shaft))


def _amp_weight(n: int) -> np.ndarray:
    """Single-sided amplitude per unit |X_k| (``facility.metrics.spectrum``): 2/N, 1/N at DC
    and at the Nyquist bin of an even N."""
    w = np.full(n // 2 + 1, 2.0 / n)
    w[0] = 1.0 / n
    if n % 2 == 0:
        w[-1] = 1.0 / n
    return w


def _spectrum(p_mw: np.ndarray, dt_s: float):
    p = np.asarray(p_mw, dtype=float)
    n = p.size
    x = np.fft.rfft(p - p.mean())
    f = np.fft.rfftfreq(n, dt_s)
    w = np.full(f.size, 2.0 / n)
    w[0] = 1.0 / n
    if n % 2 == 0:
        w[-1] = 1.0 / n
    return x, f, np.abs(x) * w, n


def bin_metrics(p_mw: np.ndarray, dt_s: float, model: GridImpactModel) -> dict:
    """The two limited spectral quantities only: shaft_bin_peak_torque_pu [pu] (torsional band)
    and mode_bin_peak_mw [MW] (see the module docstring)."""
    _, f, amp, _ = _spectrum(p_mw, dt_s)
    amp = amp * hold_factor(f, dt_s)
    ht = np.abs(model.torque_response(f)) * model.torsional(f)[None, :]
    hm = np.abs(model.modes.modes_response(f, "mw"))
    return {"shaft_bin_peak_torque_pu": float(np.max(amp[None, :] * ht)) if f.size else 0.0,
            "mode_bin_peak_mw": float(np.max(amp[None, :] * hm)) if f.size and hm.size else 0.0}


def bin_caps_mw(f_hz: np.ndarray, dt_s: float, model: GridImpactModel, max_shaft_torque_pu: float | None,
                max_mode_response_mw: float | None) -> np.ndarray:
    """Largest PCC amplitude a_k each frequency may carry so that no section's torsional-band
    torque component exceeds ``max_shaft_torque_pu`` and no mode's generator-power component
    exceeds ``max_mode_response_mw``: min over sections and modes of limit / (|H(f)| sinc²(f Δt))
    on a grid of step ``dt_s`` [s] (no torque cap below the torsional band). [MW]

    Exact for the ``bin_peak`` metrics (a_k ≤ cap_k ⇔ every weighted bin meets its limit);
    for the time-domain peaks it is necessary, not sufficient (bins add in time)."""
    f = np.asarray(f_hz, dtype=float)
    cap = np.full(f.size, np.inf)
    hold = hold_factor(f, dt_s)
    with np.errstate(divide="ignore"):
        if max_shaft_torque_pu is not None:
            ht = np.abs(model.torque_response(f)).max(axis=0) * hold * model.torsional(f)
            cap = np.minimum(cap, max_shaft_torque_pu / ht)
        if max_mode_response_mw is not None and model.modes.modes:
            hm = np.abs(model.modes.modes_response(f, "mw")).max(axis=0) * hold
            cap = np.minimum(cap, max_mode_response_mw / hm)
    return cap


def grid_impact_metrics(p_mw: np.ndarray, dt_s: float, model: GridImpactModel) -> dict:
    """The ``grid_impact`` block for one PCC power series (see the module docstring).

    Parameters
    ----------
    p_mw : numpy.ndarray (N,)
        PCC power. [MW]
    dt_s : float
        Step. [s]
    model : GridImpactModel

    Returns
    -------
    dict
        share_frac, dp_peak_mw, shaft {sections, modes, …}, modes {…, total}, and the limited
        metrics shaft_bin_peak_torque_pu, mode_bin_peak_mw, max_damage_per_year.
    """
    x, f, amp, n = _spectrum(p_mw, dt_s)
    hold = hold_factor(f, dt_s)
    x = x * hold                                                       # FOH input spectrum
    amp = amp * hold
    horizon_h = n * dt_s / 3600.0
    dp_peak = float(np.max(np.abs(np.asarray(p_mw, float) - np.mean(p_mw)))) if n else 0.0
    shaft = model.shaft
    secs = shaft.sections
    c = model.torque_per_mw
    gap = c * dp_peak
    band = model.torsional(f)
    # ---- shaft: the whole section torque's spectrum, split at the torsional band's edge
    y = model.torque_response(f) * x[None, :]                        # (S, F)
    torque_band = np.fft.irfft(np.where(band, y, 0.0), n, axis=1)
    torque_qs = np.fft.irfft(np.where(band, 0.0, y), n, axis=1)
    # bin amplitudes of each part: the spectrum of its (real, periodic) torque series, i.e. Y
    # with the imaginary part of the DC and (even N) Nyquist bins dropped, as irfft drops it
    yr = y.copy()
    yr[:, 0] = yr[:, 0].real
    if n % 2 == 0:
        yr[:, -1] = yr[:, -1].real
    a_tot = np.abs(yr) * _amp_weight(n)[None, :]
    a_band = a_tot * band[None, :]
    a_qs = a_tot * ~band[None, :]
    # ---- each torsional mode's torque (its pole pair, bins in the band) in every section: with
    # A = X/(jω − λ), B = X/(jω − λ̄), irfft(X (r/(jω−λ) + r̄/(jω−λ̄))) = Re r·irfft(A + B)
    # + Im r·irfft(j(A − B)): two inverse FFTs per mode for all sections
    jw = 2j * np.pi * f
    xb = x * band
    tmodes = {}
    for r, (fr, poles) in enumerate(zip(shaft.torsional_modes_hz(), shaft.mode_poles()[1:])):
        tr = np.zeros((len(secs), n))
        for lam, res in poles:
            a = xb / (jw - lam)
            if lam.imag == 0.0:
                tr += c * res.real[:, None] * np.fft.irfft(a, n)[None, :]
                continue
            b = xb / (jw - np.conj(lam))
            u = np.fft.irfft(np.stack([a + b, 1j * (a - b)]), n, axis=1)
            tr += c * (res.real[:, None] * u[0][None, :] + res.imag[:, None] * u[1][None, :])
        pk = np.max(np.abs(tr), axis=1)
        j = int(np.argmax(pk))
        tmodes[f"mode{r + 1}"] = {"f_hz": float(fr), "peak_torque_pu": float(pk[j]),
                                  "worst_section_index": j,
                                  "amplification": float(pk[j] / gap) if gap > 0 else 0.0}

    def _peak_bin(amp_row: np.ndarray) -> tuple[float, float]:
        k = int(np.argmax(amp_row))
        return float(amp_row[k]), float(f[k])

    sections = {}
    for j, s in enumerate(secs):
        bp, bf = _peak_bin(a_band[j])
        qp, qf = _peak_bin(a_qs[j])
        sections[s] = {"peak_torque_pu": float(np.max(np.abs(torque_band[j]))),
                       "bin_peak_torque_pu": bp, "bin_peak_hz": bf,
                       "fatigue": fatigue_metrics(torque_band[j], horizon_h, model.sn),
                       "quasi_static": {"peak_torque_pu": float(np.max(np.abs(torque_qs[j]))),
                                        "bin_peak_torque_pu": qp, "bin_peak_hz": qf},
                       "total_peak_torque_pu": float(np.max(np.abs(torque_band[j] + torque_qs[j])))}
    dmg = [v["fatigue"]["damage_per_year"] for v in sections.values()]
    j_all, k_all = np.unravel_index(int(np.argmax(a_tot)), a_tot.shape)
    connection = {"sync_torque_pu_per_rad": float(shaft.sync_torque_pu_per_rad),
                  "damping_pu": float(shaft.grid_damping_pu),
                  "electromechanical_mode_hz": shaft.electromechanical_mode_hz(),
                  "electromechanical_damping_ratio": shaft.electromechanical_damping_ratio(),
                  "torsional_band_min_hz": float(model.band_min_hz)}
    if shaft.governor_droop_frac is not None:
        connection["governor_droop_frac"] = float(shaft.governor_droop_frac)
        connection["governor_time_constant_s"] = float(shaft.governor_time_constant_s)
    # ---- electromechanical modes (rows of the mode set; a derived set's last row is its rest)
    ms = model.modes
    nm = len(ms.modes)
    hmw = ms.frequency_response(f, "mw")                               # (rows, F)
    ymw = np.fft.irfft(x[None, :] * hmw, n, axis=1)
    yhz = np.fft.irfft(x[None, :] * ms.frequency_response(f, "hz"), n, axis=1)
    emodes = {}
    for i, m in enumerate(ms.modes):
        pk = float(np.max(np.abs(ymw[i])))
        emodes[m.name] = {"f_hz": m.f_hz, "damping_ratio": m.damping_ratio,
                          "peak_mw": pk, "bin_peak_mw": float(np.max(amp * np.abs(hmw[i]))),
                          "peak_hz": float(np.max(np.abs(yhz[i]))),
                          "amplification": pk / (m.gain_mw_per_mw * dp_peak) if dp_peak > 0 else 0.0}
    if ms.rest is not None:
        emodes["rest"] = {"peak_mw": float(np.max(np.abs(ymw[nm]))) if n else 0.0,
                          "bin_peak_mw": float(np.max(amp * np.abs(hmw[nm]))) if f.size else 0.0,
                          "peak_hz": float(np.max(np.abs(yhz[nm]))) if n else 0.0}
    emodes["total"] = {"peak_mw": float(np.max(np.abs(ymw.sum(axis=0)))) if n else 0.0,
                       "peak_hz": float(np.max(np.abs(yhz.sum(axis=0)))) if n else 0.0}
    worst_sec = max(sections, key=lambda s: sections[s]["peak_torque_pu"])
    return {
        "share_frac": model.share_frac,
        "dp_peak_mw": dp_peak,
        "shaft": {"s_rated_mva": float(shaft.s_rated_mva),
                  "damping_ratio": float(shaft.damping_ratio),
                  "airgap_torque_peak_pu": gap,
                  "peak_torque_pu": sections[worst_sec]["peak_torque_pu"],
                  "worst_section_index": secs.index(worst_sec),
                  "quasi_static_peak_torque_pu": max(v["quasi_static"]["peak_torque_pu"] for v in sections.values()),
                  "bin_peak_torque_pu": float(a_tot[j_all, k_all]) if f.size else 0.0,
                  "bin_peak_hz": float(f[k_all]) if f.size else 0.0,
                  "bin_peak_section_index": int(j_all),
                  "connection": connection,
                  "sections": sections, "modes": tmodes},
        "modes": emodes,
        "shaft_bin_peak_torque_pu": max(v["bin_peak_torque_pu"] for v in sections.values()),
        "mode_bin_peak_mw": max((emodes[m.name]["bin_peak_mw"] for m in ms.modes), default=0.0),
        "max_damage_per_year": max(dmg),
        "min_life_years": min(v["fatigue"]["life_years"] for v in sections.values()),
    }


def grid_impact_compliance(block: dict, cfg) -> dict:
    """Compliance rows ``grid_impact_<limit>`` of the limits that are set (metric ≤ limit +
    1e-6, as ``facility.metrics.compliance``)."""
    rows = {}
    for row, (limit_key, metric_key) in LIMIT_METRIC.items():
        lim = getattr(cfg, limit_key)
        if lim is not None:
            rows[row] = bool(block[metric_key] <= lim + COMPLIANCE_ABS_TOL)
    return rows


def section_torque(p_mw: np.ndarray, dt_s: float, model: GridImpactModel, section: int,
                   mode: int | None = None, part: str = "band") -> np.ndarray:
    """Torque of one shaft section over the horizon, as in :func:`grid_impact_metrics` [pu]:
    ``part`` "band" (the torsional band), "quasi_static" or "total"; of torsional mode ``mode``
    (0-based, the first torsional mode 0) only, within the part, when given."""
    x, f, _, n = _spectrum(p_mw, dt_s)
    x = x * hold_factor(f, dt_s)
    keep = {"band": model.torsional(f), "quasi_static": ~model.torsional(f),
            "total": np.ones(f.size, dtype=bool)}[part]
    h = model.torque_response(f, modes=mode is not None)
    h = h[mode + 1, section] if mode is not None else h[section]
    return np.fft.irfft(x * h * keep, n)
