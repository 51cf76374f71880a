"""The design a size run delivers, as its CLI output and report lead with it.

Reads ``sizing.json`` (``Results.sizing``) fields when present: per storage (or per unit
``<storage>.<technology>``) ``p_rated_mw_opt`` / ``e_rated_mwh_opt`` and ``technology``;
``objective_usd_per_year`` (the headline cost; else ``cost.total_usd_per_year``);
``verified_by`` (the controller kind the design was verified under; else the scenario's
``controller.kind``) and ``verified``; the verdict from ``metrics.json``.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from facility.config.technology import COST_YEAR_POLICY, cost_year_note, section_of
from facility.metrics import verdict_text

if TYPE_CHECKING:
    from facility.cosim.results import Results

__all__ = ["design_units", "design_line", "design_html", "duration_text", "duration_unit", "growth_text",
           "NO_TECHNOLOGY", "technology_rows"]

#: The technology column of a unit whose section names no technology (its figures are the
#: scenario's own keys).
NO_TECHNOLOGY = "own figures, no technology"


def design_units(sizing: dict, scenario=None) -> list[dict]:
    """``[{name, technology, p_mw, e_mwh, duration_h}]`` of every sized storage unit."""
    out = []

    def add(name: str, d: dict, tech):
        p, e = (float(v) if float(v) > 0 else 0.0 for v in (d["p_rated_mw_opt"], d["e_rated_mwh_opt"]))
        if tech is None and "." in name:       # a hybrid unit, <storage>.<technology>
            tech = name.split(".", 1)[1]
        if tech is None and scenario is not None:
            st = scenario.storages().get(name.split(".")[0])
            tech = getattr(st, "technology", None)
        out.append({"name": name, "technology": tech, "p_mw": p, "e_mwh": e,
                    "duration_h": e / p if p > 0 else None})

    for k, v in sizing.items():
        if not isinstance(v, dict) or k in ("foresight", "cost", "mix", "verification", "levers"):
            continue
        if "p_rated_mw_opt" in v:
            add(k, v, v.get("technology"))
        else:                                   # one entry per unit: <storage>.<technology>
            for t, d in v.items():
                if isinstance(d, dict) and "p_rated_mw_opt" in d:
                    add(f"{k}.{t}", d, d.get("technology") or t)
    return out


def _cost(sizing: dict) -> float | None:
    if sizing.get("objective_usd_per_year") is not None:
        return float(sizing["objective_usd_per_year"])
    cost = sizing.get("cost") or {}
    return None if cost.get("total_usd_per_year") is None else float(cost["total_usd_per_year"])


def duration_unit(durations_h) -> tuple[str, float]:
    """``(unit, factor)``: one unit for every storage duration of a report (and its CLI lines),
    so that no duration reads in seconds in one table and minutes in another: hours where
    every duration is at least 0.1 h, else seconds. ``value_in_unit = duration_h * factor``.

    >>> duration_unit([0.06, 1.0]), duration_unit([1.0, 4.0]), duration_unit([])
    (('s', 3600.0), ('h', 1.0), ('h', 1.0))
    """
    ds = [float(d) for d in durations_h if d is not None]
    return ("h", 1.0) if all(d >= 0.1 for d in ds) else ("s", 3600.0)


def duration_text(duration_h: float | None, unit: tuple[str, float] | None = None) -> str:
    """A storage's E/P in ``unit`` (:func:`duration_unit`; by default the unit that reads for
    this one duration)."""
    if duration_h is None:
        return "–"
    name, factor = unit or duration_unit([duration_h])
    return f"{duration_h * factor:.3g} {name}"


def technology_rows(units: list[dict], scenario) -> list[dict]:
    """Per unit: ``{name, technology, cost_year, unverified}``: its technology (or
    :data:`NO_TECHNOLOGY`), the dollar year of its costs (the section's ``cost_year``, else its
    technology's) and its technology's figures marked unverified.

    A unit's technology is the one its config names (a hybrid unit ``<storage>.<technology>``:
    the candidate's reference), from ``scenario.library``; none without a scenario.
    """
    unit_cfgs = scenario.storage_units() if scenario is not None else {}
    sections = scenario.storages() if scenario is not None else {}
    out = []
    for u in units:
        st = unit_cfgs.get(u["name"]) or sections.get(section_of(u["name"]))
        ref = getattr(st, "technology", None)
        t = scenario.library.technology(ref) if ref else None
        year = getattr(st, "cost_year", None) or (t.cost_year if t is not None else None)
        out.append({"name": u["name"], "technology": u["technology"] or NO_TECHNOLOGY, "cost_year": year,
                    "unverified": t.figures_by_mark()["unverified"] if t is not None else None})
    return out


def _unit_text(u: dict, unit: tuple[str, float]) -> str:
    tech = f" ({u['technology'] or NO_TECHNOLOGY})"
    dur = f", {duration_text(u['duration_h'], unit)}" if u["duration_h"] is not None else ""
    return f"{u['name']}{tech} {u['p_mw']:.4g} MW / {u['e_mwh']:.4g} MWh{dur}"


def _verified(res: "Results") -> tuple[str, str]:
    """(who verified the design, in words; the verdict): ``optimal`` is a perfect-foresight
    study (the LP's plan replayed), any other controller ran closed loop."""
    z = res.sizing or {}
    by = z.get("verified_by") or res.scenario.controller.kind
    who = ("perfect-foresight dispatch (controller.kind = 'optimal')" if by == "optimal"
           else f"controller.kind = {by!r} (closed loop)")
    verdict = verdict_text(res.metrics["compliance"], res.metrics.get("undecided", {}))
    return who, verdict


def growth_text(p_scale: dict, e_scale: dict) -> str:
    """``bess P x1.5, E x1`` for each storage of a design's growth over the foresight one."""
    return ", ".join(f"{n} P x{p_scale[n]:.3g}, E x{e_scale.get(n, 1.0):.3g}" for n in p_scale)


def _foresight_text(z: dict) -> str:
    """What no foresight costs, where a closed-loop controller verified the design."""
    fs = z.get("foresight") or {}
    if z.get("verified_by", "optimal") == "optimal" or fs.get("objective_usd_per_year") is None:
        return ""
    return (f"the perfect-foresight design costs {fs['objective_usd_per_year']:,.0f} USD/yr; no foresight "
            f"costs {z.get('cost_of_no_foresight_usd_per_year', 0.0):,.0f} USD/yr more "
            f"({growth_text((z.get('resize') or {}).get('p_scale') or {}, (z.get('resize') or {}).get('e_scale') or {}) or 'its ratings'})")


def design_line(res: "Results") -> str:
    """One line: the design, its annual cost, who verified it and the verdict."""
    z = res.sizing or {}
    units = design_units(z, res.scenario)
    cost = _cost(z)
    by, verdict = _verified(res)
    unit = duration_unit(u["duration_h"] for u in units)
    return (f"design: {'; '.join(_unit_text(u, unit) for u in units) or 'no storage'}"
            + (f"; annual cost {cost:,.0f} USD/yr" if cost is not None else "")
            + f"; verified by {by}: compliant {verdict}")


def design_html(res: "Results") -> str:
    """The report's header block of a size run ("" for a plain run)."""
    z = res.sizing
    if not z:
        return ""
    units = design_units(z, res.scenario)
    cost = _cost(z)
    by, verdict = _verified(res)
    unit = duration_unit(u["duration_h"] for u in units)
    techs = technology_rows(units, res.scenario)

    def marks(t: dict) -> str:
        if t["unverified"] is None:
            return "the scenario's"
        return ", ".join(t["unverified"]) if t["unverified"] else "none"

    rows = "".join(
        f"<tr><td>{html.escape(u['name'])}</td><td class='txt'>{html.escape(str(t['technology']))}</td>"
        f"<td>{u['p_mw']:.4g}</td><td>{u['e_mwh']:.4g}</td>"
        f"<td>{'–' if u['duration_h'] is None else format(u['duration_h'] * unit[1], ',.4g')}</td>"
        f"<td>{t['cost_year'] or '–'}</td><td class='txt'>{html.escape(marks(t))}</td></tr>"
        for u, t in zip(units, techs))
    table = ("<table><tr><th>storage</th><th>technology</th><th>P [MW]</th><th>E [MWh]</th>"
             f"<th>duration [{unit[0]}]</th><th>cost year (USD of)</th><th>unverified figures</th></tr>"
             f"{rows}</table>") if units else "<p>No storage sized.</p>"
    note = cost_year_note({t["name"]: t["cost_year"] for t in techs})
    table += ("<p>Cost years: " + html.escape(note or COST_YEAR_POLICY) + ". Figures of a technology are "
              "marked verified (read in its source) or unverified (a placeholder; "
              "<code>facility models</code> lists them).</p>") if units else ""
    fs = _foresight_text(z)
    return ("<div class='design'><h2>Design</h2>" + table
            + (f"<p>Annual cost <b>{cost:,.0f} USD/yr</b> (the objective).</p>" if cost is not None else "")
            + f"<p>Verified by <b>{html.escape(str(by))}</b>: compliant <b>{html.escape(verdict)}</b>."
            + (f" {html.escape(fs[0].upper() + fs[1:])}." if fs else "") + "</p></div>")
