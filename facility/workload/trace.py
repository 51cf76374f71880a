"""Replay of a measured GPU power trace (CSV from nvidia-smi, DCGM or our own format).

Column names are mapped to ours at this boundary (case and surrounding spaces ignored):

============================ ==========================================================
ours                         accepted names
============================ ==========================================================
time ``t_s`` [s]             ``t_s``, ``time_s``, ``time``, ``timestamp``, ``t``
                             (numbers in seconds, or date-times such as nvidia-smi's
                             ``2024/05/01 12:00:00.123``)
power ``p`` [W or frac]      ``p_gpu_w``, ``p_node_w``, ``p_w``, ``power_w``, ``power.draw [w]``,
                             ``power.draw``, ``power.draw.instant [w]``,
                             ``power.draw.average [w]``, ``dcgm_fi_dev_power_usage``,
                             ``dcgm_fi_dev_power_usage_instant``, ``p_frac``, ``power_frac``
============================ ==========================================================

Values such as ``"350.12 W"`` (nvidia-smi without ``nounits``) are accepted. Rows with the
same time (several GPUs of one node in one file) are averaged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import signal

from facility.errors import ScenarioError

__all__ = ["TIME_COLUMNS", "POWER_COLUMNS", "read_trace", "trace_on_grid"]

TIME_COLUMNS = ("t_s", "time_s", "time", "timestamp", "t")
POWER_COLUMNS = ("p_gpu_w", "p_node_w", "p_w", "power_w", "power.draw [w]", "power.draw",
                 "power.draw.instant [w]", "power.draw.average [w]", "dcgm_fi_dev_power_usage",
                 "dcgm_fi_dev_power_usage_instant", "p_frac", "power_frac")
_MAX_FRAC = 3.0      # a per-GPU power above 3 x TDP means the scale or the unit is wrong


def _pick(columns: dict[str, str], names: tuple[str, ...]) -> str | None:
    for n in names:
        if n in columns:
            return columns[n]
    return None


def _numeric(series: pd.Series, path: Path, col: str) -> np.ndarray:
    s = series
    if s.dtype == object:
        s = s.astype(str).str.strip().str.replace(r"\s*[wW]$", "", regex=True)
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.argmax(bad))
        raise ScenarioError(
            f"{path}: column {col!r} has {int(bad.sum())} non-numeric or missing value(s), "
            f"first at data row {i + 1} ({series.iloc[i]!r})")
    return v


def _times_s(series: pd.Series, path: Path, col: str) -> np.ndarray:
    num = pd.to_numeric(series, errors="coerce")
    if num.notna().all():
        return num.to_numpy(dtype=float)
    try:
        dt = pd.to_datetime(series.astype(str).str.strip(), format="mixed")
    except (ValueError, TypeError):
        raise ScenarioError(
            f"{path}: time column {col!r} holds neither seconds nor date-times "
            f"(first value {series.iloc[0]!r})") from None
    if dt.isna().any():
        raise ScenarioError(f"{path}: time column {col!r} has missing values")
    return (dt - dt.iloc[0]).dt.total_seconds().to_numpy(dtype=float)


def read_trace(path: str | Path, *, tdp_w: float, scale: str = "per_gpu",
               gpus_per_node: int = 8, key: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read a measured power trace and express it per GPU as a fraction of TDP.

    Parameters
    ----------
    path : str or pathlib.Path
        CSV file (columns: see the module docstring).
    tdp_w : float
        TDP of the GPU the trace is replayed on. [W]
    scale : {'per_gpu', 'per_node', 'normalized'}
        What the power column measures: one GPU [W], one node [W] (divided by
        ``gpus_per_node``), or a fraction of TDP.
    gpus_per_node : int
        GPUs per node, for ``scale = 'per_node'``.
    key : str, optional
        Scenario key that named the file (``jobs.0.trace_file``), for messages.

    Returns
    -------
    t_s : numpy.ndarray, shape (N,)
        Sample times from the first sample, strictly increasing. [s]
    p_frac : numpy.ndarray, shape (N,)
        Power of one GPU. [frac of TDP]

    Raises
    ------
    ScenarioError
        Missing file, not a CSV, no time or power column, non-numeric values, fewer than two
        samples, time not increasing, negative or implausible power.
    """
    from facility.config.files import check_file

    path = check_file(path, key=key, what="trace file")
    try:
        df = pd.read_csv(path, skipinitialspace=True, comment="#")
    except OSError as exc:  # vanished or unreadable after the check
        raise ScenarioError(f"{path}: trace file cannot be read ({exc.strerror or exc})") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: not a readable CSV trace ({type(exc).__name__}: {exc})") from None
    cols = {str(c).strip().lower(): c for c in df.columns}
    tcol = _pick(cols, TIME_COLUMNS)
    pcol = _pick(cols, POWER_COLUMNS)
    found = ", ".join(repr(str(c)) for c in df.columns) or "(none)"
    if tcol is None:
        raise ScenarioError(f"{path}: no time column; found {found}; expected one of "
                            f"{', '.join(TIME_COLUMNS)} [s]")
    if pcol is None:
        raise ScenarioError(f"{path}: no power column; found {found}; expected one of "
                            f"{', '.join(POWER_COLUMNS)} [W, or frac of TDP for p_frac]")
    if len(df) < 2:
        raise ScenarioError(f"{path}: a trace needs at least 2 samples, found {len(df)}")
    t = _times_s(df[tcol], path, str(tcol))
    p = _numeric(df[pcol], path, str(pcol))
    if str(pcol).strip().lower() in ("p_frac", "power_frac") and scale != "normalized":
        raise ScenarioError(f"{path}: column {str(pcol)!r} is a fraction of TDP; "
                            f"set trace_scale = 'normalized' (is {scale!r})")
    if np.any(np.diff(t) < 0):
        i = int(np.argmax(np.diff(t) < 0))
        raise ScenarioError(f"{path}: time column {str(tcol)!r} decreases at data row {i + 2}; "
                            "samples must be in time order")
    if np.any(np.diff(t) == 0):       # several GPUs per timestamp: average them
        s = pd.Series(p).groupby(t).mean()
        t, p = s.index.to_numpy(dtype=float), s.to_numpy(dtype=float)
        if t.size < 2:
            raise ScenarioError(f"{path}: all samples share one time; a trace needs at least 2 times")
    if np.any(p < 0):
        raise ScenarioError(f"{path}: column {str(pcol)!r} has negative power ({p.min():g})")
    if scale == "per_gpu":
        frac = p / tdp_w
    elif scale == "per_node":
        frac = p / gpus_per_node / tdp_w
    elif scale == "normalized":
        frac = p
    else:
        raise ScenarioError(f"trace_scale = {scale!r}: expected per_gpu, per_node or normalized")
    if frac.max() > _MAX_FRAC:
        raise ScenarioError(
            f"{path}: column {str(pcol)!r} peaks at {frac.max():.3g} x TDP ({tdp_w:g} W) with "
            f"trace_scale = {scale!r}; allowed at most {_MAX_FRAC:g} x TDP - check trace_scale "
            "(per_gpu [W], per_node [W], normalized [frac of TDP])")
    return t - t[0], frac


