"""Plausibility warnings: numbers that pass the schema but cannot be what the user meant.

Each figure is compared with the site's peak estimate P (:func:`estimate_peak_site_mw`: every GPU at its compute-phase power, plus non-GPU load, PUE and base
load — an upper estimate of the raw load):

* **storage far above the site** — a storage ``p_rated_mw`` above :data:`STORAGE_FACTOR` × P
  (it could never charge or discharge that much into this site), or an ``e_rated_mwh`` above
  :data:`STORAGE_HOURS` hours of P;
* **a limit the raw load can never reach** — the raw PCC power lies between 0 and P (plus
  network losses, allowed for by :data:`LIMIT_FACTOR`), so a window swing, ramp per minute,
  dynamic range or band peak above that, or a per-second ramp above that / ``ramp_window_s``,
  never binds and the verdict "compliant" says nothing;
* **kW given as MW** — any of these (and ``site.base_load_mw`` against the GPU load) that
  would be plausible divided by 1000 gets that hint.

They are warnings, not errors (exit 0): ``validate`` prints them, ``run`` / ``size`` log them
and list them in ``events.json`` and the report.

A storage rating implausible by about 1000× — a power rating above :data:`IMPLAUSIBLE_FACTOR`
times the site's peak, or an energy rating above that many hours of it, which only a value in
kW (kWh) in a MW (MWh) field explains — is an error instead (:func:`implausible_errors`; the
CLI exits 2 naming the key, its unit and the plausible range, unless ``--allow-implausible``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.resolved import job_gpu

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = ["estimate_peak_site_mw", "STORAGE_FACTOR", "STORAGE_HOURS", "LIMIT_FACTOR", "IMPLAUSIBLE_FACTOR",
           "plausibility_warnings", "implausible_errors"]

#: A storage rating above this multiple of the site's peak is implausible. [-]
STORAGE_FACTOR = 5.0
#: A storage energy above this many hours of the site's peak is implausible. [h]
STORAGE_HOURS = 48.0
#: A power limit above this multiple of the site's peak can never bind (losses allowed). [-]
LIMIT_FACTOR = 1.2
#: A storage power rating above this multiple of the site's peak (an energy rating above this
#: many hours of it) is an error, not a warning: 20x past the warning's bound, where only a kW
#: value given as MW (1000x) lands. [-] ([h] for energy)
IMPLAUSIBLE_FACTOR = 100.0


def estimate_peak_site_mw(scenario: "Scenario") -> float:
    """Upper estimate of the site power: every GPU at its compute-phase power. [MW]

    Notes
    -----
    P_peak = sum_jobs n_gpus * TDP * max(p_high_frac, firefly/floor) * (1 + non_gpu_frac) * pue
    + base_load_mw
    """
    total_w = 0.0
    for i, job in enumerate(scenario.jobs):
        gpu = job_gpu(scenario, i)
        total_w += job.n_gpus * gpu.tdp_w * max(job.p_high_frac, 1.0)
    site = scenario.site
    return total_w / 1e6 * (1.0 + site.non_gpu_frac) * site.pue + site.base_load_mw


def _kw_hint(value: float, ref_mw: float, unit: str = "MW") -> str:
    """' (kW given as MW? ...)' when value / 1000 would be a plausible size next to ref_mw."""
    k = value / 1e3
    if 0.001 * ref_mw <= k <= STORAGE_FACTOR * ref_mw:
        return (f"; kW given as {unit}? {value:g} k{unit[1:] if unit.startswith('M') else unit} would be "
                f"{k:.4g} {unit}")
    return ""


def _peak_reference(s: "Scenario") -> tuple[float, str] | None:
    """The site's peak estimate [MW] and the words that name it in a message; None where there
    is none to compare with (an unknown GPU model, reported by check_jobs, or no positive peak)."""
    try:
        peak = float(estimate_peak_site_mw(s))
    except Exception:   # an unknown GPU model is reported by check_jobs
        return None
    if not peak > 0:
        return None
    return peak, f"the site's peak estimate ({peak:.4g} MW: every GPU at its compute power, non-GPU load, PUE)"


def plausibility_warnings(s: "Scenario") -> list[str]:
    """The plausibility warnings of a schema- and physics-valid scenario (see the module doc)."""

    ref = _peak_reference(s)
    if ref is None:
        return []
    peak, site = ref
    out = []
    for name, st in s.storages().items():
        p = getattr(st, "p_rated_mw", None)
        if p is not None and p > STORAGE_FACTOR * peak:
            out.append(f"{name}.p_rated_mw = {p:g} MW is {p / peak:.3g} x {site}: storage that large cannot be "
                       f"what is meant{_kw_hint(p, peak)}")
        e = getattr(st, "e_rated_mwh", None)
        if e is not None and e > STORAGE_HOURS * peak:
            out.append(f"{name}.e_rated_mwh = {e:g} MWh stores {e / peak:.3g} h of {site}: implausible "
                       f"for power stabilization{_kw_hint(e, peak, 'MWh')}")
    sp = s.spec
    bound = LIMIT_FACTOR * peak
    limits = [("max_window_swing_mw", sp.max_window_swing_mw, bound, "MW"),
              ("max_ramp_mw_per_min", sp.max_ramp_mw_per_min, bound, "MW/min"),
              ("max_dynamic_range_mw", sp.max_dynamic_range_mw, bound, "MW"),
              ("max_band_peak_mw", sp.max_band_peak_mw, bound, "MW"),
              ("max_ramp_up_mw_per_s", sp.max_ramp_up_mw_per_s, bound / sp.ramp_window_s, "MW/s"),
              ("max_ramp_down_mw_per_s", sp.max_ramp_down_mw_per_s, bound / sp.ramp_window_s, "MW/s")]
    limits += [(f"bands.{i}.max_peak_mw", b.max_peak_mw, bound, "MW") for i, b in enumerate(sp.bands)]
    for key, v, top, unit in limits:
        if v is not None and v > top:
            out.append(f"spec.{key} = {v:g} {unit} is above anything the raw load can reach (at most {top:.4g} "
                       f"{unit} from {site}): this limit never binds, so 'compliant' says nothing about it"
                       f"{_kw_hint(v, top, unit)}")
    base = s.site.base_load_mw
    gpu_mw = peak - base
    if base > 0 and gpu_mw > 0 and base > STORAGE_FACTOR * 10 * gpu_mw:
        out.append(f"site.base_load_mw = {base:g} MW is {base / gpu_mw:.3g} x the GPU load's peak "
                   f"({gpu_mw:.4g} MW){_kw_hint(base, gpu_mw)}")
    return out


def _ratings(s: "Scenario"):
    """``(key, value, kind)`` of every storage rating a scenario gives: ``p_rated_mw`` /
    ``e_rated_mwh`` of each enabled section and its hybrid units."""
    for name, st in s.storages().items():
        for key, kind in (("p_rated_mw", "p"), ("e_rated_mwh", "e")):
            v = getattr(st, key, None)
            if v is not None:
                yield f"{name}.{key}", float(v), kind
        for key, kind in (("unit_p_rated_mw", "p"), ("unit_e_rated_mwh", "e")):
            for t, v in (getattr(st, key, None) or {}).items():
                yield f"{name}.{key}.{t}", float(v), kind


def implausible_errors(s: "Scenario") -> list[str]:
    """Storage ratings implausible by about 1000x (see the module doc): one message per key,
    naming its unit, the plausible range and the kW reading; [] where there is none."""
    ref = _peak_reference(s)
    if ref is None:
        return []
    peak, site = ref
    out = []
    for key, v, kind in _ratings(s):
        if kind == "p" and v > IMPLAUSIBLE_FACTOR * peak:
            out.append(f"{key} = {v:g} MW is {v / peak:,.0f} x {site}; a plausible power rating lies "
                       f"between 0 and {STORAGE_FACTOR * peak:.4g} MW ({STORAGE_FACTOR:g} x the peak)"
                       f"{_kw_hint(v, peak)}; give it in MW, or pass --allow-implausible to run it as given")
        elif kind == "e" and v > IMPLAUSIBLE_FACTOR * peak:
            out.append(f"{key} = {v:g} MWh stores {v / peak:,.0f} h of {site}; a plausible energy rating "
                       f"lies between 0 and {STORAGE_HOURS * peak:.4g} MWh ({STORAGE_HOURS:g} h of the peak)"
                       f"{_kw_hint(v, peak, 'MWh')}; give it in MWh, or pass --allow-implausible to run it "
                       f"as given")
    return out
