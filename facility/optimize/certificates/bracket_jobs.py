r"""The interior strategy's solve jobs: one bracketing LP built and solved, the bounds its duals
prove, and the stoppable subprocesses the jobs run in (:mod:`facility.optimize.strategies.interior` is the
search that chains them; docs/formulation.md, *Long horizons whose load does not repeat*).

A job (:func:`solve_job`) builds the restriction or the relaxation on groups of g steps
(:func:`facility.optimize.model.pcc_grid.build_grid_model`), with a repair's direction fixes or the
directions the window limits force, solves it by PIQP and returns what the search needs, all
picklable: the plan of a restriction, and the LP's matrix, costs, row duals and column-box
template (the ``"bound"`` piece) that :func:`bound_at` prices by weak duality
(:func:`facility.optimize.solvers.ipm.lagrangian_bound`), valid whatever the solver's accuracy.

PIQP holds the GIL and has no time limit: :func:`run_solves` runs jobs at once, each in a fresh
interpreter (``python -m facility.optimize.certificates.bracket_jobs``) that is stopped at the time limit.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

import facility
from facility.optimize.solvers.ipm import lagrangian_bound, solve_assembled
from facility.optimize.model.lever_columns import lever_plan_from_columns
from facility.optimize.model.pcc_grid import box_template, build_grid_model, column_boxes
from facility.optimize.model.problem import Problem

__all__ = ["RESISTOR_MW", "BOUND_IPM_OPTIONS", "solve_job", "bound_at", "rating_bound_at",
           "processes_allowed", "run_solves"]

#: Overlap of a relaxation solved to :data:`BOUND_IPM_OPTIONS` that counts as a resistor, not
#: as the interior point's noise. The bench's start/stop loads with the forced directions
#: (6 Dec, rerun): 5 min, 30 steps above 1e-4 MW and the same 30 above 1e-2 (at most 0.23 MW,
#: none above 1 MW); 20 min, 3,954 above 1e-4, 3,646 above 1e-2, 607 above 1 MW (up to 26.8 MW,
#: all in t = 0-123 s, the pre-ramp into the storage at 90 % SoC). [MW]
RESISTOR_MW = 1e-2

#: PIQP's tolerances for a bound alone (:func:`facility.optimize.strategies.box_bounds.lp_lower_bound_usd`): weak duality holds at any
#: accuracy, and at 1e-8 the widest relaxed lever box of a jittered 10-minute load stalls (150
#: iterations, a bound of −1,762 USD against an optimum of 24.0) where 1e-6 ends in 64 with a
#: bound of 23.98 USD.
BOUND_IPM_OPTIONS = {"eps_abs": 1e-6, "eps_rel": 1e-6, "eps_duality_gap_abs": 1e-6,
                     "eps_duality_gap_rel": 1e-6}


def solve_job(pb: Problem, mode: str, g: int, zero_ub: dict | None, drop_blocks: bool,
               spectral_dirs: dict | None = None, ipm_options: dict | None = None,
               fine_blocks: int | None = None, forced: dict | None = None,
               max_rating: tuple | None = None) -> dict:
    """Build one bracketing LP (with the band rows of ``spectral_dirs``, long-lag blocks of
    k / ``fine_blocks`` steps at transients), solve it (PIQP with ``ipm_options`` over
    :data:`~facility.optimize.solvers.ipm.IPM_OPTIONS`), and return what the parent needs (picklable).

    ``zero_ub`` and ``forced`` (``{storage: {"ch"|"dis": mask on the model's axis}}``) set
    column upper bounds to 0: ``zero_ub`` a repair's direction fixes (a restriction: the
    bound's column boxes keep their width), ``forced`` the directions every realizable plan
    has (:mod:`facility.optimize.certificates.directions`: the boxes get them too).

    ``max_rating = (storage, upper_usd)``: instead of the cost, maximize that storage's power
    rating over the LP with the row cost ≤ ``upper_usd`` (the ``"rating"`` piece: its
    Lagrangian bound is an upper bound of P̂ in every plan of the LP that costs no more,
    :func:`rating_bound_at`)."""
    t0 = time.perf_counter()
    gm = build_grid_model(pb, g, mode, spectral_dirs, fine_blocks=fine_blocks)
    A, c, lb, ub, rlo, rhi = gm.m.lp.assemble()
    fixed_cols = []
    for fixes, boxed in ((zero_ub, False), (forced, True)):
        for name, steps in (fixes or {}).items():
            for side, idx in steps.items():
                cols = gm.m.cols[name][side][idx]
                ub[cols] = 0.0
                if boxed:
                    fixed_cols.append(cols)
    off = float(gm.m.objective_offset_kusd)  # the levers' constant costs (0 without them)
    if max_rating is not None:
        name, upper_usd = max_rating
        A = sp.vstack([sp.csr_matrix(A), sp.csr_matrix(c.reshape(1, -1))]).tocsr()
        rlo, rhi = np.append(rlo, -np.inf), np.append(rhi, upper_usd / 1000.0 - off)
        c = np.zeros(c.size)
        c[gm.m.cols[name]["p_rated"][0]] = -1.0
    build_s = time.perf_counter() - t0
    sol = solve_assembled(A, c, lb, ub, rlo, rhi, options=ipm_options)
    out = {"mode": mode, "g": g, "status": sol.status, "termination": sol.termination,
           "iterations": sol.iterations, "solve_s": sol.solve_s, "build_s": build_s,
           "objective_kusd": sol.objective + off, "n_variables": int(A.shape[1]),
           "n_constraints": int(A.shape[0]), "has_blocks": bool(gm.block_rows),
           "forced": bool(fixed_cols)}
    if sol.status in ("infeasible", "failed"):
        return out
    x = sol.x
    boxes = box_template(gm)
    if fixed_cols:
        boxes["hi"][np.concatenate(fixed_cols)] = 0.0
    if max_rating is not None:
        out["objective_kusd"] = float("nan")
        out["rating"] = {"A": A, "c": c, "y": sol.y, "rlo": rlo, "rhi": rhi, "keep": None,
                         "boxes": boxes, "upper_usd": float(max_rating[1])}
        return out
    if mode == "relax":  # where the relaxation still charges and discharges at once
        out["overlap_steps"] = {n: int(np.sum(np.minimum(x[cc["ch"]], x[cc["dis"]]) > RESISTOR_MW))
                                for n, cc in gm.m.cols.items()}
    if mode == "restrict":
        out["plan"] = {n: (float(x[cc["p_rated"][0]]), float(x[cc["e_rated"][0]]),
                           x[cc["ch"]].copy(), x[cc["dis"]].copy(), x[cc["e"]].copy())
                       for n, cc in gm.m.cols.items()}
        if gm.m.lever_cols:
            out["lever_plan"] = lever_plan_from_columns(gm.m, x)
    if mode == "restrict" and g > 1:
        # on groups the restriction is another LP (Q held over g steps): its duals bound its
        # own optimum, which lies above the full LP's, so they prove nothing about it
        return out
    keep = None
    if drop_blocks and gm.block_rows:
        keep = np.ones(A.shape[0], dtype=bool)
        for a, b in gm.block_rows:
            keep[a:b] = False
    elif mode == "restrict" and gm.block_rows:
        return out  # a restriction's block rows are not valid rows of the full LP
    out["bound"] = {"A": A, "c": c, "y": sol.y, "rlo": rlo, "rhi": rhi, "keep": keep,
                    "boxes": boxes, "rows": gm.m.lp.row_index()}
    return out


def _piece_lagrangian(piece: dict, pb: Problem, upper_usd: float) -> float:
    """Weak duality on a piece of :func:`solve_job` (its matrix, costs, duals and rows) with
    the column boxes that a plan of cost ``upper_usd`` gives (:func:`column_boxes`): a lower
    bound of the piece's own objective, without its constant offset."""
    lo, hi = column_boxes(piece["boxes"], pb.storages, pb.load_mw, upper_usd, pb.levers)
    return lagrangian_bound(piece["A"], piece["c"], piece["y"], piece["rlo"], piece["rhi"], lo, hi,
                            piece["keep"])


def bound_at(piece: dict, pb: Problem, upper_usd: float) -> float:
    """The Lagrangian bound of an LP (``piece``: what :func:`solve_job` returns as its
    ``"bound"``, or the same for another LP with carried duals,
    :func:`facility.optimize.strategies.box_bounds.bound_with_duals`) with column boxes from a plan of
    cost ``upper_usd``. [USD]"""
    return 1000.0 * (_piece_lagrangian(piece, pb, upper_usd) + piece["boxes"]["offset_kusd"])


def rating_bound_at(piece: dict, pb: Problem) -> float:
    """The upper bound of a storage's power rating from a ``"rating"`` piece of
    :func:`solve_job` (weak duality on min −P̂ with the cost row; the column boxes from the
    cost cap, which every point of that LP meets). [MW]"""
    low = _piece_lagrangian(piece, pb, piece["upper_usd"])
    return -low if np.isfinite(low) else np.inf


def processes_allowed() -> bool:
    """Subprocesses only from a main process on several cores: a sweep's workers (process
    pool, Dask) already fill the cores, so their solves run in place."""
    return mp.current_process().name == "MainProcess" and (os.cpu_count() or 1) > 1


def run_solves(jobs: list, time_limit_s: float, *, in_process: bool = False) -> list:
    """Run ``[(fn, args), ...]`` at once, each in a fresh interpreter stopped at ``time_limit_s``.

    Each job is pickled to a file and run by ``python -m facility.optimize.certificates.bracket_jobs`` (a
    subprocess: no re-import of the caller's main module, no fork of a threaded process),
    which pickles the result back. Returns each result, or None for a job that ran out of
    time or failed. With ``in_process`` (or inside a worker process, or on one core) they run
    one after the other in this process, without a time limit of their own.
    """
    if in_process or not processes_allowed():
        return [fn(*args) for fn, args in jobs]
    root = os.path.dirname(os.path.dirname(os.path.abspath(facility.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    with tempfile.TemporaryDirectory(prefix="facility-ipm-") as tmp:
        procs = []
        for i, job in enumerate(jobs):
            src, dst = os.path.join(tmp, f"job{i}.pkl"), os.path.join(tmp, f"out{i}.pkl")
            with open(src, "wb") as f:
                pickle.dump(job, f, protocol=pickle.HIGHEST_PROTOCOL)
            err = open(os.path.join(tmp, f"err{i}.txt"), "wb")
            procs.append((subprocess.Popen([sys.executable, "-m", "facility.optimize.certificates.bracket_jobs", src, dst],
                                           stdout=subprocess.DEVNULL, stderr=err, env=env), dst, err))
        deadline = time.perf_counter() + time_limit_s
        out = []
        for p, dst, err in procs:
            killed = False
            try:
                p.wait(timeout=max(0.0, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                killed = True
            err.close()
            res = None
            if p.returncode == 0 and os.path.exists(dst):
                with open(dst, "rb") as f:
                    res = pickle.load(f)
            elif not killed:
                with open(err.name, "rb") as f:
                    tail = f.read()[-400:].decode(errors="replace").strip()
                warnings.warn(f"an interior-point solve failed in its subprocess: {tail}", stacklevel=3)
            out.append(res)
        return out


def _worker_main(src: str, dst: str) -> None:
    """Entry of the subprocess of :func:`run_solves`."""
    with open(src, "rb") as f:
        fn, args = pickle.load(f)
    res = fn(*args)
    with open(dst, "wb") as f:
        pickle.dump(res, f, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":  # the subprocess of run_solves
    _worker_main(sys.argv[1], sys.argv[2])
