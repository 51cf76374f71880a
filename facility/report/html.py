"""A self-contained HTML report of a run: compliance table, electrical limits, metrics, storage,
events, plots. Numbers are shown in engineering formats (:func:`fmt_number`)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from facility.electrical.limits import limit_rows, violation_lines
from facility.grid_impact.metrics import LIMIT_METRIC
from facility.metrics import LIMIT_METRICS, margin_of, verdict_text
from facility.report.cost import cost_section
from facility.report.design import design_html
from facility.report.events import event_text, events_summary
from facility.report.grid_replay import grid_impact_section
from facility.report.numbers import fmt_number

if TYPE_CHECKING:
    from facility.cosim.results import Results

__all__ = ["render_report", "compliance_rows", "electrical_rows", "fmt_number"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
td.txt{text-align:left}.ok{background:#e5f5e5}.bad{background:#fbe3e3}.warn{background:#fff1cc}img{max-width:100%;border:1px solid #eee}
.alert{border:2px solid #c62828;background:#fbe3e3;padding:0.6em 1em;margin:1em 0}.alert h2{margin-top:0;color:#c62828}
"""


#: Headings of the metric sections (an acronym stays upper case: "GPU", not "Gpu").
_HEADINGS = {"energy": "Energy", "training": "Training", "electrical": "Electrical", "gpu": "GPU"}


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) or (isinstance(v, int) and abs(v) >= 10_000):
        return fmt_number(float(v))
    return html.escape(str(v))


def compliance_rows(res: "Results") -> list[tuple[str, float, float | None, float, bool]]:
    """``(limit, limit value, raw metric, pcc metric, ok)`` for every limit that is set; ``ok`` is
    ``"cannot judge"`` for a limit the data cannot decide (``metrics['undecided']``)."""
    spec = res.scenario.spec
    rows = []
    comp = res.metrics["compliance"]
    for limit_key, metric_key in LIMIT_METRICS.items():
        limit = getattr(spec, limit_key)
        if limit is not None:
            rows.append((limit_key, limit, res.metrics["raw"][metric_key], res.metrics["pcc"][metric_key],
                         comp.get(limit_key, "cannot judge")))
    for b in spec.bands:
        rows.append((f"band_{b.name} ({b.min_hz:g}–{b.max_hz:g} Hz peak)", b.max_peak_mw,
                     res.metrics["raw"]["band_peaks_mw"][b.name], res.metrics["pcc"]["band_peaks_mw"][b.name],
                     comp.get(f"band_{b.name}", "cannot judge")))
    if "grid_impact" in res.metrics:
        gi, cfg = res.metrics["grid_impact"], res.scenario.grid_impact
        for row, (limit_key, metric_key) in LIMIT_METRIC.items():
            if row in comp:
                rows.append((row, getattr(cfg, limit_key), gi["raw"][metric_key], gi[metric_key], comp[row]))
    return rows


def ride_through_html(res: "Results") -> list[str]:
    """The ride-through section (runs with ``[[grid_events]]``): its rows, one line per sag."""
    rt = res.metrics.get("ride_through")
    if not rt:
        return []
    comp = res.metrics["compliance"]
    out = ["<h2>Grid events and ride-through</h2>"]
    rows = [[k, comp[k]] for k in ("ride_through_connected", "ride_through_recovery", "ride_through_max_load_loss_mw")
            if k in comp]
    rows += [[f"{k}: cannot judge (the horizon ends too early)", "-"] for k in res.metrics.get("undecided", {})
             if k.startswith("ride_through")]
    if rows:
        out.append(_table(rows, ["ride-through row", "ok"]))
    else:
        out.append("<p>The spec sets no ride-through curve ([spec.ride_through]); figures only.</p>")
    sags = rt.get("sags", {})
    cols = ["start_s", "duration_s", "min_vm_pu", "within_curve", "connected", "recovery_s", "load_loss_mw",
            "disconnected_mw"]
    if sags:
        out.append(_table([[i] + [sag.get(c, "-") for c in cols] for i, sag in sags.items()], ["sag"] + cols,
                          ok_col=False))
    ups = rt.get("ups", {})
    out.append(_table([[k, v] for k, v in ups.items()] + [[f"ups_sizing.{k}", v] for k, v in rt.get("ups_sizing", {}).items()
                                                          if not isinstance(v, dict)], ["UPS", "value"], ok_col=False))
    return out


