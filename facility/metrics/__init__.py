"""Metrics of a power time series, the energy account, and compliance with a utility spec.

The definitions are the public contract (docs/contract.md); they are restated here.

Every power function takes a uniformly sampled power series ``p_mw`` [MW] with step ``dt_s`` [s] and
compares instants inside the horizon only (nothing is assumed about P before t = 0). The
definitions do not depend on ``dt_s`` (``tests/metrics/test_metrics.py`` shows it):

* ``max_ramp_up_mw_per_s`` = max over t1 < t2 ≤ t1 + τ of (P(t2) − P(t1)) / τ, τ =
  ``spec.ramp_window_s``; ``max_ramp_down_mw_per_s`` the same for falls, reported positive.
* ``max_ramp_mw_per_min`` = the largest rise or fall of P within any 60 s window. [MW]
* ``max_window_swing_mw`` = max over t of (max − min of P on [t − window_s, t]). [MW]
* ``band_energy_frac`` = share of the AC energy of P (spectrum of P − mean P) in
  [band_min_hz, band_max_hz]; ``band_peak_mw`` = largest single-sided FFT-bin amplitude in
  that band; ``dominant_freq_hz`` = frequency of the largest bin at or above band_min_hz.
* ``dynamic_range_mw`` = max − min of P over the horizon (the paper's dynamic power range).

On the sample grid a window of τ seconds spans ``k = floor(τ / dt_s)`` steps, i.e. the
samples ``P[j-k] … P[j]``.

Energy account (``metrics.json`` → ``energy``, :func:`energy_metrics`), every sample held for
one step (:func:`energy_mwh`):

* ``raw_mwh`` = energy at the PCC with every mitigation off; ``pcc_mwh`` = energy at the PCC.
* ``storage_net_charge_mwh`` = Σ_s ΔE_s, ΔE_s = E_s(end) − E_s(0) the change of storage s's
  *stored* energy over the horizon (+ = it ended fuller). [MWh]
* ``storage_restore_mwh`` = Σ_s R_s, the AC energy at the storage terminals that brings every
  storage back to its initial stored energy, at its own efficiencies:
  R_s = −ΔE_s / η_c,s when ΔE_s < 0 (the grid must recharge what the run took from the
  initial charge, paying the charging loss), R_s = −ΔE_s · η_d,s when ΔE_s > 0 (the surplus is
  worth what it can deliver back, after the discharging loss). A full round trip of the
  energy the storage lent thus costs 1/(η_c η_d) of it. Network losses of the refill are
  not included. [MWh]
* ``pcc_restored_mwh`` = ``pcc_mwh`` + ``storage_restore_mwh``: the PCC energy of the same run
  had every storage ended where it started. [MWh]
* ``energy_overhead_frac`` = ``pcc_restored_mwh`` / ``raw_mwh`` − 1: burned GPU floor and
  firefly energy, storage conversion and self-discharge losses, the UPS path and the network
  losses' change — never energy borrowed from a storage's initial charge (a run that ends with
  its storages emptier is charged for refilling them, one that ends fuller is credited what
  the surplus can return). Negative only when less energy is really drawn (a power cap). [frac]
* ``energy_overhead_uncorrected_frac`` = ``pcc_mwh`` / ``raw_mwh`` − 1, the figure without the
  storage correction; the two agree when every storage ends at its initial SoC (what the
  optimizer's default ``terminal_soc = "at_least_initial"`` asks for). [frac]


The package: :mod:`~facility.metrics.series` (ramps, window swing, dynamic range),
:mod:`~facility.metrics.spectral` (FFT bins, band energy and peak),
:mod:`~facility.metrics.energy` (the energy account) and :mod:`~facility.metrics.compliance`
(the spec's rows, verdict and margins). Pure numpy functions: the package imports no other
facility package (the spec's type only for annotations).
"""

from facility.metrics.compliance import (COMPLIANCE_ABS_TOL, LIMIT_METRICS, LIMIT_UNITS, UNIT_TEXT,
                                         VERDICT_KEYS, compliance, compliance_margins, limit_margins,
                                         limit_rows, margin_of, margins_text, power_metrics,
                                         verdict_text)
from facility.metrics.energy import energy_metrics, energy_mwh, storage_restore_mwh
from facility.metrics.series import (dynamic_range_mw, max_ramp_mw_per_min, max_ramp_mw_per_s,
                                     max_window_swing_mw, rolling_min_max, window_steps)
from facility.metrics.spectral import band_energy_frac, band_peak_mw, dominant_freq_hz, spectrum

__all__ = [
    "COMPLIANCE_ABS_TOL", "window_steps", "rolling_min_max", "max_ramp_mw_per_s",
    "max_ramp_mw_per_min", "max_window_swing_mw", "dynamic_range_mw", "spectrum",
    "band_energy_frac", "band_peak_mw", "dominant_freq_hz", "energy_mwh", "storage_restore_mwh",
    "energy_metrics", "power_metrics", "compliance", "compliance_margins", "VERDICT_KEYS",
    "limit_rows", "verdict_text", "limit_margins", "margin_of", "margins_text", "LIMIT_UNITS",
    "LIMIT_METRICS", "UNIT_TEXT",
]
