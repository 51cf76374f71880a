"""GPU-side levers as decisions of the LP, beside storage: burned power, the power floor, a cap.

Per job j (groups g of n_g GPUs, TDP c [W], base power p_g(t) [W per GPU] after the GPU
controls that are not decisions), the levers change the job's GPU power by ΔP_j(t) [MW]:

* **floor** F_j [frac of TDP] in the GPU's programmable range [F_min, F_max]
  (``models/gpus``): while the floor holds (the job runs, or within ``stop_delay_s`` after),
  the GPU burns up to it, b^F_j(t) = Σ_g n_g max(F_j c − p_g(t), 0);
* **burn** e_j(t) ≥ 0: power burned on top of it (a dummy load that follows a planned
  trajectory: firefly's fill-in with a time-varying target), while the job runs, within the
  headroom under the GPU's ceiling: e_j(t) + b^F_j(t) ≤ Σ_g n_g (c' − p_g(t))^+ (c' = TDP, or the
  cap);
* **cap** C_j [frac of TDP] in [C_min, 1]: a static power limit clips the job,
  r_j(t) = Σ_g n_g max(p_g(t) − C_j c, 0), and slows its compute phases (the slowest group
  gates the job): extra time φ_j(C) = max_g Σ_{t ∈ compute} ((p_g / (C c))^κ − 1)^+ Δt
  (``power_cap.perf_exponent`` κ, as :mod:`facility.gpu.power_cap`).

ΔP_j = b^F_j + e_j − r_j. b^F and r are piecewise linear in F and C, with breakpoints at the
levels p_g(t) / c of the job's power. Between two consecutive levels (a *piece*), the sets
{p_g(t) ≤ F c} and {p_g(t) ≥ C c} are fixed, so

.. math::  b^F_j(t) = F_j\\, a^F_j(t) + d^F_j(t),\\qquad r_j(t) = d^C_j(t) - C_j\\, a^C_j(t)

with a^F = Σ_{g: p_g ≤ F_lo c} n_g c, d^F = −Σ_{same g} n_g p_g, a^C = Σ_{g: p_g ≥ C_hi c} n_g c,
d^C = Σ_{same g} n_g p_g (the held / running masks included): exact and linear. The driver
(:func:`facility.optimize.driver.api.size_storage`) solves one LP per combination of pieces and keeps
the cheapest (:func:`lever_pieces`; the LP's columns and rows are in :mod:`facility.optimize.model.lever_columns`);
with the burn lever only the lowest floor piece is needed
(a higher floor burns more everywhere, which the burn can do as well, at the same price).

The site sees ΔP through the site model of :mod:`facility.workload.site`: IT power
κ_it ΔP (κ_it = 1 + ``non_gpu_frac``) and cooling lag_τ[(pue − 1) κ_it ΔP]; with
``cooling_tau_s`` = 0 the PCC power gains κ ΔP, κ = κ_it · pue; with a lag, one state column per
step carries the first-order lag (y_t = a y_{t−1} + (1 − a) x_t, a = exp(−Δt/τ), started at
the mean of x over min(T, 5τ/Δt) steps, exactly as the simulator).

Costs per horizon [k$], beside the storage's: burned energy at the energy price π,
π Δt_h κ Σ_t (b^F_j + e_j) (with a lag the steady-state factor κ, which the lag preserves
up to its end effect); the cap's slowdown at ``optimize.slowdown_usd_per_gpu_h`` × n_j × φ_j(C)
/ 3600, with φ_j replaced by its chords between :data:`CAP_SEGMENTS` + 1 points of the piece
(φ is convex in C, so the chords lie above it: the LP never under-prices the slowdown). The
energy a cap saves in the nominal schedule is not credited: the stretched job spends it later.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import product

import numpy as np

from facility.errors import ScenarioError
from facility.optimize.model.storage_data import S_PER_H

__all__ = ["LEVER_NAMES", "JobInput", "LeverInputs", "JobLever", "LeverSet", "lever_pieces",
           "piece_lists", "no_cap_frac", "idle_levers",
           "site_response_mw", "piece_lower_bound_kusd", "single_job_inputs", "cap_extra_s", "capped_power_sums",
           "CAP_SEGMENTS", "MAX_PIECES"]

LEVER_NAMES = ("storage", "floor", "burn", "cap")
#: Chords of the slowdown curve per cap piece.
CAP_SEGMENTS = 8
#: Most LPs the piece enumeration solves; beyond it the pieces containing an even grid of
#: floor / cap values are solved first and the others bounded by a branch and bound over
#: boxes of them (:mod:`facility.optimize.strategies.lever_search`).
MAX_PIECES = 16
_TOL = 1e-9


@dataclass(frozen=True)
class JobInput:
    """What the levers of one job act on (the driver fills it from the scenario).

    Attributes
    ----------
    name : str
        Job name.
    n_gpus : numpy.ndarray (G,)
        GPUs per rack group of the job.
    p_gpu_w : numpy.ndarray (G, T)
        Power of one GPU per group after the GPU controls that are not decisions. [W]
    tdp_w : float
        TDP c. [W]
    ceiling_w : float
        Highest power the burn may fill up to without a cap lever (TDP, or a fixed cap). [W]
    running, held, compute : numpy.ndarray of bool (G, T)
        Job running (burn allowed), floor held (running + stop delay), compute phase.
    floor_range : (float, float) or None
        Programmable floor range [frac of TDP]; None = the floor is not a decision.
    cap_range : (float, float) or None
        Programmable cap range [frac of TDP]; None = no cap decision.
    burn : bool
        Whether burned power is a decision.
    perf_exponent : float
        Throughput ~ power^κ under a cap. [-]
    """

    name: str
    n_gpus: np.ndarray
    p_gpu_w: np.ndarray
    tdp_w: float
    ceiling_w: float
    running: np.ndarray
    held: np.ndarray
    compute: np.ndarray
    floor_range: tuple | None = None
    cap_range: tuple | None = None
    burn: bool = False
    perf_exponent: float = 0.5


@dataclass(frozen=True)
class LeverInputs:
    """The jobs' lever data and the site response.

    Attributes
    ----------
    jobs : tuple of JobInput
    it_per_gpu : float
        κ_it = 1 + non_gpu_frac: IT MW per GPU MW. [-]
    cooling_per_gpu : float
        (pue − 1) κ_it: cooling MW per GPU MW in steady state. [-]
    cooling_tau_s : float
        Cooling lag τ. [s]
    """

    jobs: tuple
    it_per_gpu: float
    cooling_per_gpu: float
    cooling_tau_s: float


@dataclass(frozen=True)
class JobLever:
    """One job's levers on one piece, on the problem's grid (arrays (T,), MW GPU side).

    ``floor_coef_mw`` a^F, ``floor_const_mw`` d^F, ``cap_coef_mw`` a^C, ``cap_const_mw`` d^C,
    headroom H(t) = ``head_const_mw`` + C ``head_coef_mw`` on running steps (0 elsewhere);
    ``cap_grid`` (K+1,) caps [frac] and ``cap_extra_s`` (K+1,) the job's extra time φ at them
    [s].
    """

    name: str
    n_gpus: float
    burn: bool
    floor: tuple | None
    cap: tuple | None
    floor_coef_mw: np.ndarray
    floor_const_mw: np.ndarray
    cap_coef_mw: np.ndarray
    cap_const_mw: np.ndarray
    head_const_mw: np.ndarray
    head_coef_mw: np.ndarray
    running: np.ndarray
    cap_grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cap_extra_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per group Σ p^κ and count over the capped compute steps, with TDP, κ and Δt: the exact φ
    cap_terms: tuple = ()
    #: a *relaxed* lever (:func:`facility.optimize.strategies.lever_boxes.box_levers`, several pieces at once; a bound, never a plan):
    #: per step the floor burn it may add above ``floor_const_mw`` [MW], priced as burn
    floor_room_mw: np.ndarray | None = None
    #: per step the clipping it may add above ``cap_const_mw`` [MW], free
    clip_room_mw: np.ndarray | None = None

    def extra_s_at(self, cap_frac: float) -> float:
        """Exact extra running time φ(C) of the job on this piece (not the LP's chords). [s]"""
        if not self.cap_terms:
            return 0.0
        s, cnt, tdp, e, dt = self.cap_terms
        per = s * (cap_frac * tdp) ** (-e) - cnt
        return float(dt * max(np.max(per, initial=0.0), 0.0))

    def take(self, idx) -> "JobLever":
        """The same lever on the steps ``idx`` (another axis: coarse grid, reduced model)."""
        rooms = {k: getattr(self, k)[idx] for k in ("floor_room_mw", "clip_room_mw")
                 if getattr(self, k) is not None}
        return replace(self, **{k: getattr(self, k)[idx] for k in _STEP_FIELDS}, **rooms)

    def step_arrays(self) -> list:
        """Per-step data (for the periodicity and coarsening checks)."""
        return [getattr(self, k) for k in _STEP_FIELDS]


_STEP_FIELDS = ("floor_coef_mw", "floor_const_mw", "cap_coef_mw", "cap_const_mw", "head_const_mw",
                "head_coef_mw", "running")


@dataclass(frozen=True)
class LeverSet:
    """The levers of every job on one piece combination, and the site response."""

    jobs: tuple
    it_per_gpu: float
    cooling_per_gpu: float
    cooling_tau_s: float
    slowdown_usd_per_gpu_h: float
    #: label of the piece combination (for reports)
    piece: str = ""

    @property
    def site_per_gpu(self) -> float:
        """κ = κ_it · pue: site MW per GPU MW in steady state. [-]"""
        return self.it_per_gpu + self.cooling_per_gpu

    @property
    def lagged(self) -> bool:
        """Whether the cooling lags (one state column per step)."""
        return self.cooling_tau_s > 0 and self.cooling_per_gpu > 0

    @property
    def has_burn(self) -> bool:
        """Whether some job has the burn lever."""
        return any(j.burn for j in self.jobs)

    def take(self, idx) -> "LeverSet":
        """The same levers on the steps ``idx``."""
        return replace(self, jobs=tuple(j.take(idx) for j in self.jobs))

    def step_arrays(self) -> list:
        """Every per-step array of every job."""
        return [a for j in self.jobs for a in j.step_arrays()]


def single_job_inputs(p_gpu_w: np.ndarray, n_gpus: float, tdp_w: float, *, compute=None, running=None,
                      floor_range=None, cap_range=None, burn: bool = False, perf_exponent: float = 0.5,
                      it_per_gpu: float = 1.0, cooling_per_gpu: float = 0.0, cooling_tau_s: float = 0.0,
                      name: str = "job") -> LeverInputs:
    """Lever inputs of one job in one rack group (tests, benchmarks, studies on arrays).

    ``p_gpu_w`` (T,) [W per GPU]; ``compute`` defaults to p above the midpoint of its range,
    ``running`` to everywhere (the floor holds where it runs)."""
    p = np.asarray(p_gpu_w, dtype=float)[None, :]
    run = np.ones(p.shape, bool) if running is None else np.asarray(running, bool)[None, :]
    comp = (p > 0.5 * (p.min() + p.max())) if compute is None else np.asarray(compute, bool)[None, :]
    job = JobInput(name, np.array([float(n_gpus)]), p, float(tdp_w), float(tdp_w), run, run, comp,
                   floor_range, cap_range, burn, perf_exponent)
    return LeverInputs((job,), it_per_gpu, cooling_per_gpu, cooling_tau_s)


def site_response_mw(delta_gpu_mw: np.ndarray, dt_s: float, it_per_gpu: float,
                     cooling_per_gpu: float, cooling_tau_s: float) -> np.ndarray:
    """Site power change of a GPU power change, as :func:`facility.workload.site_power`. [MW]"""
    # the workload package and scipy.signal (~1 s) would load with every optimizer import, the
    # fresh `python -m ...bracket_jobs` process of each bracketing LP included; the optimizer
    # keeps scipy.signal in the functions that filter (verify, realize, fallback) for the same reason
    from facility.workload.site import cooling_lag  # lazy: scipy.signal + facility.workload, ~1 s per import

    x = np.asarray(delta_gpu_mw, dtype=float)
    return it_per_gpu * x + cooling_lag(cooling_per_gpu * x, dt_s, cooling_tau_s)


def _levels(p_frac: np.ndarray, mask: np.ndarray, lo: float, hi: float) -> np.ndarray:
    v = np.unique(np.round(p_frac[mask], 12))
    return v[(v > lo + _TOL) & (v < hi - _TOL)]


def _pieces(lo: float, hi: float, levels: np.ndarray) -> list[tuple[float, float]]:
    edges = np.concatenate([[lo], levels, [hi]])
    return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]


