"""Pareto figure (PNG) and the self-contained HTML page of a sweep study."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["pareto_png", "pareto_html", "design_map_png"]

_DEFINITIONS = """
<ul>
<li><b>storage cost</b> <code>cost.storage_capex_usd</code> = Σ over storages of
 1000 · (p_rated_mw · cost_usd_per_kw + e_rated_mwh · cost_usd_per_kwh) [USD]</li>
<li><b>energy overhead</b> <code>energy.energy_overhead_frac</code> = pcc_restored_mwh / raw_mwh − 1 [frac]:
 pcc_restored_mwh is the PCC energy with every storage returned to its initial charge (refilled at
 1/η_c, a surplus credited at η_d), so spending a storage's initial charge is no saving</li>
<li><b>compliance margin</b> <code>compliance_margin.min</code> = min over the limits the spec
 sets of (1 − metric / limit) [frac]; ≥ 0: every limit holds with that headroom, &lt; 0: the worst
 limit is exceeded by that fraction</li>
<li><b>total cost</b> <code>cost.total_usd</code> = storage cost + energy overhead per year ·
 energy price · annuity factor (optimize.lifetime_years, optimize.discount_rate_frac) [USD]</li>
<li>Pareto front (per spec): no other case is at least as good in all three objectives and better in one.</li>
</ul>
"""


def pareto_png(front: pd.DataFrame, cheapest: pd.DataFrame, path: Path) -> Path:
    """Storage cost vs energy overhead per spec, coloured by compliance margin, front circled.

    Parameters
    ----------
    front : DataFrame
        Output of :func:`facility.sweep.study.pareto_front`.
    cheapest : DataFrame
        Output of :func:`facility.sweep.study.cheapest_compliant` (marked with a star).
    path : pathlib.Path
        PNG file.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    specs = sorted(front["spec_name"].dropna().unique().tolist()) or ["custom"]
    n = len(specs)
    ncol = min(3, n)
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.0 * ncol + 1.0, 3.9 * nrow + 0.4), squeeze=False,
                             layout="constrained")
    norm = TwoSlopeNorm(vmin=-1.0, vcenter=0.0, vmax=1.0)
    sc = None
    for ax, spec in zip(axes.flat, specs):
        g = front[front["spec_name"] == spec]
        x = g["cost.storage_capex_usd"].to_numpy(float) / 1e6
        y = 100 * g["energy.energy_overhead_frac"].to_numpy(float)
        m = np.clip(g["compliance_margin.min"].to_numpy(float), -1.0, 1.0)
        sc = ax.scatter(x, y, c=m, cmap="RdYlGn", norm=norm, s=28, edgecolors="none", zorder=2)
        p = g["pareto"].to_numpy(bool)
        ax.scatter(x[p], y[p], s=90, facecolors="none", edgecolors="black", linewidths=1.0,
                   label="Pareto front", zorder=3)
        c = cheapest[(cheapest["spec_name"] == spec) & cheapest["case_id"].notna()] if "case_id" in cheapest else cheapest.iloc[:0]
        if len(c):
            ax.scatter(c["cost.storage_capex_usd"].astype(float) / 1e6, 100 * c["energy.energy_overhead_frac"].astype(float),
                       marker="*", s=260, color="gold", edgecolors="black", zorder=4,
                       label="cheapest compliant (total cost)")
        ax.set_title(str(spec))
        ax.set_xlabel("storage cost [M USD]")
        ax.set_ylabel("energy overhead [%]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if sc is not None:
        cb = fig.colorbar(sc, ax=axes.ravel().tolist(), shrink=0.9)
        cb.set_label("compliance margin min(1 − metric/limit) (clipped to ±1)")
    fig.suptitle("Sweep: storage cost vs energy overhead vs compliance margin")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}"
    return str(v)


def _table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pareto_html(front: pd.DataFrame, cheapest: pd.DataFrame, strategies: pd.DataFrame, png: Path,
                path: Path, columns: list[str]) -> Path:
    """One self-contained page: definitions, the PNG (inline), cheapest design per spec,
    strategy comparison per spec, and the Pareto-front cases."""
    img = base64.b64encode(Path(png).read_bytes()).decode()
    pts = front[front["pareto"]][[c for c in columns if c in front.columns]]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>facility sweep study</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}th{{background:#eee}}</style></head>
<body><h1>Sweep study</h1>
<p>{int((front['status'] == 'ok').sum())} successful cases.</p>
<h2>Definitions</h2>{_DEFINITIONS}
<h2>Pareto front</h2><img alt="Pareto front" src="data:image/png;base64,{img}" style="max-width:100%">
<h2>Cheapest compliant design per spec</h2>{_table(cheapest)}
<h2>Mitigation strategies per spec</h2>{_table(strategies)}
<h2>Cases on the Pareto front</h2>{_table(pts)}
</body></html>
"""
    Path(path).write_text(page)
    return Path(path)


def design_map_png(df: pd.DataFrame, row: str, col: str, path: Path, *,
                   value: str = "compliance_margin.min", cost: str = "cost.total_usd") -> Path:
    """One heat map per spec over two design axes: colour = compliance margin, text = cost.

    Parameters
    ----------
    df : DataFrame
        Sweep table (``ok`` rows are used) with the label columns ``row`` and ``col``.
    row, col : str
        Columns whose values label the rows and columns of each map (in order of appearance).
    path : pathlib.Path
        PNG file.
    value : str
        Column that colours the cells (clipped to ±1; ≥ 0 is compliant up to tolerance).
    cost : str
        Column printed in each cell [USD → M USD]; compliant cells are marked with "ok".
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    ok = df[df["status"] == "ok"]
    specs = sorted(ok["spec_name"].dropna().unique().tolist())
    rows = list(dict.fromkeys(ok[row].tolist()))
    cols = list(dict.fromkeys(ok[col].tolist()))
    ncol = min(3, max(1, len(specs)))
    nrow = math.ceil(len(specs) / ncol) if specs else 1
    fig, axes = plt.subplots(nrow, ncol, figsize=(1.1 * len(cols) * ncol + 2.5, 0.8 * len(rows) * nrow + 2.0),
                             squeeze=False, layout="constrained")
    norm = TwoSlopeNorm(vmin=-1.0, vcenter=0.0, vmax=1.0)
    im = None
    for ax, spec in zip(axes.flat, specs):
        g = ok[ok["spec_name"] == spec]
        z = np.full((len(rows), len(cols)), np.nan)
        for _, r in g.iterrows():
            i, j = rows.index(r[row]), cols.index(r[col])
            z[i, j] = np.clip(float(r[value]), -1, 1)
            mark = "ok\n" if bool(r.get("compliance.compliant", False)) else ""
            ax.text(j, i, f"{mark}{float(r[cost]) / 1e6:.1f}", ha="center", va="center", fontsize=7)
        im = ax.imshow(z, cmap="RdYlGn", norm=norm, aspect="auto")
        ax.set_xticks(range(len(cols)), [str(c) for c in cols], rotation=30, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=7)
        ax.set_xlabel(col, fontsize=8)
        ax.set_ylabel(row, fontsize=8)
        ax.set_title(str(spec), fontsize=9)
    for ax in list(axes.flat)[len(specs):]:
        ax.set_visible(False)
    if im is not None:
        cb = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.9)
        cb.set_label(f"{value} (clipped to ±1)")
    fig.suptitle(f"cell text: {cost} [M USD]; 'ok' = compliant", fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
