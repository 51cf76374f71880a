"""Rows of a long-format GPU log without a GPU id column -> polls.

``nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,memory.used --format=csv -lms 100``
(the layout most users have) writes one row per GPU per poll and no GPU index. nvidia-smi
queries the GPUs one after the other, always in the same order, so row ``r`` of the file is
GPU ``r mod n`` of poll ``r // n`` once the number of GPUs ``n`` is known. What such files look
like (and what this module must survive): the rows of one poll share one timestamp or lie
1-3 ms apart, the first poll of a file can be spread over ~13 ms (driver start-up), a stalled
poll spreads its rows over seconds (they still come in GPU order, before the next poll), and
``[N/A]`` readings occur.

:func:`gpus_per_poll` finds ``n`` from the file itself, from two independent kinds of evidence:

* **timestamps** — for a candidate ``n`` the gaps between polls (after every n-th row) must be
  much longer than the gaps inside polls: the score is the 5th percentile of the former over
  the 95th percentile of the latter (gaps floored at half a millisecond, the resolution of
  nvidia-smi's clock); the smallest ``n`` scoring at least :data:`SEPARATION` is the
  timestamps' answer, so a few stalled or spread polls do not move it;
* **a repeating per-GPU column** (``memory.used``, ``utilization.gpu``) — the smallest period
  ``n > 1`` at which at least :data:`PERIOD_MATCH` of the rows repeat the value ``n`` rows
  earlier, for a column whose values do not already repeat row to row.

A stated ``trace_gpus_per_poll`` is used as given, unless the timestamps clearly show another
count. The file is refused only when the evidence is ambiguous or contradicts itself; the
message names what each kind of evidence said.
"""

from __future__ import annotations

import numpy as np

from facility.errors import ScenarioError

__all__ = ["SEPARATION", "PERIOD_MATCH", "MAX_GPUS", "gpus_per_poll", "polls_by_position", "fill_na_per_gpu"]

#: Least ratio between the gaps that separate polls and the gaps inside polls. [-]
SEPARATION = 5.0
#: Least share of rows that repeat the value n rows earlier for a column to show period n. [frac]
PERIOD_MATCH = 0.9
#: Largest GPU count searched for (one nvidia-smi sees one node; 16 GPUs is the most sold). [GPU]
MAX_GPUS = 64
_TICK_S = 5e-4          # identical timestamps (ms clock) count as half a tick apart
_SCAN_ROWS = 20_000    # evidence is read from the first rows only (enough polls, bounded time)
_PHASE_ROWS = 4_000     # rows searched for a log that starts in the middle of a poll


