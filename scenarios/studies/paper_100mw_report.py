"""Figures and markdown tables of the paper_100mw study from its sweep folder.

Usage: python scenarios/studies/paper_100mw_report.py OUT_DIR [FIG_DIR]
  OUT_DIR  the folder paper_100mw.sh wrote (sweep.parquet, pareto.png, cheapest.csv, ...)
  FIG_DIR  where the PNGs go (default: docs/studies); the markdown tables print to stdout.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd

from facility.sweep import cheapest_compliant, strategy_table
from facility.sweep.figures import design_map_png


def labels(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    on = [v is True or v == 1 for v in df["gpu_smoothing.enabled"]]
    df["GPU floor"] = [f"{f:.0%} TDP" if o else "off" for f, o in zip(df["gpu_smoothing.floor_frac"], on)]
    st = [v is True or v == 1 for v in df["rack_storage.enabled"]]
    df["rack storage"] = [f"{p:g} MW / {1000 * e:g} kWh" if o else "none"
                          for p, e, o in zip(df["rack_storage.p_rated_mw"], df["rack_storage.e_rated_mwh"], st)]
    return df


def md(df: pd.DataFrame) -> str:
    def cell(v):
        if isinstance(v, float):
            return "" if pd.isna(v) else f"{v:.4g}"
        return "" if v is None or v is pd.NA else str(v)

    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "".join("| " + " | ".join(cell(v) for v in row) + " |\n" for row in df.itertuples(index=False))


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    figs = Path(argv[1]) if len(argv) > 1 else Path("docs/studies")
    figs.mkdir(parents=True, exist_ok=True)
    df = labels(pd.read_parquet(out / "sweep.parquet"))
    design_map_png(df, "GPU floor", "rack storage", figs / "paper_100mw_design_map.png")
    shutil.copyfile(out / "pareto.png", figs / "paper_100mw_pareto.png")
    cheap = labels(cheapest_compliant(df))
    cols = ["spec_name", "case_id", "GPU floor", "rack storage", "cost.storage_capex_usd",
            "energy.energy_overhead_frac", "cost.energy_usd_per_year", "cost.total_usd", "compliance_margin.min", "note"]
    cheap.loc[cheap["case_id"].isna(), ["GPU floor", "rack storage"]] = "—"
    print("## cheapest compliant design per spec\n")
    print(md(cheap[cols]))
    print("## strategies per spec\n")
    print(md(strategy_table(df).drop(columns=["case_id"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
