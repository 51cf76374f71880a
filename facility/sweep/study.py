"""Study outputs of a sweep table: Pareto front, cheapest compliant design, strategy comparison.

Objectives (docs/studies.md):

* storage cost ``cost.storage_capex_usd`` [USD] — minimize;
* energy overhead ``energy.energy_overhead_frac`` [frac] — minimize;
* compliance margin ``compliance_margin.min`` = min over the spec's set limits of
  1 − metric / limit [frac] — maximize (≥ 0 ⇔ every limit holds, up to the metrics' tolerance).

The front is computed per utility spec (``spec_name``): margins against different specs do not
compare.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from facility.sweep.figures import pareto_html, pareto_png
from facility.sweep.table import META_COLUMNS

__all__ = [
    "OBJECTIVES",
    "pareto_mask",
    "pareto_front",
    "cheapest_compliant",
    "strategy_table",
    "write_study_outputs",
]

#: column → sense of the three Pareto objectives.
OBJECTIVES = {
    "cost.storage_capex_usd": "min",
    "energy.energy_overhead_frac": "min",
    "compliance_margin.min": "max",
}

COMPLIANT = "compliance.compliant"
TOTAL = "cost.total_usd"


def pareto_mask(values: np.ndarray, senses: list[str]) -> np.ndarray:
    """Rows of ``values`` that no other row dominates.

    Row a dominates row b when a is at least as good in every objective and strictly better in
    one (``"min"``: smaller is better, ``"max"``: larger). Rows with a NaN are never on the
    front. Equal rows are all kept.

    Parameters
    ----------
    values : ndarray, shape (n, k)
    senses : list of {"min", "max"}, length k

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != len(senses):
        raise ValueError(f"values must be (n, {len(senses)}), got {v.shape}")
    sign = np.array([1.0 if s == "min" else -1.0 for s in senses])
    v = v * sign  # everything minimized
    ok = np.all(np.isfinite(v), axis=1)
    mask = np.zeros(len(v), dtype=bool)
    idx = np.flatnonzero(ok)
    w = v[idx]
    on = np.ones(len(w), dtype=bool)
    for start in range(0, len(w), 512):  # (chunk, n, k) comparisons stay small
        blk = w[start:start + 512]
        le = np.all(w[None, :, :] <= blk[:, None, :], axis=2)
        lt = np.any(w[None, :, :] < blk[:, None, :], axis=2)
        on[start:start + 512] = ~np.any(le & lt, axis=1)
    mask[idx] = on
    return mask


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    need = list(OBJECTIVES) + [COMPLIANT, TOTAL, "spec_name"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise KeyError(f"sweep table lacks {', '.join(missing)}")
    return df[df["status"] == "ok"]


def pareto_front(df: pd.DataFrame) -> pd.DataFrame:
    """The table with a bool column ``pareto`` (on the front of its spec), only ``ok`` rows."""
    ok = _ok(df).copy()
    ok["pareto"] = False
    for _, grp in ok.groupby("spec_name", sort=True, dropna=False):
        m = pareto_mask(grp[list(OBJECTIVES)].to_numpy(dtype=float), list(OBJECTIVES.values()))
        ok.loc[grp.index, "pareto"] = m
    return ok


def _override_columns(df: pd.DataFrame) -> list[str]:
    first_metric = next((i for i, c in enumerate(df.columns)
                         if "." in c and c.split(".")[0] in ("raw", "pcc", "energy", "storage", "electrical",
                                                             "training", "compliance", "compliance_margin",
                                                             "cost", "sizing", "metric")), len(df.columns))
    return [c for c in df.columns[:first_metric] if c not in META_COLUMNS]


def _summary_columns(df: pd.DataFrame) -> list[str]:
    cols = ["spec_name", "case_id", "strategy"] + _override_columns(df)
    cols += [TOTAL, "cost.storage_capex_usd", "cost.energy_usd_per_year", "energy.energy_overhead_frac",
             "compliance_margin.min"]
    return [c for c in dict.fromkeys(cols) if c in df.columns]


def cheapest_compliant(df: pd.DataFrame) -> pd.DataFrame:
    """Per spec, the compliant case with the lowest ``cost.total_usd``.

    Ties go to the lower energy overhead, then the earlier case. A spec without any compliant
    case gets a row with ``case_id`` missing and ``note`` saying so.
    """
    ok = _ok(df)
    rows = []
    for spec, grp in ok.groupby("spec_name", sort=True, dropna=False):
        comp = grp[grp[COMPLIANT].fillna(False).astype(bool)]
        if comp.empty:
            rows.append({"spec_name": spec, "note": f"no compliant case among {len(grp)}"})
            continue
        best = comp.sort_values([TOTAL, "energy.energy_overhead_frac", "index"]).iloc[0]
        row = {c: best[c] for c in _summary_columns(df)}
        row["note"] = f"cheapest of {len(comp)} compliant / {len(grp)} cases"
        rows.append(row)
    return pd.DataFrame(rows, columns=_summary_columns(df) + ["note"])


def strategy_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mitigation strategies per spec: how many cases comply and what the best one costs.

    Columns: spec_name, strategy, n_cases, n_compliant, best_margin (max compliance margin),
    and of the cheapest compliant case of that strategy: case_id, total_usd, storage_capex_usd,
    energy_usd_per_year, energy_overhead_frac.
    """
    ok = _ok(df)
    rows = []
    for (spec, strat), grp in ok.groupby(["spec_name", "strategy"], sort=True, dropna=False):
        comp = grp[grp[COMPLIANT].fillna(False).astype(bool)]
        row = {"spec_name": spec, "strategy": strat, "n_cases": len(grp), "n_compliant": len(comp),
               "best_margin": float(grp["compliance_margin.min"].max())}
        if not comp.empty:
            b = comp.sort_values([TOTAL, "energy.energy_overhead_frac", "index"]).iloc[0]
            row.update(case_id=b["case_id"], total_usd=b[TOTAL], storage_capex_usd=b["cost.storage_capex_usd"],
                       energy_usd_per_year=b["cost.energy_usd_per_year"],
                       energy_overhead_frac=b["energy.energy_overhead_frac"])
        rows.append(row)
    cols = ["spec_name", "strategy", "n_cases", "n_compliant", "best_margin", "case_id", "total_usd",
            "storage_capex_usd", "energy_usd_per_year", "energy_overhead_frac"]
    return pd.DataFrame(rows, columns=cols)


def write_study_outputs(df: pd.DataFrame, out_dir: Path) -> dict[str, Path]:
    """Write pareto.png, pareto.html, pareto.csv, cheapest.csv and strategies.csv to ``out_dir``."""
    out_dir = Path(out_dir)
    front = pareto_front(df)
    cheap = cheapest_compliant(df)
    strat = strategy_table(df)
    paths = {
        "pareto_csv": out_dir / "pareto.csv",
        "cheapest_csv": out_dir / "cheapest.csv",
        "strategies_csv": out_dir / "strategies.csv",
        "pareto_png": out_dir / "pareto.png",
        "pareto_html": out_dir / "pareto.html",
    }
    front[front["pareto"]][_summary_columns(df)].to_csv(paths["pareto_csv"], index=False)
    cheap.to_csv(paths["cheapest_csv"], index=False)
    strat.to_csv(paths["strategies_csv"], index=False)
    pareto_png(front, cheap, paths["pareto_png"])
    pareto_html(front, cheap, strat, paths["pareto_png"], paths["pareto_html"], _summary_columns(df))
    return paths