def _thin(pieces: list, n: int) -> list:
    """The pieces that contain an even grid of n values (a subset, in order)."""
    if len(pieces) <= n:
        return pieces
    lo, hi = pieces[0][0], pieces[-1][1]
    grid = np.linspace(lo, hi, n)
    keep = sorted({next(i for i, (a, b) in enumerate(pieces) if a - _TOL <= v <= b + _TOL) for v in grid})
    return [pieces[i] for i in keep]


def idle_levers(inp: LeverInputs, dt_s: float, slowdown_usd_per_gpu_h: float = 0.0
                ) -> tuple[LeverSet, np.ndarray]:
    """The levers idle: per job the floor at its least value (the floor lever holds one), no
    cap, no burn; as :func:`lever_pieces`' (LeverSet, constant GPU power change)."""
    jobs = []
    for j in inp.jobs:
        fp = None if j.floor_range is None or j.floor_range[0] <= 0 else (j.floor_range[0],) * 2
        jobs.append(replace(_job_piece(j, fp, None, dt_s), burn=False))
    return _lever_set(inp, jobs, slowdown_usd_per_gpu_h, [_label(j.name, jl.floor, None) + " (idle)"
                                                          for j, jl in zip(inp.jobs, jobs)])


def _thin_caps(pc: list, n: int) -> list:
    """:func:`_thin` of the cap pieces, the no-cap choice (a last None) kept."""
    if pc[0] is None:
        return pc
    tail = [None] if pc[-1] is None else []
    return _thin(pc[:len(pc) - len(tail)], n) + tail


