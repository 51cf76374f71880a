"""Spectral limits on the PCC power as linear rows, generated lazily.

``facility.metrics`` measures a band limit on the single-sided spectrum of P − mean(P) over the
whole horizon (N samples, no window, ``numpy.fft.rfft``):

.. math::  a_k = \\frac{w_k}{N} |X_k|,\\qquad X_k = \\sum_{t=0}^{N-1} P_t\\, e^{-j 2\\pi k t / N},

w_k = 2 (1 at k = 0 and at the Nyquist bin of an even N), bin frequency f_k = k / (N Δt). A limit
``a_k ≤ A`` holds for every bin of a band [f_min, f_max] (``spec.max_band_peak_mw`` on
[band_min_hz, band_max_hz] and each ``[[bands]]`` ``max_peak_mw``; a bin in several bands gets
the smallest limit). Subtracting the mean changes only X_0, and every band starts above 0 Hz,
so the rows act on P itself. X_k is linear in the LP's columns; |X_k| ≤ R is a disk, written
as the regular M-gon inscribed in it:

.. math::  \\mathrm{Re}(X_k)\\cos\\theta_m + \\mathrm{Im}(X_k)\\sin\\theta_m \\le \\frac{N}{w_k} A \\cos(\\pi/M),
           \\qquad \\theta_m = 2\\pi m / M,

whose corners lie on the circle of radius N A / w_k: any X_k that meets all M rows has a_k ≤ A
exactly as ``facility.metrics`` computes it (M = :data:`SIDES` = 256, so the polygon gives up at
most 1 − cos(π/M) = 7.5e-5 of the limit). Each bin with rows gets two columns, its scaled real
and imaginary parts r_k = (w_k/N) Re X_k and i_k = (w_k/N) Im X_k [MW], tied to the PCC power
by two equality rows; the direction rows then have two entries each.

**Lazy rows.** Most bins are far below their limit. :func:`spectral_violations` takes a PCC
series and returns the bins above A cos(π/M); the solver adds, for each such bin, the polygon's
direction nearest to arg X_k (and, the first time, every (M/8)-th direction, so the bin's region
is bounded) and solves again, warm-started (:func:`facility.optimize.solvers.solve.solve_model`). The
loop ends when no bin is above A cos(π/M): the plan then lies in the full polygon of every bin
(bins without rows sit inside its inscribed circle), so it is feasible for the LP with all
M rows of all bins, and the LP with the rows found so far is a relaxation of that LP, whose
optimum is the reported lower bound.

**Other grids.** A strategy that solves on another axis (:mod:`facility.optimize.strategies.periodic`)
supplies, per bin, the complex weight of each of its steps in X_k (:class:`SpectralRows`'
``phasor``): the full-horizon DFT written in its own columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["SIDES", "BinLimits", "bin_limits", "has_spectral_limits", "spectral_violations",
           "SpectralRows", "LazySpectral", "amplitude_weight", "full_spectral", "tiled_phasor",
           "block_average_phasor"]

#: Sides M of the inscribed polygon.
SIDES = 256
#: Once some bin is violated, rows are added for every bin above this share of its limit.
NEAR = 0.8
#: Directions added the first time a bin is cut (every SIDES / FIRST_FAN-th one).
FIRST_FAN = 32
#: Bins that get rows before the first solve (the load's worst) and per round at most. Each
#: bin is two dense rows: a jittered load under a tight limit breaks ~450 bins by itself, and
#: seeding them all took 735 s (interior point) and over 600 s without an answer (simplex) on
#: 3,000 steps, where these caps take 8.6 s and 209 s for the same plan (docs/formulation.md).
SEED_BINS = 16
BINS_PER_ROUND = 32


def has_spectral_limits(spec) -> bool:
    """Whether the spec sets a band peak limit (``max_band_peak_mw``, ``[[bands]]``, or per-bin
    caps: :class:`facility.grid_impact.lp.LpSpec`)."""
    return (spec.max_band_peak_mw is not None or bool(spec.bands)
            or getattr(spec, "bin_caps_mw", None) is not None)


@dataclass(frozen=True)
class BinLimits:
    """Amplitude limit of every limited bin of a horizon.

    Attributes
    ----------
    k : numpy.ndarray of int
        Bin indices (1 ≤ k ≤ N/2).
    limit_mw : numpy.ndarray
        Largest allowed single-sided amplitude a_k, margin included. [MW]
    family : list of str
        Spec key of the band that sets each bin's limit (``max_band_peak_mw`` or
        ``band_<name>``).
    n_steps : int
        N, samples of the horizon.
    dt_s : float
        Step. [s]
    """

    k: np.ndarray
    limit_mw: np.ndarray
    family: list
    n_steps: int
    dt_s: float

    def limit_of(self, k: int) -> tuple[float, str]:
        """Limit [MW] and family of one bin."""
        i = int(np.searchsorted(self.k, k))
        return float(self.limit_mw[i]), self.family[i]


def bin_limits(spec, n_steps: int, dt_s: float, margin_frac: float = 0.0) -> BinLimits:
    """The limited bins of a horizon of ``n_steps`` samples, with the masks of facility.metrics.

    Parameters
    ----------
    spec : SpecConfig
    n_steps : int
        Samples N of the horizon.
    dt_s : float
        Step. [s]
    margin_frac : float
        ``optimize.limit_margin_frac``: every limit times (1 - margin). [frac]
    """
    f = np.fft.rfftfreq(int(n_steps), dt_s)
    lim = np.full(f.size, np.inf)
    fam = np.full(f.size, "", dtype=object)
    bands = []
    if spec.max_band_peak_mw is not None:
        bands.append(("max_band_peak_mw", spec.band_min_hz, spec.band_max_hz, spec.max_band_peak_mw))
    bands += [(f"band_{b.name}", b.min_hz, b.max_hz, b.max_peak_mw) for b in spec.bands]
    for name, lo, hi, a in bands:
        mask = (f >= lo - 1e-12) & (f <= hi + 1e-12)  # facility.metrics._band_mask
        better = mask & (a < lim)
        lim[better] = a
        fam[better] = name
    caps = getattr(spec, "bin_caps_mw", None)
    if caps is not None:  # [grid_impact] response limits, per bin (facility.grid_impact.lp)
        cap = np.asarray(caps(f, dt_s), dtype=float)
        better = cap < lim
        lim[better] = cap[better]
        fam[better] = "grid_impact"
    k = np.flatnonzero(np.isfinite(lim) & (np.arange(f.size) > 0))
    return BinLimits(k, lim[k] * (1.0 - margin_frac), [str(v) for v in fam[k]], int(n_steps), float(dt_s))


def amplitude_weight(k: np.ndarray, n_steps: int) -> np.ndarray:
    """w_k / N: single-sided amplitude per unit |X_k| (facility.metrics.spectrum). [1]"""
    k = np.asarray(k)
    w = np.where((k == 0) | ((n_steps % 2 == 0) & (k == n_steps // 2)), 1.0, 2.0)
    return w / n_steps


def spectral_violations(p_pcc_mw: np.ndarray, limits: BinLimits, sides: int | None = SIDES,
                        tol_mw: float = 1e-9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bins whose amplitude exceeds its limit times cos(π/M) (the limit itself: sides = None).

    Parameters
    ----------
    p_pcc_mw : numpy.ndarray (N,)
        PCC power over the horizon the limits were made for. [MW]
    limits : BinLimits
    sides : int or None
        Polygon sides M; None compares with the limit itself (a compliance check).
    tol_mw : float
        Absolute tolerance. [MW]

    Returns
    -------
    (k, amp_mw, angle_rad) : the violated bins, their amplitudes [MW] and arg X_k [rad].
    """
    p = np.asarray(p_pcc_mw, dtype=float)
    if p.size != limits.n_steps:
        raise ValueError(f"PCC series of {p.size} samples, limits for {limits.n_steps}")
    if limits.k.size == 0:
        e = np.zeros(0)
        return np.zeros(0, np.int64), e, e
    x = np.fft.rfft(p - p.mean())[limits.k]
    amp = np.abs(x) * amplitude_weight(limits.k, limits.n_steps)
    shrink = 1.0 if sides is None else np.cos(np.pi / sides)
    bad = amp > limits.limit_mw * shrink + tol_mw
    return limits.k[bad], amp[bad], np.angle(x[bad])


