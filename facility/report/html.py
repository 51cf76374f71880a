"""A self-contained HTML report of a run: compliance table, metrics, storage, events, plots."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from facility.metrics import _LIMITS
from facility.report.cost import cost_section

if TYPE_CHECKING:
    from facility.results import Results

__all__ = ["render_report", "compliance_rows"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.ok{background:#e5f5e5}.bad{background:#fbe3e3}img{max-width:100%;border:1px solid #eee}
"""


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return html.escape(str(v))


def compliance_rows(res: "Results") -> list[tuple[str, float, float | None, float, bool]]:
    """``(limit, limit value, raw metric, pcc metric, ok)`` for every limit that is set."""
    spec = res.scenario.spec
    rows = []
    comp = res.metrics["compliance"]
    for limit_key, metric_key in _LIMITS.items():
        limit = getattr(spec, limit_key)
        if limit is not None:
            rows.append((limit_key, limit, res.metrics["raw"][metric_key], res.metrics["pcc"][metric_key],
                         comp[limit_key]))
    for b in spec.bands:
        rows.append((f"band_{b.name} ({b.min_hz:g}–{b.max_hz:g} Hz peak)", b.max_peak_mw,
                     res.metrics["raw"]["band_peaks_mw"][b.name], res.metrics["pcc"]["band_peaks_mw"][b.name],
                     comp[f"band_{b.name}"]))
    return rows


def _table(rows: list[list], head: list[str]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cls = ""
        if isinstance(r[-1], bool):
            cls = ' class="ok"' if r[-1] else ' class="bad"'
        out.append(f"<tr{cls}>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def render_report(res: "Results", images: list[tuple[str, str]]) -> str:
    """The HTML text of ``report.html``."""
    m = res.metrics
    sc = res.scenario
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>facility: {html.escape(sc.name)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(sc.name)}</h1>",
             f"<p>{html.escape(sc.description)}</p>" if sc.description else "",
             f"<p>{len(sc.jobs)} job(s), {sum(j.n_gpus for j in sc.jobs):,} GPUs, horizon {sc.time.horizon_s:g} s "
             f"at dt {sc.time.dt_s:g} s; controller <b>{sc.controller.kind}</b>. "
             f"Compliant: <b>{'yes' if m['compliance']['compliant'] else 'no'}</b>.</p>"]
    rows = compliance_rows(res)
    parts.append("<h2>Compliance</h2>")
    if rows:
        parts.append(_table([list(r) for r in rows], ["limit", "limit value", "raw", "pcc", "ok"]))
    else:
        parts.append("<p>No spec limit is set.</p>")
    keys = [k for k in m["pcc"] if not isinstance(m["pcc"][k], dict)]
    parts.append("<h2>Power metrics</h2>")
    parts.append(_table([[k, m["raw"][k], m["pcc"][k]] for k in keys], ["metric", "raw", "pcc"]))
    for section in ("energy", "training", "electrical", "gpu"):
        flat = {k: v for k, v in m.get(section, {}).items() if not isinstance(v, dict)}
        if flat:
            parts.append(f"<h2>{section.capitalize()}</h2>")
            parts.append(_table([[k, v] for k, v in flat.items()], ["metric", "value"]))
    if m.get("storage"):
        names = list(m["storage"])
        keys = sorted({k for n in names for k in m["storage"][n]})
        parts.append("<h2>Storage</h2>")
        parts.append(_table([[k] + [m["storage"][n].get(k, "") for n in names] for k in keys], ["metric"] + names))
    parts.append(cost_section(res))
    if res.sizing:
        parts.append("<h2>Sizing</h2>")
        flat = []
        for k, v in res.sizing.items():
            if k in ("cost", "mix", "verification"):
                continue  # in the cost section
            if isinstance(v, dict):
                flat += [[f"{k}.{kk}", vv] for kk, vv in v.items()]
            else:
                flat.append([k, v])
        parts.append(_table(flat, ["quantity", "value"]))
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
        parts.append(f"<h2>Events ({len(res.events)})</h2>")
        shown = res.events[:200]
        parts.append(_table([[e.get("t_s", ""), e.get("kind", ""), e.get("detail", e.get("job", ""))] for e in shown],
                            ["t [s]", "kind", "detail"]))
        if len(res.events) > len(shown):
            parts.append(f"<p>… {len(res.events) - len(shown)} more in events.json</p>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