def _job_piece(j: JobInput, fp, cp, dt_s: float) -> JobLever:
    c = j.tdp_w
    n = j.n_gpus.astype(float)[:, None] / 1e6  # MW per W
    p = j.p_gpu_w
    T = p.shape[1]
    z = np.zeros(T)
    a_f = d_f = a_c = d_c = z
    capped = np.zeros(p.shape, dtype=bool)
    if fp is not None:
        A = j.held & (p <= fp[0] * c + _TOL * c)
        a_f = (n * c * A).sum(axis=0)
        d_f = -(n * p * A).sum(axis=0)
    grid = extra = np.zeros(0)
    terms = ()
    if cp is not None:
        capped = p >= cp[1] * c - _TOL * c
        a_c = (n * c * capped).sum(axis=0)
        d_c = (n * p * capped).sum(axis=0)
        grid = np.linspace(cp[0], cp[1], CAP_SEGMENTS + 1)
        extra = cap_extra_s(j, grid, capped, dt_s)
        terms = (*capped_power_sums(j, capped), j.tdp_w, j.perf_exponent, dt_s)
    run = j.running.any(axis=0)
    free = j.running & ~capped
    if cp is not None:
        h0 = -(n * p * free).sum(axis=0)
        h1 = (n * c * free).sum(axis=0)
    else:
        h0 = (n * np.maximum(j.ceiling_w - p, 0.0) * j.running).sum(axis=0)
        h1 = z
    return JobLever(j.name, float(j.n_gpus.sum()), j.burn, fp, cp, a_f, d_f, a_c, d_c, h0, h1,
                    run.astype(float), grid, extra, terms)


