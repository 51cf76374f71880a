"""The sweep table: one row per case, its overrides and every metric under a dot key."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from facility.config.load import parse_override

__all__ = ["flatten", "META_COLUMNS", "build_table", "write_table"]

#: Leading columns of every sweep table, in this order.
META_COLUMNS = ("case_id", "index", "status", "error", "error_type", "wall_s", "case_s",
                "strategy", "spec_name")

#: Order of the metric blocks (the rest follow in the order met).
_BLOCK_ORDER = ("raw", "pcc", "energy", "storage", "electrical", "training", "compliance",
                "compliance_margin", "cost", "sizing")


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict → ``{"a.b.c": leaf}``; list items get their index as a key part.

    Examples
    --------
    >>> flatten({"pcc": {"p_max_mw": 3.0}, "compliance": {"compliant": True}})
    {'pcc.p_max_mw': 3.0, 'compliance.compliant': True}
    """
    out: dict[str, Any] = {}
    for key, val in tree.items():
        name = f"{prefix}{key}"
        if isinstance(val, Mapping):
            out.update(flatten(val, name + "."))
        elif isinstance(val, (list, tuple)):
            out.update(flatten({str(i): v for i, v in enumerate(val)}, name + "."))
        else:
            out[name] = val
    return out


def _typed(key: str, text: str) -> Any:
    try:
        return parse_override(f"{key}={text}")[1]
    except Exception:
        return text


def _row(record: Mapping[str, Any], override_keys: list[str]) -> dict[str, Any]:
    result = dict(record.get("result") or {})
    row: dict[str, Any] = {
        "case_id": record["case_id"],
        "index": record["index"],
        "status": record["status"],
        "error": record.get("error", ""),
        "error_type": record.get("error_type", ""),
        "wall_s": record.get("wall_s", math.nan),
        "case_s": record.get("case_s", math.nan),
        "strategy": result.pop("strategy", None),
        "spec_name": result.pop("spec_name", None),
    }
    overrides = record.get("overrides") or {}
    for key in override_keys:
        row[key] = _typed(key, overrides[key]) if key in overrides else None
    ordered = {k: result[k] for k in _BLOCK_ORDER if k in result}
    ordered.update({k: v for k, v in result.items() if k not in ordered})
    for key, val in flatten(ordered).items():
        if key in row:  # an override key that is also a metric name: keep both
            key = f"metric.{key}"
        row[key] = val
    return row


def _clean_column(col: pd.Series) -> pd.Series:
    """Give a column one type parquet can store (bool with gaps → boolean, mixed → str)."""
    if col.dtype != object:
        return col
    vals = [v for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return col.astype("float64")
    if all(isinstance(v, bool) for v in vals):
        return col.map(lambda v: v if isinstance(v, bool) else pd.NA).astype("boolean")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return pd.to_numeric(col, errors="coerce")
    if all(isinstance(v, str) for v in vals):
        return col.map(lambda v: v if isinstance(v, str) else None)
    return col.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))


def build_table(records: Iterable[Mapping[str, Any]], override_keys: list[str]) -> pd.DataFrame:
    """The sweep table from case records (see :func:`facility.sweep.worker.execute_case`).

    Parameters
    ----------
    records : iterable of dict
        ``case.json`` records.
    override_keys : list of str
        Swept keys, in ``--set`` order; each becomes a column of typed values.

    Returns
    -------
    pandas.DataFrame
        Sorted by ``index``: :data:`META_COLUMNS`, the override columns, then the flattened
        result (metrics blocks, ``compliance_margin.*``, ``cost.*``, ``sizing.*``); a metric a
        case lacks is missing (NaN / <NA>).
    """
    rows = [_row(r, override_keys) for r in sorted(records, key=lambda r: r["index"])]
    if not rows:
        return pd.DataFrame(columns=list(META_COLUMNS) + list(override_keys))
    columns: dict[str, None] = {}
    for r in rows:
        columns.update(dict.fromkeys(r))
    df = pd.DataFrame.from_records(rows, columns=list(columns))
    for c in df.columns:
        df[c] = _clean_column(df[c])
    return df.reset_index(drop=True)


def write_table(df: pd.DataFrame, out_dir: Path) -> tuple[Path, Path]:
    """Write ``sweep.parquet`` and ``sweep.csv`` atomically (temporary file + rename)."""
    out_dir = Path(out_dir)
    paths = []
    for name, writer in (("sweep.parquet", lambda p: df.to_parquet(p, index=False)),
                         ("sweep.csv", lambda p: df.to_csv(p, index=False))):
        final = out_dir / name
        tmp = out_dir / f".{name}.tmp-{os.getpid()}"
        writer(tmp)
        os.replace(tmp, final)
        paths.append(final)
    return paths[0], paths[1]
