"""The paper_100mw study in size mode against its design grid: one markdown table.

Usage: python scenarios/studies/paper_100mw_size_report.py SIZE_DIR GRID_DIR
  SIZE_DIR  the folder paper_100mw_size.sh wrote (square/ and stochastic/ sweeps)
  GRID_DIR  the folder paper_100mw.sh wrote (the 24-design grid x 5 specs)

Per spec and workload: the cheapest compliant grid design (docs/studies.md §5), the sized
rack storage (P, E), its cost over the study's 10 years on the same definition
(`cost.total_usd`: capex + the energy of the verification run's overhead), compliance of the
verification run, the optimizer's method and proven gap.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from facility.sweep import cheapest_compliant


def main(argv: list[str]) -> int:
    size_dir, grid_dir = Path(argv[0]), Path(argv[1])
    grid = cheapest_compliant(pd.read_parquet(grid_dir / "sweep.parquet")).set_index("spec_name")
    rows = []
    for wl in ("square", "stochastic"):
        path = size_dir / wl / "sweep.parquet"
        if not path.exists():
            continue
        df = pd.read_parquet(path)
        for _, r in df.iterrows():
            # (a failed case has no spec_name, only the spec it was given)
            spec = r["spec_name"] if isinstance(r.get("spec_name"), str) else r.get("spec")
            g = grid.loc[spec] if spec in grid.index else None
            g_cost = float(g["cost.total_usd"]) if g is not None and pd.notna(g["case_id"]) else float("nan")
            cost = float(r.get("cost.total_usd", float("nan")))
            rows.append({
                "workload": wl, "spec": spec,
                "grid: cheapest compliant": (g["case_id"] if g is not None and pd.notna(g["case_id"]) else "none"),
                "grid cost [M USD]": g_cost / 1e6,
                "sized P [MW]": r.get("sizing.rack_storage.p_rated_mw_opt"),
                "sized E [kWh]": 1000 * r.get("sizing.rack_storage.e_rated_mwh_opt", float("nan")),
                "sized cost [M USD]": cost / 1e6,
                "sized / grid": cost / g_cost if g_cost == g_cost else float("nan"),
                "compliant": (r.get("compliance.compliant") if r.get("status") == "ok"
                              else f"error: {str(r.get('error', ''))[:60]}"),
                "method": r.get("sizing.method"), "gap": r.get("sizing.gap_frac"),
                "case s": r.get("wall_s"),
            })
    out = pd.DataFrame(rows)

    def cell(v):
        if isinstance(v, float):
            return "" if pd.isna(v) else f"{v:.4g}"
        return "" if v is None or v is pd.NA else str(v)

    print("| " + " | ".join(out.columns) + " |\n|" + "---|" * len(out.columns))
    for row in out.itertuples(index=False):
        print("| " + " | ".join(cell(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
