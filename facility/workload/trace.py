"""Replay of a measured GPU power trace: nvidia-smi, DCGM, NVML loggers, ``facility record``.

:func:`load_trace` reads a CSV file, maps its headers at this boundary (one table:
:data:`facility.workload.trace_format.SPELLINGS`, listed in docs/workload.md), groups the rows
of multi-GPU logs into polls, and returns the power of one GPU per poll as a fraction of TDP,
with a :class:`TraceInfo` describing what it read (GPUs, polls, median poll interval, sensor).

Polls. A multi-GPU ``nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv -lms 100``
log has one row per GPU per poll, and the rows of one poll carry timestamps a few ms apart
(a stalled poll: seconds apart). Rows are grouped by the GPU id column(s) (``index``,
``gpu``, ``uuid``, ``pci.bus_id``; with ``hostname`` for several nodes): the k-th row of every
GPU belongs to poll k. Each poll must hold exactly one row per GPU and polls must not
interleave; otherwise the file is refused (an incomplete final poll, as an interrupted logger
leaves it, is dropped and reported). Without an id column (``nvidia-smi --query-gpu=timestamp,
power.draw,utilization.gpu,memory.used``, the usual layout) nvidia-smi still writes the GPUs in
a fixed order, so row r is GPU r mod n of poll r // n; n is ``trace_gpus_per_poll`` or found
from the file's timestamps and repeating ``memory.used`` / ``utilization.gpu`` values
(:mod:`facility.workload.trace_polls`; ambiguous evidence is refused with what it said). A
poll's time is its first row's timestamp. Wide files (one power column per GPU) have one poll
per row. ``[N/A]`` readings are refused unless ``trace_drop_na = true``, which drops them and
fills each from its own GPU's neighbouring polls.

Per poll: ``trace_scale = 'per_gpu'`` averages the GPUs; ``'per_node'`` sums them (the node)
and divides by ``gpus_per_node``, which must then equal the number of GPUs in the file; a
column that is one GPU's power by name (``power.draw``, ``p_gpu_w``, per-GPU columns) is
refused with ``'per_node'``, a node column (``p_node_w``) with ``'per_gpu'``.

Sensor. NVML's ``power.draw`` is a 1-second average on Ampere and newer GPUs
(``power.draw.instant`` is the instantaneous reading); older GPUs report instantaneous power.
``trace_sensor = 'auto'`` decides from the column name, the ``# sensor:`` line that
``facility record`` writes, and the GPU model (the file's ``name`` column or ``# gpu:`` line,
else the job's ``gpu``). An averaged trace is replayed as it is: nothing recovers what the
average removed (a 1-s moving average passes 64 % of a 0.5 Hz swing and nothing at 1, 2, 3 Hz;
it also lags the true power by ~0.5 s); :mod:`facility.workload.trace_checks` warns when the
spec has limits the trace cannot judge.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from facility.config.files import read_text, shown
from facility.errors import ScenarioError
from facility.workload.trace_format import (CELL_POWER_UNITS, CELL_TIME_UNITS, SPELLINGS, Column, Layout,
                                            classify_columns, column_unit, gpu_averages_power,
                                            normalize_header, parse_header_block, polls_by_id,
                                            first_bad_cell, split_cell_units)
from facility.workload.trace_grid import check_time_span, trace_on_grid
from facility.workload.trace_polls import fill_na_per_gpu, polls_by_position
from facility.workload.trace_polls import gpus_per_poll as find_gpus_per_poll

__all__ = ["TIME_COLUMNS", "POWER_COLUMNS", "SENSORS", "Trace", "TraceInfo", "load_trace", "read_trace",
           "trace_on_grid"]

TIME_COLUMNS = tuple(n for n, (role, _) in SPELLINGS.items() if role == "time")
POWER_COLUMNS = tuple(n for n, (role, _) in SPELLINGS.items() if role in ("power", "frac"))
#: Values of ``trace_sensor``.
SENSORS = ("auto", "instant", "average_1s")
_MAX_FRAC = 3.0      # a per-GPU power above 3 x TDP means the scale or the unit is wrong
_MIN_IDLE_FRAC = 0.5  # a trace peaking below half the GPU's idle power: scale or unit wrong
#: Longest cell of a time column read as a date-time (ISO 8601 with nanoseconds and a zone
#: offset has 35 characters). [-]
_MAX_TIME_CHARS = 64


@dataclass(frozen=True)
class TraceInfo:
    """What :func:`load_trace` found in a file.

    Attributes
    ----------
    layout : {'long', 'wide'}
        One row per GPU (or node) per poll, or one power column per GPU.
    grouping : str
        How rows became polls: ``"one row per poll"``, ``"GPU id column 'index'"``,
        ``"rows in GPU order, 8 per poll (timestamps)"``, ``"one column per GPU"``.
    n_gpus, n_polls : int
        GPUs in the file, polls kept.
    median_interval_s, max_gap_s, max_gap_at_s : float
        Median spacing of the polls, the longest one and where it starts. [s]
    duration_s : float
        What the trace covers in replay: last poll time + one median interval. [s]
    power_column : str
        The power header as written (the first one for wide files).
    sensor : {'instant', 'average_1s'}
        The sensor the replay assumes; ``sensor_reason`` says why, ``sensor_assumed`` whether
        nothing in the file or scenario stated it.
    gpu_name : str or None
        GPU model named by the file (``name`` column or ``# gpu:`` line).
    dropped_rows : int
        Rows of an incomplete first or final poll that were dropped.
    p_mean_w, p_max_w : float
        Mean and peak of the per-GPU power after scaling. [W]
    header : dict
        ``# key: value`` lines above the header row.
    na_rows : int
        ``[N/A]`` readings dropped (``trace_drop_na``); each is filled from its own GPU's
        neighbouring polls.
    grouping_evidence : str
        For files without a GPU id column: what the timestamps and repeating columns said.
    """

    path: str
    layout: str
    grouping: str
    n_gpus: int
    n_polls: int
    median_interval_s: float
    max_gap_s: float
    max_gap_at_s: float
    duration_s: float
    power_column: str
    scale: str
    sensor: str
    sensor_reason: str
    sensor_assumed: bool
    gpu_name: str | None
    dropped_rows: int
    p_mean_w: float
    p_max_w: float
    header: dict = field(default_factory=dict)
    na_rows: int = 0
    grouping_evidence: str = ""

    def summary(self) -> str:
        """One line for ``facility validate``."""
        what = (f"{self.n_gpus} GPU(s), {self.grouping}" if self.n_gpus > 1 else "1 GPU or node")
        return (f"{Path(self.path).name}: {what}; {self.n_polls:,} polls, median interval "
                f"{1e3 * self.median_interval_s:.4g} ms, {self.duration_s:.4g} s; column "
                f"{self.power_column!r} ({self.scale}): mean {self.p_mean_w:.0f} W, peak {self.p_max_w:.0f} W "
                f"per GPU; sensor {self.sensor} ({self.sensor_reason})")


@dataclass(frozen=True)
class Trace:
    """Per-poll power of one GPU: ``t_s`` (N,) from the first poll [s], ``p_frac`` (N,) [frac of
    TDP], and ``info``. The arrays are read-only (they may be shared through the cache)."""

    t_s: np.ndarray
    p_frac: np.ndarray
    info: TraceInfo


def _where(path: Path, key: str | None) -> str:
    return f"{key}.trace_file = {str(path)!r}" if key else str(path)


def _read_table(path: Path, where: str, key: str | None = None) -> tuple[dict, list[str], pd.DataFrame]:
    """Header block, header cells and the body (all columns by position) of a CSV file.

    The file is read through :func:`facility.config.files.read_text`, the one reader of every
    user file (missing, folder, permission, name too long, NUL, not UTF-8: ScenarioError)."""
    text = read_text(path, key=f"{key}.trace_file" if key else None, what="trace file")
    lines = text.splitlines()
    k = 0
    while k < len(lines) and (not lines[k].strip() or lines[k].lstrip().startswith("#")):
        k += 1
    if k == len(lines):
        raise ScenarioError(f"{where}: not a readable CSV trace (no header row)")
    block = parse_header_block([ln for ln in lines[:k] if ln.strip()])
    try:
        header = next(csv.reader([lines[k]], skipinitialspace=True))
    except csv.Error as exc:          # a header cell over csv's field limit (128 kB)
        raise ScenarioError(f"{where}: not a readable CSV trace: its header row (line {k + 1}, "
                            f"{len(lines[k]):,} characters) is not a CSV header ({exc})") from None
    header = [h.strip() for h in header]
    try:
        body = pd.read_csv(io.StringIO("\n".join(lines[k + 1:])), header=None, names=list(range(len(header))),
                           skipinitialspace=True, comment="#", index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise ScenarioError(f"{where}: not a readable CSV trace ({type(exc).__name__}: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc})") from None
    return block, header, body


#: What nvidia-smi and DCGM write where a reading is missing (dropped with trace_drop_na = true).
NA_TOKENS = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU is lost]")


def _numeric(series: pd.Series, where: str, col: Column, drop_na: bool | None = None) -> np.ndarray:
    """Values of a power column [W] (a ``p_frac`` column: [frac of TDP]).

    A cell may carry its own unit (``312.45 W``, ``0.650 kW``: :data:`CELL_POWER_UNITS`), which
    is converted; a bare number is in the header's unit. A unit that is not one of power (or
    any unit in a fraction column) is refused, naming the row, the value and the unit expected.
    ``drop_na``: True -> NA tokens become NaN; False -> refused with a hint to set
    trace_drop_na; None -> refused (the column cannot take it)."""
    s = series
    na = np.zeros(len(s), dtype=bool)
    frac = col.role == "frac"
    if pd.api.types.is_numeric_dtype(s):
        v = s.to_numpy(dtype=float) * col.factor
    else:  # object under pandas 2, str under pandas 3
        s = s.astype(str).str.strip()
        na = s.isin(NA_TOKENS).to_numpy()
        v, unknown, suffix = split_cell_units(s, 1.0 if frac else col.factor, None if frac else CELL_POWER_UNITS)
        if unknown.any():
            i = int(np.argmax(unknown))
            expected = ("a fraction of TDP, a bare number (no unit)" if frac else
                        f"a bare number in {column_unit(col)} (the header's unit) or one with a unit of "
                        f"power: {', '.join(_CELL_UNITS_SHOWN)}")
            raise ScenarioError(
                f"{where}: column {col.raw!r} at data row {i + 1} reads {shown(series.iloc[i])}: "
                f"unit {suffix[i]!r} is not accepted there ({int(unknown.sum())} such cell(s)); "
                f"expected {expected}")
    bad = ~np.isfinite(v)
    if drop_na:
        bad &= ~na
    if bad.any():
        i = int(np.argmax(bad))
        hint = ""
        if drop_na is False and na.any():
            hint = (f"; {int(na.sum())} of them read {shown(series.iloc[int(np.argmax(na))])} (no reading): set "
                    "trace_drop_na = true on the job to drop them")
        raise ScenarioError(
            f"{where}: column {col.raw!r} has {int(bad.sum())} non-numeric or missing value(s), "
            f"first at data row {i + 1} ({shown(series.iloc[i])}){hint}")
    v[na] = np.nan
    return v


#: How a refusal lists the accepted cell units.
_CELL_UNITS_SHOWN = ("W", "kW", "mW", "MW")


def _times_s(series: pd.Series, where: str, col: str, factor: float) -> np.ndarray:
    num = pd.to_numeric(series, errors="coerce")
    if num.notna().all():
        return num.to_numpy(dtype=float) * factor
    text = series.astype(str).str.strip()
    long = (text.str.len() > _MAX_TIME_CHARS).to_numpy()
    if long.any():            # no date-time is that long; the 'mixed' parser is quadratic in it
        i = int(np.argmax(long))
        raise ScenarioError(f"{where}: time column {col!r} holds neither seconds nor date-times (data row "
                            f"{i + 1}: {shown(series.iloc[i])})")
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*[A-Za-zµ]+", text.iloc[0]):
        # seconds with a unit per cell ('0.5 s', '100 ms'): each converted by its own unit
        v, unknown, suffix = split_cell_units(text, factor, CELL_TIME_UNITS)
        bad = first_bad_cell(v, unknown, suffix, "is not a unit of time")
        if bad is not None:
            i, why = bad
            raise ScenarioError(
                f"{where}: time column {col!r} at data row {i + 1} reads {shown(series.iloc[i])}: {why}; "
                f"expected a bare number in the header's unit or one with a unit of time: "
                f"{', '.join(CELL_TIME_UNITS)}")
        return v
    dt = None
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "ISO8601", "mixed"):   # nvidia-smi's first: fast path
        try:
            dt = pd.to_datetime(text, format=fmt)
            break
        except (ValueError, TypeError):
            continue
    if dt is None:
        raise ScenarioError(f"{where}: time column {col!r} holds neither seconds nor date-times "
                            f"(first value {shown(series.iloc[0])})")
    if dt.isna().any():
        i = int(np.argmax(dt.isna().to_numpy()))
        raise ScenarioError(f"{where}: time column {col!r} has missing values, first at data row {i + 1}")
    return (dt - dt.iloc[0]).dt.total_seconds().to_numpy(dtype=float)


def _resolve_sensor(requested: str, layout: Layout, block: dict, gpu_names: list[tuple[str, str]],
                    where: str) -> tuple[str, str, bool]:
    col = layout.power[0]
    named, source = None, ""
    if col.sensor in ("instant", "average_1s"):
        named, source = col.sensor, f"column {col.raw!r}"
    elif block.get("sensor", "").split(" ")[0] in ("instant", "average_1s"):
        named, source = block["sensor"].split(" ")[0], f"'# sensor: {block['sensor']}' in the file"
    if requested not in SENSORS:
        raise ScenarioError(f"{where}: trace_sensor = {requested!r}: expected one of {', '.join(SENSORS)}")
    if requested != "auto":
        if named is not None and named != requested:
            raise ScenarioError(f"{where}: trace_sensor = {requested!r} contradicts {source}, which is {named}; "
                                "set trace_sensor = 'auto' or the sensor the file states")
        return requested, f"trace_sensor = {requested!r}", False
    if named is not None:
        return named, source, False
    if col.sensor == "by_generation":
        for name, src in gpu_names:
            avg = gpu_averages_power(name)
            if avg is not None:
                why = "Ampere or newer: NVML averages it over 1 s" if avg else "older than Ampere: instantaneous"
                return ("average_1s" if avg else "instant"), f"column {col.raw!r} on {name} ({src}; {why})", False
        return ("average_1s", f"column {col.raw!r} on an unknown GPU: assumed a 1-s average, as on Ampere "
                "and newer; set trace_sensor", True)
    return ("instant", f"column {col.raw!r} does not say: assumed instantaneous; set trace_sensor = "
            "'average_1s' if it holds nvidia-smi power.draw or nvmlDeviceGetPowerUsage of an Ampere or newer GPU",
            True)


def load_trace(path: str | Path, *, tdp_w: float, idle_w: float | None = None, scale: str = "per_gpu",
               gpus_per_node: int = 8, sensor: str = "auto", gpu_model: str | None = None,
               key: str | None = None, gpus_per_poll: int | None = None, drop_na: bool = False) -> Trace:
    """Read a measured power trace: per-poll power of one GPU as a fraction of TDP.

    Parameters
    ----------
    path : str or pathlib.Path
        CSV file (headers: :data:`facility.workload.trace_format.SPELLINGS`).
    tdp_w : float
        TDP of the GPU the trace is replayed on. [W]
    idle_w : float, optional
        Its idle power; a trace peaking below half of it is refused (wrong scale). [W]
    scale : {'per_gpu', 'per_node', 'normalized'}
        What the power column(s) measure: one GPU [W], one node [W] (divided by
        ``gpus_per_node``), or a fraction of TDP.
    gpus_per_node : int
        GPUs per node, for ``scale = 'per_node'``.
    sensor : {'auto', 'instant', 'average_1s'}
        The sensor behind the power column (see the module docstring).
    gpu_model : str, optional
        Name of the job's GPU model, the last resort of ``sensor = 'auto'``.
    key : str, optional
        Scenario key of the job (``jobs.0``); messages then name ``jobs.0.trace_file``.
    gpus_per_poll : int, optional
        GPUs per poll of a long file without a GPU id column (``trace_gpus_per_poll``); None:
        found from the file (:mod:`facility.workload.trace_polls`).
    drop_na : bool
        Drop ``[N/A]`` readings (``trace_drop_na``): each is filled from its GPU's neighbouring
        polls and counted in ``info.na_rows``; False refuses them.

    Returns
    -------
    Trace
        ``t_s`` (N,) from the first poll, strictly increasing [s]; ``p_frac`` (N,) [frac of TDP];
        ``info`` (:class:`TraceInfo`).

    Raises
    ------
    ScenarioError
        Missing or unreadable file, no time or power column, contradicting columns, non-numeric
        values, inconsistent GPU rows, fewer than two polls, time not increasing, negative or
        implausible power, a scale that does not fit the columns, a contradicting trace_sensor.
        Every message names the file (and ``key``).
    """
    path = Path(path)
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    return _load_cached(str(path), stamp, float(tdp_w), None if idle_w is None else float(idle_w), scale,
                        int(gpus_per_node), sensor, gpu_model, key,
                        None if gpus_per_poll is None else int(gpus_per_poll), bool(drop_na))


#: Columns whose values repeat per GPU in an id-less nvidia-smi log (evidence of the GPU count).
PATTERN_COLUMNS = ("memory.used", "utilization.gpu", "memory_used", "utilization_gpu")


def _pattern_columns(header: list[str], df: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    for i, h in enumerate(header):
        if re.sub(r"_?[\[(].*$", "", normalize_header(h)[0]) in PATTERN_COLUMNS:   # 'utilization.gpu [%]'
            out[h] = df[i].astype(str).str.strip().to_numpy()
    return out


@lru_cache(maxsize=32)
def _load_cached(path_s, stamp, tdp_w, idle_w, scale, gpus_per_node, sensor, gpu_model, key,
                 gpus_per_poll=None, drop_na=False) -> Trace:
    path = Path(path_s)
    where = _where(path, key)
    block, header, df = _read_table(path, where, key)
    layout, problem = classify_columns(header)
    found = ", ".join(shown(h) for h in header[:20]) + (f", … ({len(header)} columns)" if len(header) > 20 else "") or "(none)"
    if layout is None:
        if problem in ("no time column", "no power column"):
            names = TIME_COLUMNS if problem == "no time column" else POWER_COLUMNS
            unit = "[s]" if problem == "no time column" else "[W, or frac of TDP for p_frac]"
            raise ScenarioError(f"{where}: {problem}; found {found}; expected one of {', '.join(names)} {unit} "
                                "(case, spaces and a unit in brackets ignored; see docs/workload.md)")
        raise ScenarioError(f"{where}: {problem}; found {found}")
    if len(df) < 2:
        raise ScenarioError(f"{where}: a trace needs at least 2 samples, found {len(df)}")
    if scale not in ("per_gpu", "per_node", "normalized"):
        raise ScenarioError(f"{where}: trace_scale = {scale!r}: expected per_gpu, per_node or normalized")
    pcol = layout.power[0]
    if layout.is_frac and scale != "normalized":
        raise ScenarioError(f"{where}: column {pcol.raw!r} is a fraction of TDP; "
                            f"set trace_scale = 'normalized' (is {scale!r})")
    if not layout.is_frac and scale == "normalized":
        raise ScenarioError(f"{where}: column {pcol.raw!r} is power in W; trace_scale = 'normalized' expects "
                            "a fraction of TDP (p_frac): use per_gpu or per_node")
    t = _times_s(df[layout.time.position], where, layout.time.raw, layout.time.factor)

    evidence = ""
    if layout.kind == "wide":
        mat = np.column_stack([_numeric(df[c.position], where, c, drop_na) for c in layout.power])
        if np.any(np.diff(t) <= 0):
            i = int(np.argmax(np.diff(t) <= 0))
            raise ScenarioError(f"{where}: time column {layout.time.raw!r} does not increase at data row {i + 2}; "
                                "a file with one column per GPU has one row per poll")
        t_poll, n, dropped, grouping = t, mat.shape[1], 0, "one column per GPU"
    else:
        p = _numeric(df[pcol.position], where, pcol, drop_na)
        if layout.gpu_id:
            parts = [df[c.position].astype(str).str.strip() for c in layout.gpu_id]
            ident = parts[0] if len(parts) == 1 else pd.Series(list(zip(*parts)))
            id_name = " + ".join(repr(c.raw) for c in layout.gpu_id)
            t_poll, mat, n, dropped = polls_by_id(t, p, ident.to_numpy(), id_name, where)
            grouping = f"grouped by {id_name}"
        else:
            if np.any(np.diff(t) < 0):
                i = int(np.argmax(np.diff(t) < 0))
                raise ScenarioError(f"{where}: time column {layout.time.raw!r} decreases at data row {i + 2}; "
                                    "samples must be in time order")
            n, skip, source, evidence = find_gpus_per_poll(t, _pattern_columns(header, df), gpus_per_poll, where)
            if n == 1:
                t_poll, mat, dropped = t, p[:, None], 0
            else:
                t_poll, mat, dropped = polls_by_position(t, p, n, where, skip)
            grouping = f"rows in GPU order, {n} per poll ({source})"
    if t_poll.size < 2:
        raise ScenarioError(f"{where}: all samples share one time; a trace needs at least 2 polls")
    dtp = np.diff(t_poll)
    if np.any(dtp <= 0):
        i = int(np.argmax(dtp <= 0))
        raise ScenarioError(f"{where}: poll {i + 2} starts at {t_poll[i + 1] - t_poll[0]:.6g} s, not after poll "
                            f"{i + 1} ({t_poll[i] - t_poll[0]:.6g} s): polls must be in time order")
    mat, na_rows = fill_na_per_gpu(t_poll, mat, where)
    if np.any(mat < 0):
        raise ScenarioError(f"{where}: column {pcol.raw!r} has negative power ({mat.min():g})")

    if scale == "per_node":
        if n > 1 and n != gpus_per_node:
            raise ScenarioError(
                f"{where}: the file holds {n} GPUs' power ({grouping}); trace_scale = 'per_node' sums them as "
                f"one node of gpus_per_node = {gpus_per_node} GPUs; use trace_scale = 'per_gpu' (their mean)")
        if n == 1 and pcol.per == "gpu":
            raise ScenarioError(
                f"{where}: column {pcol.raw!r} is one GPU's power; trace_scale = 'per_node' would divide it by "
                f"gpus_per_node = {gpus_per_node}; use trace_scale = 'per_gpu'")
        frac = mat.sum(axis=1) / gpus_per_node / tdp_w
    elif scale == "per_gpu":
        if pcol.per == "node":
            raise ScenarioError(f"{where}: column {pcol.raw!r} is a node's power; set trace_scale = 'per_node' "
                                f"(and gpus_per_node) instead of 'per_gpu'")
        frac = mat.mean(axis=1) / tdp_w
    else:
        frac = mat.mean(axis=1)
    if frac.max() > _MAX_FRAC:
        raise ScenarioError(
            f"{where}: column {pcol.raw!r} peaks at {frac.max():.3g} x TDP ({tdp_w:g} W) with "
            f"trace_scale = {scale!r}; allowed at most {_MAX_FRAC:g} x TDP - check trace_scale "
            "(per_gpu [W], per_node [W], normalized [frac of TDP]) and the unit")
    if idle_w is not None and frac.max() * tdp_w < _MIN_IDLE_FRAC * idle_w:
        raise ScenarioError(
            f"{where}: column {pcol.raw!r} peaks at {frac.max() * tdp_w:.3g} W per GPU with trace_scale = "
            f"{scale!r}, below half the GPU's idle power ({idle_w:g} W) - check trace_scale and the unit")

    names = []
    if layout.gpu_name is not None:
        names.append((str(df[layout.gpu_name.position].iloc[0]).strip(), "the file's name column"))
    if block.get("gpu"):
        names.append((block["gpu"], "the file's '# gpu:' line"))
    if gpu_model:
        names.append((gpu_model, "the job's gpu"))
    sens, reason, assumed = _resolve_sensor(sensor, layout, block, names, where)

    t_rel = t_poll - t_poll[0]
    dtp = np.diff(t_rel)
    med = float(np.median(dtp))
    g = int(np.argmax(dtp))
    check_time_span(t_rel, med, g, where, layout.time.raw)
    info = TraceInfo(
        path=str(path), layout=layout.kind, grouping=grouping if n > 1 else "one row per poll", n_gpus=n,
        n_polls=int(t_rel.size), median_interval_s=med, max_gap_s=float(dtp[g]), max_gap_at_s=float(t_rel[g]),
        duration_s=float(t_rel[-1] + med), power_column=pcol.raw, scale=scale, sensor=sens,
        sensor_reason=reason, sensor_assumed=assumed,
        gpu_name=names[0][0] if names and names[0][1] != "the job's gpu" else None, dropped_rows=dropped,
        p_mean_w=float(frac.mean() * tdp_w), p_max_w=float(frac.max() * tdp_w), header=block,
        na_rows=na_rows, grouping_evidence=evidence)
    t_rel.setflags(write=False)
    frac.setflags(write=False)
    return Trace(t_s=t_rel, p_frac=frac, info=info)


def read_trace(path: str | Path, *, tdp_w: float, scale: str = "per_gpu",
               gpus_per_node: int = 8, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """``(t_s, p_frac)`` of :func:`load_trace` (writable copies); keyword arguments pass through."""
    tr = load_trace(path, tdp_w=tdp_w, scale=scale, gpus_per_node=gpus_per_node, **kwargs)
    return tr.t_s.copy(), tr.p_frac.copy()
