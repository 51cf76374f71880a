"""The report's cost section for a sizing: what the design costs per year, its mix, and whether
the realized site meets the limits (reads ``Results.sizing``: ``cost``, ``mix``,
``verification`` of :func:`facility.sizing.size_scenario`)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from facility.report.design import NO_TECHNOLOGY, duration_unit

if TYPE_CHECKING:
    from facility.cosim.results import Results

__all__ = ["cost_section"]

_ROWS = (("storage_capex_usd_per_year", "storage capex (annuity)"),
         ("fixed_om_usd_per_year", "storage fixed O&M"),
         ("loss_energy_usd_per_year", "energy of conversion losses"),
         ("burn_energy_usd_per_year", "energy burned by GPU floor / dummy load"),
         ("degradation_usd_per_year", "storage degradation"),
         ("slowdown_usd_per_year", "slowdown (value of lost training time)"))


def _num(v, fmt="{:,.0f}") -> str:
    return "–" if v is None else fmt.format(v)




def _lifetime_text(optimize) -> str:
    if optimize.lifetime_years is not None:
        return f"{optimize.lifetime_years:g} years"
    return (f"each storage's calendar life ({optimize.lifetime_or_default_years:g} years where its "
            f"technology gives none)")


def cost_section(res: "Results") -> str:
    """HTML of the cost section, or "" when the run is not a sizing with a cost."""
    sz = res.sizing or {}
    cost = sz.get("cost")
    if not cost:
        return ""
    total = cost["total_usd_per_year"]
    out = ["<h2>Cost of the design</h2>",
           f"<p>Total <b>{total:,.0f} USD per year</b> (capex as an annuity over "
           f"{_lifetime_text(res.scenario.optimize)} at "
           f"{100 * res.scenario.optimize.discount_rate_frac:g} %, energy at "
           f"{res.scenario.optimize.energy_price_usd_per_mwh:g} USD/MWh, the horizon's operation "
           f"repeated all year).</p>",
           "<table><tr><th>cost</th><th>USD/yr</th><th>share</th></tr>"]
    for key, label in _ROWS:
        v = cost.get(key, 0.0)
        share = f"{100 * v / total:.1f} %" if total > 0 else "–"
        out.append(f"<tr><td>{html.escape(label)}</td><td>{v:,.0f}</td><td>{share}</td></tr>")
    out.append("</table>")
    mix = sz.get("mix", {})
    if mix.get("storages"):
        unit = duration_unit(d.get("duration_h") or None for d in mix["storages"].values())
        out.append("<table><tr><th>storage</th><th>technology</th><th>P [MW]</th><th>E [MWh]</th>"
                   f"<th>duration [{unit[0]}]</th><th>cycles/yr</th><th>capex [USD]</th><th>annuity over [yr]</th>"
                   "<th>losses [MWh/yr]</th><th>cost [USD/yr]</th></tr>")
        for n, d in mix["storages"].items():
            dur = d.get("duration_h")
            out.append(f"<tr><td>{html.escape(n)}</td><td>{html.escape(str(d.get('technology') or NO_TECHNOLOGY))}</td>"
                       f"<td>{d['p_rated_mw']:.4g}</td><td>{d['e_rated_mwh']:.4g}</td>"
                       f"<td>{_num(None if dur is None else dur * unit[1], '{:,.4g}')}</td><td>{_num(d.get('equivalent_full_cycles_per_year'), '{:,.4g}')}</td>"
                       f"<td>{d['capex_usd']:,.0f}</td><td>{_num(d.get('annuity_lifetime_years'), '{:g}')}</td>"
                       f"<td>{d['loss_mwh_per_year']:,.0f}</td>"
                       f"<td>{_num(d.get('cost_usd_per_year'))}</td></tr>")
        out.append("</table>")
    if mix.get("jobs"):
        out.append("<table><tr><th>job</th><th>floor [×TDP]</th><th>cap [×TDP]</th>"
                   "<th>planned burn</th><th>burned [MWh/yr]</th><th>slowdown</th></tr>")
        for j, d in mix["jobs"].items():
            out.append(f"<tr><td>{html.escape(j)}</td><td>{_num(d['floor_frac'], '{:.3g}')}</td>"
                       f"<td>{_num(d['cap_frac'], '{:.3g}')}</td><td>{'yes' if d['planned_burn'] else 'no'}</td>"
                       f"<td>{d['burned_mwh_per_year']:,.0f}</td><td>{100 * d['slowdown_frac']:.3g} %</td></tr>")
        out.append("</table>")
    ver = sz.get("verification")
    if ver:
        ok = "meets" if ver["compliant"] else "does <b>not</b> meet"
        failing = [k for k, v in ver["rows"].items() if not v]
        und = ver.get("undecided", [])
        out.append(f"<p>Verification: the realized site {ok} the limits"
                   + (f" (failing: {html.escape(', '.join(failing))})" if failing else "")
                   + (f"; cannot judge {html.escape(', '.join(und))}" if und else "")
                   + ". Realized by: " + html.escape("; ".join(ver["realized_by"])) + ".</p>")
    return "\n".join(out)
