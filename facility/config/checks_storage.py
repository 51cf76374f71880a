"""Physics checks of the storage sections: ratings, SoC bounds, durations, hybrid units.

:mod:`facility.config.checks` runs them with the others.

Each ``check_*`` function returns a list of problems (strings naming key, unit and range).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.technology import unit_configs, unit_technology_names

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = ["check_storage", "duration_violation", "check_duration"]


def check_storage(s: "Scenario") -> list[str]:
    """Ratings present or extendable with bounds; SoC bounds ordered."""
    out = []
    for name, st in s.storages().items():
        if st.extendable:
            if st.max_p_rated_mw is None:
                out.append(f"{name}.max_p_rated_mw [MW] is required when {name}.extendable = true")
            if st.max_e_rated_mwh is None:
                out.append(f"{name}.max_e_rated_mwh [MWh] is required when {name}.extendable = true")
            if st.max_p_rated_mw is not None and st.max_p_rated_mw < st.min_p_rated_mw:
                out.append(f"{name}.max_p_rated_mw = {st.max_p_rated_mw:g} MW is below {name}.min_p_rated_mw = {st.min_p_rated_mw:g} MW")
            if st.max_e_rated_mwh is not None and st.max_e_rated_mwh < st.min_e_rated_mwh:
                out.append(f"{name}.max_e_rated_mwh = {st.max_e_rated_mwh:g} MWh is below {name}.min_e_rated_mwh = {st.min_e_rated_mwh:g} MWh")
        else:
            if st.p_rated_mw is None:
                out.append(f"{name}.p_rated_mw [MW] is required when {name}.enabled = true and "
                           f"{name}.extendable = false")
            if st.e_rated_mwh is None:
                out.append(f"{name}.e_rated_mwh [MWh] is required when {name}.enabled = true and "
                           f"{name}.extendable = false")
        if st.min_soc_frac >= st.max_soc_frac:
            out.append(
                f"{name}.min_soc_frac = {st.min_soc_frac:g} must be below {name}.max_soc_frac = "
                f"{st.max_soc_frac:g} [frac]"
            )
        elif not st.min_soc_frac <= st.initial_soc_frac <= st.max_soc_frac:
            out.append(
                f"{name}.initial_soc_frac = {st.initial_soc_frac:g} [frac] must lie in "
                f"[min_soc_frac, max_soc_frac] = [{st.min_soc_frac:g}, {st.max_soc_frac:g}]"
            )
        out += check_duration(name, st)
        reserve = getattr(st, "reserve_frac", 0.0)
        if reserve and st.min_soc_frac + reserve >= st.max_soc_frac:
            out.append(
                f"{name}.reserve_frac = {reserve:g} leaves no usable energy above min_soc_frac "
                f"({st.min_soc_frac:g}) below max_soc_frac ({st.max_soc_frac:g}) [frac]"
            )
    return out


def duration_violation(name: str, st, p_mw: float, e_mwh: float, rtol: float = 1e-6) -> str | None:
    """Why ratings (p_mw [MW], e_mwh [MWh]) break the section's duration bounds
    ``min_duration_h <= e / p <= max_duration_h`` [h], or None. No power rating: no duration."""
    lo, hi = st.min_duration_h, st.max_duration_h
    if p_mw <= 0 or (lo is None and hi is None):
        return None
    d = e_mwh / p_mw
    if (lo is not None and d < lo * (1 - rtol)) or (hi is not None and d > hi * (1 + rtol)):
        tech = f" (technology {st.technology})" if getattr(st, "technology", None) else ""
        return (f"{name}: e_rated_mwh / p_rated_mw = {e_mwh:g} MWh / {p_mw:g} MW = {d:.4g} h lies "
                f"outside [min_duration_h, max_duration_h] = [{lo if lo is not None else 0:g}, "
                f"{hi if hi is not None else float('inf'):g}] h{tech}")
    return None


def check_duration(name: str, st) -> list[str]:
    """Duration bounds ordered; fixed ratings within them; extendable bounds that admit a
    rating within them; candidate technologies only on an extendable storage."""
    out = []
    lo, hi = st.min_duration_h, st.max_duration_h
    if getattr(st, "technologies", None) or st.unit_p_rated_mw is not None or st.unit_e_rated_mwh is not None:
        return _check_hybrid(name, st)
    if lo is not None and hi is not None and lo > hi:
        out.append(f"{name}.min_duration_h = {lo:g} h is above {name}.max_duration_h = {hi:g} h")
        return out
    if not st.extendable:
        if st.p_rated_mw is not None and st.e_rated_mwh is not None:
            why = duration_violation(name, st, st.p_rated_mw, st.e_rated_mwh)
            if why:
                out.append(why)
        return out
    p_hi, e_hi = st.max_p_rated_mw, st.max_e_rated_mwh
    if hi is not None and p_hi is not None and st.min_e_rated_mwh > hi * p_hi * (1 + 1e-9):
        out.append(f"{name}.min_e_rated_mwh = {st.min_e_rated_mwh:g} MWh needs a power rating above "
                   f"max_p_rated_mw = {p_hi:g} MW at max_duration_h = {hi:g} h")
    if lo is not None and e_hi is not None and st.min_p_rated_mw * lo > e_hi * (1 + 1e-9):
        out.append(f"{name}.min_p_rated_mw = {st.min_p_rated_mw:g} MW at min_duration_h = {lo:g} h "
                   f"needs more energy than max_e_rated_mwh = {e_hi:g} MWh")
    return out


def _check_hybrid(name: str, st) -> list[str]:
    """A hybrid section: candidates for the optimizer (extendable), or fixed units with a power
    and an energy rating for every technology, each unit within its duration bounds."""
    techs = unit_technology_names(st) if st.technologies else []
    given = {"unit_p_rated_mw": st.unit_p_rated_mw, "unit_e_rated_mwh": st.unit_e_rated_mwh}
    if not techs:
        return [f"{name}.unit_p_rated_mw / unit_e_rated_mwh: unit ratings need {name}.technologies "
                f"(the technologies of the units)"]
    if st.extendable:
        set_ = [k for k, v in given.items() if v is not None]
        return ([f"{name}.{', '.join(set_)}: fixed unit ratings and extendable = true: the optimizer sizes "
                 f"the units; set extendable = false to run the given ratings"] if set_ else [])
    out = []
    for k, v in given.items():
        unit = "MW" if k.startswith("unit_p") else "MWh"
        if v is None or sorted(v) != sorted(techs):
            out.append(f"{name}.{k} = {v!r}: a fixed hybrid (extendable = false, technologies = "
                       f"{st.technologies!r}) needs one rating [{unit}] per technology, keyed "
                       f"{', '.join(techs)}; or set {name}.extendable = true for the optimizer to "
                       f"choose among them")
    if out:
        return out
    tot_p, tot_e = sum(st.unit_p_rated_mw.values()), sum(st.unit_e_rated_mwh.values())
    for k, tot, unit in (("p_rated_mw", tot_p, "MW"), ("e_rated_mwh", tot_e, "MWh")):
        v = getattr(st, k)
        if v is not None and abs(v - tot) > 1e-6 * max(1.0, tot):
            out.append(f"{name}.{k} = {v:g} {unit} is not the sum of its units' ratings ({tot:g} {unit}); "
                       f"leave it out or set it to the sum")
    for u, uc in unit_configs(name, st).items():
        why = duration_violation(u, uc, uc.p_rated_mw, uc.e_rated_mwh)
        if why:
            out.append(why)
    return out