def trace_on_grid(t_s: np.ndarray, p_frac: np.ndarray, dt_s: float) -> tuple[np.ndarray, float]:
    """Prepare a trace for replay at step ``dt_s``: uniform native grid, anti-aliased.

    The trace is first interpolated linearly onto a uniform grid at its median sample spacing.
    If that spacing is finer than ``dt_s`` (downsampling), a zero-phase 6th-order Butterworth
    low-pass (``sosfiltfilt``) at 0.8 x the Nyquist frequency of ``dt_s`` removes what the
    coarser grid cannot carry, so replay never aliases. The replay itself interpolates this
    signal linearly (:func:`numpy.interp`) at the needed times.

    Returns
    -------
    p_native : numpy.ndarray
        Filtered trace on the uniform native grid. [frac of TDP]
    native_dt_s : float
        Its spacing. [s]
    """
    native = float(np.median(np.diff(t_s)))
    n = int(np.floor(t_s[-1] / native + 1e-9)) + 1
    grid = np.arange(n) * native
    p = np.interp(grid, t_s, p_frac)
    if native < dt_s * (1.0 - 1e-6) and n > 3:
        wn = 0.8 * native / dt_s          # cutoff / native Nyquist = 0.8 * (1/(2 dt)) / (1/(2 native))
        sos = signal.butter(6, wn, output="sos")
        p = signal.sosfiltfilt(sos, p, padlen=min(n - 1, 3 * int(np.ceil(dt_s / native)) * 6))
        p = np.maximum(p, 0.0)
    return p, native