def _table(rows: list[list], head: list[str], ok_col: bool = True, bad_rows: tuple = ()) -> str:
    """An HTML table. ``ok_col``: a bool in the last column means "limit held" (green) or not
    (red); otherwise rows whose first cell is in ``bad_rows`` (e.g. ``saturated``) are marked
    where a value is true (amber), never green."""
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cls = ""
        if ok_col and isinstance(r[-1], bool):
            cls = ' class="ok"' if r[-1] else ' class="bad"'
        cells = []
        for c in r:
            mark = ["warn"] if (not ok_col and r[0] in bad_rows and c is True) else []
            if isinstance(c, str) and not c[:1].isdigit() and c[:1] not in "-−+":
                mark.append("txt")
            attr = f' class="{" ".join(mark)}"' if mark else ""
            cells.append(f"<td{attr}>{_fmt(c)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def electrical_rows(res: "Results") -> list[list]:
    """``[limit, grid key, limit value, worst, time beyond [s], ok]`` of every electrical limit."""
    comp = res.metrics.get("electrical_compliance", {})
    el = res.metrics.get("electrical", {})
    dur = comp.get("violation_s", {})
    worst = {"min_vm_pu": "min_vm_mv_pu", "max_vm_pu": "max_vm_mv_pu", "min_lv_vm_pu": "min_vm_lv_pu",
             "max_lv_vm_pu": "max_vm_lv_pu"}
    rows = []
    for row, _, sense, limit, label in limit_rows(res.scenario.grid):
        if row not in comp:
            continue
        unit = "pu" if row.endswith("_pu") else "%"
        rows.append([f"{label} ({'≥' if sense == 'min' else '≤'})", row, f"{limit:g} {unit}",
                     el.get(worst.get(row, row), float("nan")), dur.get(row, 0.0), bool(comp[row])])
    return rows


def _flat_rows(tree: dict, prefix: str = "") -> list[list]:
    """``[dotted key, value]`` rows of a nested dict; a list of numbers joined, a list of
    dicts one row per item (``key.i``)."""
    rows = []
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            rows += _flat_rows(v, key + ".")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                rows += _flat_rows(x, f"{key}.{i}.")
        elif isinstance(v, list):
            rows.append([key, ", ".join(fmt_number(x) if isinstance(x, (int, float)) else str(x) for x in v)])
        else:
            rows.append([key, v])
    return rows


def render_report(res: "Results", images: list[tuple[str, str]]) -> str:
    """The HTML text of ``report.html``."""
    m = res.metrics
    sc = res.scenario
    und = m.get("undecided", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>facility: {html.escape(sc.name)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(sc.name)}</h1>",
             design_html(res),     # a size run leads with its design
             f"<p>{html.escape(sc.description)}</p>" if sc.description else "",
             f"<p>{len(sc.jobs)} job(s), {sum(j.n_gpus for j in sc.jobs):,} GPUs, horizon {sc.time.horizon_s:g} s "
             f"at dt {sc.time.dt_s:g} s; controller <b>{sc.controller.kind}</b>. "
             f"Compliant with the utility spec: <b>{html.escape(verdict_text(m['compliance'], und))}</b>; "
             f"electrical limits: <b>{'held' if m.get('electrical_compliance', {}).get('compliant', True) else 'violated'}"
             f"</b>.</p>"]
    if und:
        why = {e["detail"] for e in res.events if e.get("kind") == "warning" and "cannot" in str(e.get("detail", ""))}
        parts.append(f"<div class='alert'><h2>Cannot judge: {html.escape(', '.join(sorted(und)))}</h2>"
                     f"<p>The load data cannot decide these limits, so they are not rows of the verdict "
                     f"(<code>undecided.&lt;limit&gt;</code> in metrics.json, <code>compliance.all_decided</code> "
                     f"false). Why:</p><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in sorted(why))
                     + "</ul></div>")
    el_comp = m.get("electrical_compliance", {})
    if not el_comp.get("compliant", True):
        items = "".join(f"<li>{html.escape(x)}</li>" for x in violation_lines(m, sc.grid))
        parts.append(f"<div class='alert'><h2>Electrical limits violated</h2><ul>{items}</ul>"
                     f"<p>Times of each stretch: the events below (kind <code>electrical_limit</code>) and "
                     f"<code>events.json</code>; per step: <code>timeseries.parquet</code> and the electrical "
                     f"plot.</p></div>")
    rows = compliance_rows(res)
    parts.append("<h2>Compliance</h2>")
    if rows:
        margins = m["compliance"].get("margins") or {}
        table = []
        for limit, lim, raw, pcc, ok in rows:
            row = limit.split(" ", 1)[0]
            if row in margins:
                _, _, mg, unit = margin_of(margins[row])
            else:
                mg, unit = float("nan"), ""
            table.append([limit, unit, lim, raw, pcc, mg, ok])
        parts.append("<p>margin = limit − pcc value, in the limit's unit (negative: violated by that much; "
                     "<code>compliance.margins</code> in metrics.json).</p>")
        parts.append(_table(table, ["limit", "unit", "limit value", "raw", "pcc", "margin", "ok"]))
    else:
        parts.append("<p>No spec limit is set.</p>")
    parts.extend(ride_through_html(res))
    erows = electrical_rows(res)
    if erows:
        parts.append("<h2>Electrical limits</h2>")
        parts.append(f"<p>Separate from the utility spec above: the facility's own equipment and voltage "
                     f"bands ({'all held' if el_comp.get('compliant', True) else 'violated'}).</p>")
        parts.append(_table(erows, ["limit", "compliance row", "limit value", "worst", "time beyond [s]", "ok"]))
    keys = [k for k in m["pcc"] if not isinstance(m["pcc"][k], dict)]
    parts.append("<h2>Power metrics</h2>")
    parts.append(_table([[k, m["raw"][k], m["pcc"][k]] for k in keys], ["metric", "raw", "pcc"]))
    for section in ("energy", "training", "electrical", "gpu"):
        flat = {k: v for k, v in m.get(section, {}).items() if not isinstance(v, dict)}
        if section == "training" and isinstance(m.get("training", {}).get("crashes"), dict):
            # job crashes (docs/failures.md): count, lost training [s, iterations], down time [s]
            flat.update({f"crashes.{k}": v for k, v in m["training"]["crashes"].items()
                         if not isinstance(v, dict)})
        if flat:
            parts.append(f"<h2>{_HEADINGS.get(section, section.capitalize())}</h2>")
            parts.append(_table([[k, v] for k, v in flat.items()], ["metric", "value"]))
    if m.get("storage"):
        names = list(m["storage"])
        keys = sorted({k for n in names for k in m["storage"][n]})
        parts.append("<h2>Storage</h2>")
        parts.append(_table([[k] + [m["storage"][n].get(k, "") for n in names] for k in keys], ["metric"] + names,
                            ok_col=False, bad_rows=("saturated",)))
    parts.append(cost_section(res))
    if res.sizing:
        parts.append("<h2>Sizing</h2>")
        flat = _flat_rows({k: v for k, v in res.sizing.items()
                           if k not in ("cost", "mix", "verification")})  # those: the cost section
        parts.append(_table(flat, ["quantity", "value"], ok_col=False))
    if "grid_impact" in m:
        parts.append(grid_impact_section(res))
    for name, caption in images:
        parts.append(f"<figure><img src='{html.escape(name)}' alt='{html.escape(caption)}'>"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    codesign = [e for e in res.events if str(e.get("kind", "")).startswith("codesign")]
    if codesign:
        engaged = res.metrics.get("gpu", {}).get("engaged_frac", 0.0)
        parts.append("<h2>Co-design: when and why GPU controls took over</h2>")
        parts.append(f"<p>GPU controls were engaged {100 * engaged:.1f} % of the horizon "
                     f"(shaded in the power plot).</p>")
        parts.append(_table([[e.get("t_s", ""), e.get("kind", "").removeprefix("codesign_"), e.get("detail", "")]
                             for e in codesign[:200]], ["t [s]", "action", "reason"]))
    if res.events:
        comp_ok = m["compliance"].get("compliant") if not und else None
        parts.append(f"<h2>Events ({len(res.events)})</h2>")
        summary = events_summary(res.events, comp_ok)
        if summary:
            parts.append(f"<p>{html.escape(summary)}</p>")
        shown = res.events[:200]
        parts.append(_table([[e.get("t_s", ""), e.get("kind", ""), event_text(e, comp_ok)] for e in shown],
                            ["t [s]", "kind", "what happened"]))
        if len(res.events) > len(shown):
            parts.append(f"<p>… {len(res.events) - len(shown)} more in events.json</p>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