def cap_extra_s(j: JobInput, caps: np.ndarray, capped: np.ndarray, dt_s: float) -> np.ndarray:
    """Extra running time φ of a job at each cap (slowest group), :mod:`facility.gpu.power_cap`.

    On a piece the capped steps are fixed, so φ(C) = Δt max_g [Σ_t p^κ (C c)^{-κ} − n_t]. [s]
    """
    s, cnt = capped_power_sums(j, capped)
    caps = np.asarray(caps, dtype=float)
    per = s[None, :] * np.power(caps[:, None] * j.tdp_w, -j.perf_exponent) - cnt[None, :]
    return dt_s * np.maximum(per, 0.0).max(axis=1) if per.size else np.zeros(caps.size)


def capped_power_sums(j: JobInput, capped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rack group Σ p^κ [W^κ] and the count of the ``capped`` compute steps: the terms of
    φ(C) = Δt max_g [Σ_t p^κ (C c)^{-κ} − n_t] (:func:`cap_extra_s`)."""
    m = capped & j.compute
    s = np.where(m, np.power(np.maximum(j.p_gpu_w, 0.0), j.perf_exponent), 0.0).sum(axis=1)
    return s, m.sum(axis=1)


def piece_lists(inp: LeverInputs) -> list[tuple[JobInput, list, list]]:
    """Per job its floor pieces and its cap pieces, in order (``[None]`` where that lever is
    not a decision; with the burn lever the lowest floor piece only)."""
    per_job = []
    for j in inp.jobs:
        pf = [None]
        if j.floor_range is not None and j.floor_range[1] > j.floor_range[0] + _TOL:
            lo, hi = j.floor_range
            pf = _pieces(lo, hi, _levels(j.p_gpu_w / j.tdp_w, j.held, lo, hi))
            if j.burn:
                pf = pf[:1]  # a higher floor burns more everywhere: the burn does the same
        elif j.floor_range is not None:
            pf = [(j.floor_range[0], j.floor_range[0])] if j.floor_range[0] > 0 else [None]
        pc = [None]
        if j.cap_range is not None:
            lo, hi = j.cap_range
            pc = _pieces(lo, hi, _levels(j.p_gpu_w / j.tdp_w, np.ones_like(j.held), lo, hi))
            if no_cap_frac(j) > hi + _TOL:
                pc.append(None)  # no cap at all: the power above the highest cap is not clipped
        per_job.append((j, pf, pc))
    return per_job


def no_cap_frac(j: JobInput) -> float:
    """The job's highest power [frac of TDP]: a cap at or above it clips nothing. The load
    generator's level noise can lift the compute phase above TDP, so a cap range ending at TDP
    would always clip (and slow) it: with no cap the last choice (:func:`piece_lists`)."""
    return float(np.max(j.p_gpu_w, initial=0.0)) / j.tdp_w


def lever_pieces(inp: LeverInputs, dt_s: float, slowdown_usd_per_gpu_h: float = 0.0
                 ) -> tuple[list[tuple[LeverSet, np.ndarray]], int]:
    """Every piece combination as a :class:`LeverSet` and its constant GPU power change.

    ``slowdown_usd_per_gpu_h`` (``optimize.slowdown_usd_per_gpu_h``) prices the cap's slowdown.

    Returns
    -------
    (pieces, n_total) : list of (LeverSet, d (T,) = Σ_j d^F_j − d^C_j [MW GPU side]) and the
        number of combinations before thinning (:data:`MAX_PIECES`; the driver bounds the
        others, :mod:`facility.optimize.strategies.lever_search`).
    """
    per_job = piece_lists(inp)
    n_total = int(np.prod([len(pf) * len(pc) for _, pf, pc in per_job]))
    if n_total > MAX_PIECES:
        k = max(2, int(np.floor(MAX_PIECES ** (1.0 / max(1, 2 * len(inp.jobs))))))
        per_job = [(j, _thin(pf, k) if pf[0] is not None else pf, _thin_caps(pc, k)) for j, pf, pc in per_job]
    out = []
    choices = [list(product(pf, pc)) for _, pf, pc in per_job]
    for combo in product(*choices):
        jobs, labels = [], []
        for (j, _, _), (fp, cp) in zip(per_job, combo):
            if fp is not None and cp is not None and fp[0] > cp[1] + _TOL:
                break  # floor above the cap on the whole piece
            jobs.append(_job_piece(j, fp, cp, dt_s))
            labels.append(_label(j.name, fp, cp))
        else:
            out.append(_lever_set(inp, jobs, slowdown_usd_per_gpu_h, labels))
    if not out:
        raise ScenarioError("optimize.levers: no floor / cap combination within the GPUs' ranges "
                            "keeps the floor below the cap")
    return out, n_total


def _label(name: str, fp, cp) -> str:
    out = f"{name}: floor {fp[0]:.3g}-{fp[1]:.3g}" if fp else f"{name}"
    return out + (f", cap {cp[0]:.3g}-{cp[1]:.3g}" if cp else "")


def _lever_set(inp: LeverInputs, jobs: list, slowdown_usd_per_gpu_h: float, labels: list
               ) -> tuple[LeverSet, np.ndarray]:
    ls = LeverSet(tuple(jobs), inp.it_per_gpu, inp.cooling_per_gpu, inp.cooling_tau_s,
                  slowdown_usd_per_gpu_h, "; ".join(labels))
    d = sum((jl.floor_const_mw - jl.cap_const_mw for jl in jobs), np.zeros(inp.jobs[0].p_gpu_w.shape[1]))
    return ls, d


def piece_lower_bound_kusd(lv: LeverSet, dt_s: float, price_usd_per_mwh: float) -> float:
    """A lower bound of the objective of any plan on this piece [k$ per horizon]: the floor's
    burn at the piece's lowest floor plus the slowdown at its highest cap (every other cost —
    capex, losses, degradation, planned burn — is ≥ 0, the floor burn grows with F and the
    slowdown falls with C). The driver skips pieces whose bound is above the best plan found."""
    h = dt_s / S_PER_H
    lb = 0.0
    for jl in lv.jobs:
        if jl.floor is not None:
            fb = np.maximum(jl.floor[0] * jl.floor_coef_mw + jl.floor_const_mw, 0.0)
            lb += price_usd_per_mwh / 1000.0 * h * lv.site_per_gpu * float(np.sum(fb))
        if jl.cap is not None and jl.cap_extra_s.size:
            lb += lv.slowdown_usd_per_gpu_h / 1000.0 * jl.n_gpus / S_PER_H * float(jl.cap_extra_s[-1])
    return lb