def _separation(d: np.ndarray, n: int) -> float:
    """q05(gaps after every n-th row) / q95(the other gaps); 0 when undefined."""
    if n < 2 or d.size < 2 * n:
        return 0.0
    m = (d.size // n) * n
    blocks = d[:m].reshape(-1, n)
    between, within = blocks[:, n - 1], blocks[:, : n - 1].ravel()
    if between.size < 2 or within.size < 1:
        return 0.0
    return float(np.quantile(between, 0.05) / np.quantile(within, 0.95))


def _grouped(d: np.ndarray) -> bool:
    """Rows fall into groups (short gaps inside, long ones between), whatever their count."""
    return bool(d.size >= 4 and np.quantile(d, 0.9) >= SEPARATION * np.quantile(d, 0.1))


def _by_timestamps(t: np.ndarray) -> tuple[int | None, int, str]:
    """(GPUs per poll or None, rows of an incomplete first poll, evidence)."""
    d = np.maximum(np.diff(t[:_SCAN_ROWS]), _TICK_S)
    top = min(MAX_GPUS, d.size // 2)
    scores = {(n, 0): _separation(d, n) for n in range(2, top + 1)}
    ok = [k for k, s in scores.items() if s >= SEPARATION]
    if not ok and _grouped(d):  # a log cut in the middle of a poll: its first rows are a partial poll
        short = d[:_PHASE_ROWS]
        scores.update({(n, ph): _separation(short[ph:], n)
                       for n in range(2, min(MAX_GPUS, short.size // 2) + 1) for ph in range(1, n)})
        ok = [k for k, s in scores.items() if s >= SEPARATION]
    if not ok:
        best = max(scores, key=scores.get) if scores else None
        say = (f"timestamps: no GPU count up to {top} separates polls (best {best[0]}: gaps between polls "
               f"{scores[best]:.2g}x those inside)" if best else "timestamps: too few rows to tell")
        return None, 0, say
    n, ph = min(ok)
    m = ((d.size - ph) // n) * n
    blocks = d[ph:ph + m].reshape(-1, n)
    return n, ph, (f"timestamps: every {n} rows a gap of {1e3 * np.median(blocks[:, n - 1]):.3g} ms (median), "
                   f"{1e3 * np.quantile(blocks[:, :n - 1], 0.95):.2g} ms inside a poll (95th percentile), "
                   f"{scores[(n, ph)]:.3g}x apart" + (f", the first {ph} row(s) an incomplete poll" if ph else ""))


def _by_period(values: np.ndarray, name: str) -> tuple[int | None, str]:
    v = values[:_SCAN_ROWS]
    if v.size < 4 or (v[1:] == v[:-1]).mean() >= PERIOD_MATCH:
        return None, f"{name}: the same on every row (says nothing about the GPU count)"
    for n in range(2, min(MAX_GPUS, v.size // 2) + 1):
        share = float((v[n:] == v[:-n]).mean())
        if share >= PERIOD_MATCH:
            return n, f"{name}: repeats every {n} rows ({100 * share:.0f} % of rows)"
    return None, f"{name}: no repeating pattern"


def gpus_per_poll(t: np.ndarray, patterns: dict[str, np.ndarray], stated: int | None,
                  where: str) -> tuple[int, int, str, str]:
    """GPUs per poll of an id-less long file, rows of an incomplete first poll, what decided
    (``'timestamps'``, a column name, ``'trace_gpus_per_poll'``, ``'no structure'``) and the
    evidence in words.

    Parameters
    ----------
    t : numpy.ndarray
        Row timestamps, non-decreasing. [s]
    patterns : dict
        Column name -> values of the columns that repeat per GPU (``memory.used``,
        ``utilization.gpu``); may be empty.
    stated : int or None
        ``trace_gpus_per_poll`` of the job. [GPU]
    where : str
        Prefix of error messages (key and file).

    Raises
    ------
    ScenarioError
        The evidence contradicts itself or a stated count, or shows some structure but no GPU
        count (the message holds what each kind of evidence said).
    """
    n_t, ph, why_t = _by_timestamps(t)
    found = [_by_period(v, k) for k, v in patterns.items()]
    periods = [(n, why) for n, why in found if n is not None]
    names = [k for k, (n, _) in zip(patterns, found) if n is not None]
    evidence = "; ".join([why_t] + [why for _, why in found])
    d = np.maximum(np.diff(t[:_SCAN_ROWS]), _TICK_S)
    grouped = _grouped(d)
    if stated is not None:
        if t.size < 2 * stated:
            raise ScenarioError(f"{where}: trace_gpus_per_poll = {stated} leaves fewer than 2 polls "
                                f"({t.size} rows)")
        if n_t == stated or not grouped:
            return stated, (ph if n_t == stated else 0), "trace_gpus_per_poll", evidence
        sep = [_separation(d[p:], stated) for p in range(stated if n_t is None else 1)]
        best = int(np.argmax(sep)) if sep else 0
        if not sep or sep[best] < SEPARATION:
            raise ScenarioError(f"{where}: trace_gpus_per_poll = {stated} contradicts the file ({evidence}): its "
                                f"timestamps do not fall into polls of {stated} rows (a GPU row missing?)")
        return stated, best, "trace_gpus_per_poll", evidence
    if n_t is None and grouped:
        raise ScenarioError(
            f"{where}: rows do not form polls of a fixed number of GPUs: the timestamps fall into groups "
            f"(gaps of {1e3 * np.quantile(d, 0.1):.2g} ms and {1e3 * np.quantile(d, 0.9):.3g} ms) but no GPU "
            f"count fits them all ({evidence}); a GPU row missing? Add the GPU index column (nvidia-smi "
            "--query-gpu=timestamp,index,power.draw ...) or state trace_gpus_per_poll")
    clash = [why for n, why in periods if n_t is not None and n_t % n]
    if n_t is not None and clash:
        raise ScenarioError(f"{where}: the GPU count per poll is ambiguous: {evidence}; state it with "
                            f"trace_gpus_per_poll = <GPUs per poll> on the job")
    if n_t is not None:
        return n_t, ph, "timestamps", evidence
    if periods:
        ns = sorted({n for n, _ in periods})
        if len(ns) > 1 and any(b % ns[0] for b in ns[1:]):
            raise ScenarioError(f"{where}: the GPU count per poll is ambiguous: {evidence}; state it with "
                                f"trace_gpus_per_poll = <GPUs per poll> on the job")
        return ns[-1], 0, names[[n for n, _ in periods].index(ns[-1])], evidence
    return 1, 0, "no structure", evidence


def polls_by_position(t: np.ndarray, p: np.ndarray, n: int, where: str, skip: int = 0):
    """Rows in fixed GPU order -> polls: (poll times (K,), power (K, n), dropped rows).

    After ``skip`` rows (an incomplete first poll), row ``r`` is GPU ``r mod n`` of poll
    ``r // n``; a poll's time is its first row's; an incomplete final poll (an interrupted
    logger) is dropped; both are counted in the dropped rows."""
    k = (t.size - skip) // n
    if k < 2:
        raise ScenarioError(f"{where}: a trace needs at least 2 polls, found {k} ({n} GPUs per poll)")
    m = skip + k * n
    return t[skip:m:n], p[skip:m].reshape(k, n), t.size - k * n


def fill_na_per_gpu(t_poll: np.ndarray, mat: np.ndarray, where: str) -> tuple[np.ndarray, int]:
    """Dropped ([N/A]) readings (NaN in ``mat`` (K, n)) -> each GPU's own neighbours, linearly in
    time, so the poll mean keeps every GPU; returns the filled matrix and the count dropped."""
    bad = np.isnan(mat)
    count = int(bad.sum())
    if not count:
        return mat, 0
    out = mat.copy()
    for g in np.flatnonzero(bad.any(axis=0)):      # loop over GPUs (<= 64), not over steps
        ok = ~bad[:, g]
        if not ok.any():
            raise ScenarioError(f"{where}: GPU {g} of every poll reads [N/A]; no power to replay")
        out[~ok, g] = np.interp(t_poll[~ok], t_poll[ok], mat[ok, g])
    return out, count