def near_limit(p_pcc_mw: np.ndarray, limits: BinLimits, frac: float):
    """Bins above ``frac`` times their limit: ``(k, amp_mw, angle_rad)``."""
    p = np.asarray(p_pcc_mw, dtype=float)
    x = np.fft.rfft(p - p.mean())[limits.k]
    amp = np.abs(x) * amplitude_weight(limits.k, limits.n_steps)
    sel = amp > frac * limits.limit_mw
    return limits.k[sel], amp[sel], np.angle(x[sel])


@dataclass
class SpectralRows:
    """The spectral rows of one model and the bins / directions it already holds.

    Parameters
    ----------
    limits : BinLimits
        Bins of the full horizon.
    const_dft : numpy.ndarray (N // 2 + 1,) complex
        ``rfft`` of the constant part of the full-horizon PCC power (the load). [MW]
    phasor : callable k -> numpy.ndarray (U,) complex
        Weight of each step of the model's axis in X_k (``exp(-2πj k u / N)`` on the full
        axis).
    pcc_terms : list of (col (U,), coef (U,))
        The model's PCC power terms (:attr:`facility.optimize.model.formulation.Model.pcc_terms`).
    allowed : callable k -> bool, optional
        Bins this model may carry rows for (a relaxation drops the others); all by default.
    sides : int
        Polygon sides M.
    """

    limits: BinLimits
    const_dft: np.ndarray
    phasor: Callable[[int], np.ndarray]
    pcc_terms: list
    allowed: Callable[[int], bool] | None = None
    sides: int = SIDES
    cuts: dict = field(default_factory=dict)
    cols: dict = field(default_factory=dict)
    pcc_col: np.ndarray | None = None
    #: row index of each (bin, direction) and, after a solve, its multiplier λ ≥ 0 [k$ per MW]
    row_of: dict = field(default_factory=dict)
    multipliers: dict = field(default_factory=dict)

    def take_multipliers(self, row_dual: np.ndarray) -> None:
        """Keep the multipliers of the direction rows (HiGHS row duals of ≤ rows are ≤ 0 in a
        minimization: λ = max(−y, 0))."""
        y = np.asarray(row_dual, dtype=float)
        self.multipliers = {key: max(-float(y[i]), 0.0) for key, i in self.row_of.items() if i < y.size}

    def directions_for(self, k: np.ndarray, angle: np.ndarray, amp_mw: np.ndarray | None = None,
                       max_bins: int | None = None) -> dict[int, list[int]]:
        """New directions for violated bins: the nearest to arg X_k (plus a first fan). With
        ``amp_mw`` and ``max_bins``: only the ``max_bins`` bins with the largest amplitude /
        limit among those that get a new direction."""
        out = self._directions(k, angle)
        if max_bins is not None and amp_mw is not None and len(out) > max_bins:
            k = np.asarray(k, dtype=np.int64)
            amp = np.asarray(amp_mw, dtype=float)
            sel = np.isin(k, list(out))
            ratio = amp[sel] / self.limits.limit_mw[np.searchsorted(self.limits.k, k[sel])]
            keep = k[sel][np.argsort(-ratio, kind="stable")[:max_bins]]
            out = {int(kk): out[int(kk)] for kk in keep}
        return out

    def _directions(self, k: np.ndarray, angle: np.ndarray) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        M = self.sides
        for kk, th in zip(np.asarray(k, dtype=np.int64), angle):
            kk = int(kk)
            if self.allowed is not None and not self.allowed(kk):
                continue
            m0 = int(np.round(th / (2 * np.pi / M))) % M
            have = self.cuts.get(kk, set())
            new = {m0, (m0 + 1) % M, (m0 - 1) % M}
            if not have:
                new |= {(m0 + i * M // FIRST_FAN) % M for i in range(FIRST_FAN)}
            new -= have
            if new:
                out[kk] = sorted(new)
        return out

    def add(self, lp, directions: dict[int, list[int]]) -> int:
        """Append the rows (and, for new bins, the two columns and equality rows). Returns the
        number of direction rows added."""
        n_rows = 0
        N = self.limits.n_steps
        for k, ms in directions.items():
            if k not in self.cols:
                self._add_bin(lp, k)
            limit, fam = self.limits.limit_of(k)
            re, im = self.cols[k]
            th = 2 * np.pi * np.asarray(ms, dtype=float) / self.sides
            nm = th.size
            blk = lp.add_rows(fam, [(np.full(nm, re), np.cos(th)), (np.full(nm, im), np.sin(th))],
                              -np.inf, limit * np.cos(np.pi / self.sides), t=np.full(nm, -1),
                              soft=True, unit=f"MW at {k / (N * self.limits.dt_s):.4g} Hz")
            for i, mm in enumerate(ms):
                self.row_of[(k, mm)] = blk.start + i
            self.cuts.setdefault(k, set()).update(ms)
            n_rows += nm
        return n_rows

    def _pcc_columns(self, lp) -> np.ndarray:
        """One column per model step holding the variable part of the PCC power,
        v_u = Σ terms (one sparse equality row each), created with the first bin: the dense
        DFT rows then have one entry per step instead of one per PCC term."""
        if self.pcc_col is None:
            U = int(np.shape(self.pcc_terms[0][0])[0])
            v = lp.add_columns("spectral:pcc", U, -np.inf, np.inf)
            lp.add_rows("spectral_pcc", [(v, 1.0)] + [(col, -np.broadcast_to(coef, (U,)))
                                                       for col, coef in self.pcc_terms],
                        0.0, 0.0, t=np.arange(U), soft=False)
            self.pcc_col = v
        return self.pcc_col

    def _add_bin(self, lp, k: int) -> None:
        scale = float(amplitude_weight(np.array([k]), self.limits.n_steps)[0])
        ph = self.phasor(k) * scale
        v = self._pcc_columns(lp)
        nz = ph != 0
        uc, vr, vi = v[nz], ph[nz].real, ph[nz].imag
        x0 = self.const_dft[k] * scale
        re = lp.add_columns(f"spectral:{k}:re", 1, -np.inf, np.inf)
        im = lp.add_columns(f"spectral:{k}:im", 1, -np.inf, np.inf)
        # r_k - sum_u Re(w_u) v_u = Re(X0), i_k - sum_u Im(w_u) v_u = Im(X0)
        lp.add_row("spectral_bin", np.concatenate([re, uc]), np.concatenate([[1.0], -vr]),
                   x0.real, x0.real, soft=False)
        lp.add_row("spectral_bin", np.concatenate([im, uc]), np.concatenate([[1.0], -vi]),
                   x0.imag, x0.imag, soft=False)
        self.cols[k] = (int(re[0]), int(im[0]))


@dataclass
class LazySpectral:
    """The lazy spectral rows of one solve: what :func:`facility.optimize.solvers.solve.solve_model`
    needs to check a plan and add rows.

    Parameters
    ----------
    limits : BinLimits
    const_dft : numpy.ndarray complex
        ``rfft`` of the full-horizon constant PCC power (the load). [MW]
    phasor : callable k -> (U,) complex
        Weight of each model step in X_k.
    pcc_full : callable (model, x) -> (N,)
        Full-horizon PCC power of a solution of the model. [MW]
    allowed : callable k -> bool, optional
        Bins the model may carry (a relaxation drops the others).
    """

    limits: BinLimits
    const_dft: np.ndarray
    phasor: Callable[[int], np.ndarray]
    pcc_full: Callable
    allowed: Callable[[int], bool] | None = None
    sides: int = SIDES
    rows: SpectralRows | None = None

    def attach(self, m) -> SpectralRows:
        """Start the rows of a model (none yet)."""
        self.rows = SpectralRows(self.limits, self.const_dft, self.phasor, m.pcc_terms,
                                 self.allowed, self.sides)
        return self.rows

    def violations(self, m, x: np.ndarray):
        """Bins to add rows for after a solve: ``(k, amp_mw, angle_rad)``. Empty when no bin is
        above its limit times cos(π/M); else every bin above :data:`NEAR` times its limit (the
        bins next in line, so fewer rounds are needed)."""
        p = self.pcc_full(m, x)
        k, _, _ = spectral_violations(p, self.limits, self.sides)
        if k.size == 0:
            return k, np.zeros(0), np.zeros(0)
        return near_limit(p, self.limits, NEAR)

    def seed(self, load_mw: np.ndarray) -> dict:
        """Directions for the bins where the load alone is above its limit (before the first
        solve)."""
        k, _, ang = spectral_violations(load_mw, self.limits, self.sides)
        return self.rows.directions_for(k, ang) if self.rows is not None else {}

    def replay(self, m):
        """A fresh build of the same model with the rows found so far (for the diagnosis)."""
        r = SpectralRows(self.limits, self.const_dft, self.phasor, m.pcc_terms, self.allowed,
                         self.sides)
        if self.rows is not None:
            r.add(m.lp, {k: sorted(v) for k, v in self.rows.cuts.items()})
        return m

    def carried_rows(self, other: "LazySpectral", m, p_pcc_mw: np.ndarray,
                     tol_frac: float = 1e-6) -> list:
        """The direction rows another solve found (for the bins this model allows) that are
        active in that solve's full-horizon PCC power (slack below ``tol_frac`` of the limit),
        each as one dense row of this model,
        Σ_u Re(w_u e^{−jθ}) P_u ≤ A cos(π/M) − Re(X0 e^{−jθ}) (scaled to MW of amplitude):
        a subset of the rows, so adding any of them keeps a relaxation.

        Returns
        -------
        list of (family, cols, vals, rhs, multiplier) : the multiplier the other solve's LP gave
            the row (0 when unknown).
        """
        if other is None or other.rows is None:
            return []
        x = np.fft.rfft(np.asarray(p_pcc_mw) - np.mean(p_pcc_mw))
        out = []
        for k, ms in other.rows.cuts.items():
            if self.allowed is not None and not self.allowed(k):
                continue
            scale = float(amplitude_weight(np.array([k]), self.limits.n_steps)[0])
            limit, fam = self.limits.limit_of(k)
            rhs = limit * np.cos(np.pi / self.sides)
            th = 2 * np.pi * np.asarray(sorted(ms), dtype=float) / self.sides
            val = scale * (x[k].real * np.cos(th) + x[k].imag * np.sin(th))
            ph = self.phasor(k) * scale
            x0 = self.const_dft[k] * scale
            for mm, t, v in zip(sorted(ms), th, val):
                if v < rhs - tol_frac * limit:
                    continue
                w = ph * np.exp(-1j * t)
                cols = np.concatenate([np.asarray(c, dtype=np.int64) for c, _ in m.pcc_terms])
                vals = np.concatenate([(np.broadcast_to(cf, np.shape(c)) * w).real for c, cf in m.pcc_terms])
                out.append((fam, cols, vals, rhs - (x0 * np.exp(-1j * t)).real,
                            other.rows.multipliers.get((k, mm), 0.0)))
        return out


def full_axis_phasor(n_steps: int) -> Callable[[int], np.ndarray]:
    """Phasor of the model that is the full horizon itself: exp(-2πj k u / N)."""
    u = np.arange(n_steps)

    def phasor(k: int) -> np.ndarray:
        return np.exp(-2j * np.pi * k * u / n_steps)

    return phasor


__all__.append("full_axis_phasor")


def grouped_phasor(n_steps: int, g: int) -> Callable[[int], np.ndarray]:
    """Phasor of a model whose column j holds the PCC power over the fine steps jg .. jg+g−1
    (the interior strategy's restriction, :mod:`facility.optimize.model.pcc_grid`):
    Σ_{t in group j} e^{−2πj k t / N}, the last group cut at N. g = 1 is the full axis."""
    full = full_axis_phasor(n_steps)
    if g == 1:
        return full
    grp = np.arange(n_steps) // g
    n_groups = int(grp[-1]) + 1 if n_steps else 0

    def phasor(k: int) -> np.ndarray:
        w = full(k)
        return np.bincount(grp, w.real, n_groups) + 1j * np.bincount(grp, w.imag, n_groups)

    return phasor


__all__.append("grouped_phasor")


def full_spectral(spec, load_mw: np.ndarray, dt_s: float, margin_frac: float = 0.0) -> LazySpectral | None:
    """The lazy spectral rows of the full LP over ``load_mw``'s horizon (None without limits)."""
    if not has_spectral_limits(spec):
        return None
    load = np.asarray(load_mw, dtype=float)
    lim = bin_limits(spec, load.size, dt_s, margin_frac)
    if lim.k.size == 0:
        return None
    return LazySpectral(lim, np.fft.rfft(load), full_axis_phasor(load.size),
                        lambda m, x: m.pcc_of(x))


def tiled_phasor(index: np.ndarray, a: int, p: int, r: int, n_steps: int) -> Callable[[int], np.ndarray]:
    """Phasor of the periodic restriction (:func:`facility.optimize.strategies.periodic.build_upper`):
    its explicit steps at their full-horizon instants ``index``; copy 1 of the core (steps
    a .. a+p−1) stands for the r tiled periods of the middle, weight
    e^{−2πjk(a+i)/N} Σ_{q<r} e^{−2πjkqp/N}; copy 2 is tied to it and weighs 0."""
    idx = np.asarray(index)

    def phasor(k: int) -> np.ndarray:
        w = np.exp(-2j * np.pi * k * idx / n_steps)
        g = np.exp(-2j * np.pi * k * p * np.arange(r) / n_steps).sum()
        w[a:a + p] = np.exp(-2j * np.pi * k * (a + np.arange(p)) / n_steps) * g
        w[a + p:a + 2 * p] = 0.0
        return w

    return phasor


def block_average_phasor(index: np.ndarray, a: int, K: int, B: int, n_steps: int) -> Callable[[int], np.ndarray]:
    """Phasor of the periodic relaxation (:func:`facility.optimize.strategies.periodic.build_lower`) for a
    bin with k K / N whole: every block b of the middle then contributes
    Σ_i x_b[i] e^{−2πjk(a+i)/N}, so the middle's sum is B x̄'s (Y_1, Y_B weigh 0)."""
    idx = np.asarray(index)

    def phasor(k: int) -> np.ndarray:
        w = np.exp(-2j * np.pi * k * idx / n_steps)
        w[a:a + K] = 0.0
        w[a + K:a + 2 * K] = B * np.exp(-2j * np.pi * k * (a + np.arange(K)) / n_steps)
        w[a + 2 * K:a + 3 * K] = 0.0
        return w

    return phasor
