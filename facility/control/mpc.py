"""Receding-horizon control (MPC): one LP over every storage, re-solved every ``replan_s``.

At each re-plan the MPC

1. **measures**: the drawn load up to ``measurement_delay_s`` ago (with ``warm_start`` the
   first window of load stands for the time before t = 0, as for the other controllers),
   the PCC power of the last window, every storage's SoC;
2. **forecasts** the load level on the MPC grid (``mpc_dt_s``) over ``horizon_s``
   (:mod:`facility.control.forecast`): the iteration period is detected from the last
   windows, the level is the mean over whole periods, and the declared schedule (job
   start/stop ramps, checkpoints: :mod:`facility.control.schedule`) moves it ahead;
   ``perfect`` plans on the load it will draw instead, ``persistence`` on the last block;
3. **plans** with :func:`facility.optimize.solve_dispatch`: all storages in one LP with their
   power and SoC limits (UPS reserve included), SoC windows narrowed by the energy each one
   needs to absorb the iteration ripple, the spec's linear limits scaled by
   ``1 - mpc_margin_frac(scenario)`` (:mod:`facility.control.plan`) and applied across the PCC history of the last window, an
   end-of-horizon SoC band that pulls each storage toward its SoC target (away from its
   bounds), and a price on the PCC variation that keeps the plan flat where the limits leave
   a choice (changes slower than ``mpc_crossover_s`` go to the grid at the allowed rate,
   faster ones to storage);
4. **hands over** the plan: the PCC target and each storage's power, held over each MPC step;
   the fast storage closes the gap between plan and measured load (overflow to the others).

A crash nobody announced (:mod:`facility.control.crash`): the level is taken since a step
in the measured load; where the band toward the SoC target is out of reach, the plan must end
at least as close to it as the fastest return of the PCC from its history to the forecast
leaves the storage (the *descent*, before planning without an end); and the SoC target is
kept the crash reserve (``controller.crash_reserve_mw``) below the top of its window.

A re-plan keeps the plan in force, shifted, without a solve (``controller.mpc_reuse_max``
times in a row at most, ``info['n_replans_reused']``) where it still holds: it was a plain
plan, it covers half a horizon more, and the new forecast, the PCC measured since it was
made and each storage's energy agree with it within :data:`REUSE_TOL_FRAC` (of the smallest
window allowance; of the rating). The loop applies only a plan's first interval, so such a
plan is the one a new solve would give up to the solver's tolerance.

A solve that fails (infeasible even without the SoC band, solver error) or takes longer
than ``mpc_deadline_s`` leaves the interval to the filter controller (bumpless: its grid
target starts from the last planned PCC power and moves at the spec's allowed rate), logged
as ``mpc_fallback``. Every re-plan's wall time is recorded (``info['mpc_solve_times_s']``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from facility.control import plan as _plan
from facility.control.crash import crash_drop_mw, crash_reserve_mwh, descent, step_level, window_limits
from facility.control.forecast import (block_mean, estimate_period_steps, forecast_load,
                                       level_forecast, level_window_steps, measured_level,
                                       ripple_of, ripple_reserves_mwh, ripple_shares)
from facility.control.mpc_grid import choose_grid
from facility.control.plan import (allowed_rate_mw_per_s, mpc_margin_frac,  # noqa: F401 (API)
                                   mpc_spec, variation_cost_usd_per_mw)
from facility.errors import FacilityError, ScenarioError

__all__ = ["mpc_spec", "mpc_margin_frac", "allowed_rate_mw_per_s", "variation_cost_usd_per_mw",
           "MpcPlanner"]

#: SoC band the end-of-horizon target may leave around the target. [frac]
SOC_DEADBAND_FRAC = 0.005
#: The nominal waveform is the forecast when the measured load follows it this closely
#: (RMS of the difference / RMS of the measured swing). [frac]
WAVEFORM_MATCH_FRAC = 0.05
#: With several storages the fast one plans within its SoC target +- this. [frac]
FAST_BAND_FRAC = 0.1
#: Second try of a re-plan: end at most this far beyond the SoC now, away from the target. [frac]
SOC_KEEP_FRAC = 0.02
#: Tolerance of the descent's end-of-horizon SoC band (the fastest return is feasible
#: exactly; a wider band lets the plan put off the fall). [frac]
DESCENT_TOL_FRAC = 1e-4
#: Grid power a SoC recovery may take, as a share of the site's load level. [frac]
REC_LEVEL_FRAC = 0.05
#: "Agree" (``controller.mpc_reuse_max`` re-plans in a row may keep the plan in force): the forecast and the PCC within this share of the smallest window allowance of
#: the MPC's spec, the energy within this share of each storage's rating. [frac]
REUSE_TOL_FRAC = 0.02


class MpcPlanner:
    """Forecast and re-plan bookkeeping of the MPC; :func:`facility.control.run_control`
    calls :meth:`replan` every ``replan_s`` and writes the plan into the loop's arrays.

    Parameters
    ----------
    ctrl : ControllerConfig
    scenario : Scenario
        ``spec``, ``optimize`` and the storage sections (their economics).
    params : dict of StorageParams
        Resolved storages, in the loop's order.
    fast : int
        Index of the fast storage (closes the gap; takes the ripple first).
    dt_s : float
        Simulation step. [s]
    load_mw : numpy.ndarray (T,)
        Plain site power (only its first window is read, for the warm start; ``perfect``
        reads the future). [MW]
    schedule : SiteSchedule, optional
        Expected site power of the declared schedule (:func:`site_schedule`).
    first_mw : numpy.ndarray (T,), optional
        What was drawn before t = 0 under the warm start (its first window repeats); default
        ``load_mw`` (the GPU-engaged power when the co-design starts engaged). [MW]
    """

    def __init__(self, ctrl, scenario, params: dict, fast: int, dt_s: float, load_mw: np.ndarray,
                 schedule=None, first_mw: np.ndarray | None = None):
        self.ctrl, self.scenario, self.dt_s = ctrl, scenario, dt_s
        self.names = list(params)
        self.params = params
        self.fast = fast
        self.T = load_mw.size
        self.load = load_mw
        use = schedule is not None and ctrl.forecast_schedule
        self.schedule = np.asarray(schedule.p_level_mw, dtype=float) if use else None
        self.nominal = np.asarray(schedule.p_nominal_mw, dtype=float) if use else None
        self.margin_frac = mpc_margin_frac(scenario)
        self.spec = mpc_spec(scenario.spec, self.margin_frac)
        self.rate = allowed_rate_mw_per_s(self.spec)
        self._choose_grid()
        self.limits = window_limits(self.spec, self.mpc_dt)
        # the tightest window limit (a reused plan's tolerance, _reused; None: no window limit) [MW]
        self.allow_mw = min((min(dn, up) for _, dn, up in self.limits), default=None)
        # each storage's efficiencies as columns (its planned losses) [frac]
        self.eta_c = np.array([q.eff_charge_frac for q in params.values()])[:, None]
        self.eta_d = np.array([q.eff_discharge_frac for q in params.values()])[:, None]
        self.replan_k = max(1, int(round(ctrl.replan_s / dt_s)))
        self.delay = int(round(ctrl.measurement_delay_s / dt_s))
        cfgs = scenario.storage_units()   # a hybrid section's units: each its own storage in the LP
        self.cfgs = {}
        for n in self.names:
            if n not in cfgs:
                raise ScenarioError(f"MPC: storage {n!r} is not enabled in the scenario")
            p = params[n]
            self.cfgs[n] = cfgs[n].model_copy(update={
                "extendable": False, "p_rated_mw": p.p_rated_mw, "e_rated_mwh": p.e_rated_mwh,
                "terminal_soc": "free"})
        self.deadline_s = ctrl.mpc_deadline_s if ctrl.mpc_deadline_s is not None else ctrl.replan_s
        self.optimize = scenario.optimize.model_copy(update={
            "time_limit_s": max(self.deadline_s, 1e-3), "limit_margin_frac": 0.0,
            "allow_slack": False, "coarsen": False, "periodic": False})
        spec = scenario.spec
        look = max(spec.window_s if spec.max_window_swing_mw is not None else 0.0,
                   spec.ramp_window_s if (spec.max_ramp_up_mw_per_s or spec.max_ramp_down_mw_per_s) else 0.0,
                   60.0 if spec.max_ramp_mw_per_min is not None else 0.0)
        self.pcc_hist_n = int(np.ceil(look / self.mpc_dt))        # MPC steps of PCC history
        self.hist_n = int(round(max(60.0, 4 * ctrl.replan_s) / dt_s))   # measured history [steps]
        self.level_max_n = int(round(ctrl.level_window_s / dt_s))
        self.period_fixed = (None if ctrl.forecast_period_s is None
                             else max(1, int(round(ctrl.forecast_period_s / dt_s))))
        self.vcost = variation_cost_usd_per_mw(ctrl.mpc_crossover_s, params,
                                               scenario.optimize.energy_price_usd_per_mwh)
        tgt = [p.initial_soc_frac if ctrl.soc_target_frac is None else ctrl.soc_target_frac
               for p in params.values()]
        self.soc_target = np.clip(np.array(tgt, dtype=float),
                                  [p.min_soc_frac for p in params.values()],
                                  [p.max_soc_frac for p in params.values()])
        # recovery time constant toward the SoC target: at most 1 / soc_gain_per_s; small
        # storages faster, as long as a half-full SoC error moves the grid by at most
        # REC_LEVEL_FRAC of the site's level; the fast storage refills from the others (no
        # grid impact) within about a third of the horizon
        self.tau_max_s = 1.0 / ctrl.soc_gain_per_s if ctrl.soc_gain_per_s > 0 else math.inf
        self.e_half_mwh = np.array([0.5 * (p.max_soc_frac - p.min_soc_frac) * p.e_rated_mwh
                                    for p in params.values()])
        self.pre = None
        self.pre_n = max(1, min(self.T, self.hist_n))
        if ctrl.warm_start:
            # the load before t = 0 repeats the first window (as for the other controllers):
            # pre[-1] is step -1, i.e. load[(-1) mod pre_n]
            idx = np.arange(-self.hist_n, 0) % self.pre_n
            self.pre = (load_mw if first_mw is None else first_mw)[:self.pre_n][idx]
        self.solve_times_s: list[float] = []
        self._last_period: int | None = None
        self.mode = ctrl.forecast
        # storages that take a share of the iteration ripple: no converter lag, no ramp
        # limit, and not the UPS battery (its converter and battery are there for
        # ride-through; cycling them at the iteration frequency wears them, and the filter
        # gives it the slow band too). The fast storage takes its part first in any case.
        self.follows = np.array([n != "ups" and p.response_s <= dt_s and p.max_ramp_mw_per_s is None
                                 for n, p in params.items()])
        self.err_share = np.zeros(len(params))
        if len(params):
            self.err_share[fast] = 1.0
        self.period_steps: int | None = None
        # charging room kept for the largest unannounced drop (controller.crash_reserve_mw;
        # unset: the largest job with [jobs.failures]),
        # as a share of the storages' energy, held below the top of each planning window
        e_tot = sum(p.e_rated_mwh for p in params.values())
        eta_c = float(np.mean([p.eff_charge_frac for p in params.values()])) if params else 1.0
        self.crash_drop_mw = (crash_drop_mw(scenario) if ctrl.crash_reserve_mw is None
                              else float(ctrl.crash_reserve_mw))
        self.crash_reserve_mwh = crash_reserve_mwh(self.crash_drop_mw, self.rate, eta_c)
        self.crash_frac = self.crash_reserve_mwh / e_tot if e_tot > 0 else 0.0
        self.in_descent = False
        self._prev = None           # the plan in force, for reuse (_reused)
        self.plan_loss_mw = np.zeros(len(params))   # planned conversion loss, last plan [MW]
        self.comp_frac = np.ones(len(params))       # loss compensation left to the loop [frac]
        self.target = self.soc_target.copy()

    # ------------------------------------------------------------------ set-up
    def _choose_grid(self) -> None:
        """MPC step, level step and horizon (:func:`facility.control.mpc_grid.choose_grid`)."""
        g = choose_grid(self.ctrl, self.dt_s, self.spec, self.schedule, self.rate,
                        sum(p.p_rated_mw for p in self.params.values()))
        self.r, self.mpc_dt, self.k_level, self.horizon_s, self.n_h = g.r, g.mpc_dt, g.k_level, g.horizon_s, g.n_h

    # ------------------------------------------------------------------ pieces
    def _measured(self, out_load: np.ndarray, end: int) -> np.ndarray:
        """Measured drawn load up to step ``end`` (exclusive), warm-start pre-history first."""
        lo = max(0, end - self.hist_n)
        h = out_load[lo:max(0, end)]
        if self.pre is not None and h.size < self.hist_n:
            h = np.concatenate([self.pre[self.pre.size - (self.hist_n - h.size):], h])
        return h

    def _detect_period(self, hist: np.ndarray) -> int | None:
        """Iteration period of the measured load [steps]: autocorrelation on a 50 ms grid of
        the last 20 s, else of the whole history (60 s); the last period found when neither
        shows one (a checkpoint or a start in the window)."""
        q = max(1, int(round(0.05 / self.dt_s)))
        for span_s in (20.0, None):
            h = hist if span_s is None else hist[-int(round(span_s / self.dt_s)):]
            p_q = estimate_period_steps(block_mean(h, q))
            if p_q is not None:
                self._last_period = p_q * q
                return self._last_period
        return self._last_period

    def _schedule_at(self, lo: int, hi: int, series: np.ndarray | None = None) -> np.ndarray:
        """Schedule level (or ``series``) on steps [lo, hi): before 0 the same periodic
        extension of the first window the warm start assumes for the load (else its first
        value), held after T."""
        x = self.schedule if series is None else series
        idx = np.arange(lo, hi)
        out = x[np.clip(idx, 0, self.T - 1)]
        neg = idx < 0
        if neg.any() and self.pre is not None:
            out[neg] = x[:self.pre_n][idx[neg] % self.pre_n]
        return out

    def _soc_windows(self, rip: np.ndarray, period: int | None, soc_now: np.ndarray,
                     reserves: bool):
        """Planning SoC window of each storage: its bounds narrowed by its reserve for its
        share of the ripple the plan does not see (``rip``), always containing the SoC now.
        Sets the shares of the plan's error (``err_share``) and the ripple amplitude. [frac]"""
        prm = list(self.params.values())
        p_rated = np.array([p.p_rated_mw for p in prm])
        e_rated = np.array([p.e_rated_mwh for p in prm])
        lo = np.array([p.min_soc_frac for p in prm])
        hi = np.array([p.max_soc_frac for p in prm])
        res = np.zeros(len(prm))
        self.err_share = ripple_shares(np.inf, p_rated, self.fast)   # fast one takes all
        self.ripple_amp_mw = 0.0
        if rip.size:
            self.ripple_amp_mw = float(np.abs(rip).max())
            self.err_share = ripple_shares(self.ripple_amp_mw, p_rated, self.fast, self.follows)
            if reserves and period:
                res = self.ctrl.mpc_reserve_factor * ripple_reserves_mwh(
                    rip, self.dt_s, period, self.err_share)
        frac = np.divide(res, e_rated, out=np.zeros_like(res), where=e_rated > 0)
        mid = 0.5 * (lo + hi)
        wlo = np.minimum(lo + frac, mid)
        whi = np.maximum(hi - frac, mid)
        # the SoC target sits the crash reserve below the top of the window (not below its
        # bottom): the charging room an unannounced drop needs
        self.target = np.clip(self.soc_target, wlo, np.maximum(whi - self.crash_frac, wlo))
        return np.minimum(wlo, soc_now), np.maximum(whi, soc_now), frac

    def _soc_end(self, soc_now: np.ndarray, wlo: np.ndarray, whi: np.ndarray, level_mw: float) -> dict:
        """End-of-horizon SoC band: at least ``1 - exp(-H / tau)`` of the way to the target,
        ``tau = min(1 / soc_gain_per_s, max(H / 3, E_half * 3600 / (REC_LEVEL_FRAC * level)))``
        (the fast storage of several: H / 3)."""
        tgt = np.clip(self.target, wlo, whi)
        p_rec = REC_LEVEL_FRAC * max(abs(level_mw), 1e-3)
        tau = np.minimum(self.tau_max_s, np.maximum(self.horizon_s / 3.0, self.e_half_mwh * 3600.0 / p_rec))
        if tau.size > 1:
            tau[self.fast] = min(self.tau_max_s, self.horizon_s / 3.0)
        d = np.abs(soc_now - tgt) * np.exp(-self.horizon_s / tau)
        d = np.maximum(d, SOC_DEADBAND_FRAC)
        return {n: (float(max(wlo[i], tgt[i] - d[i])), float(min(whi[i], tgt[i] + d[i])))
                for i, n in enumerate(self.names)}

    def _cfgs(self, soc_now: np.ndarray, lo: np.ndarray, hi: np.ndarray, p_mw: np.ndarray) -> dict:
        """Storage sections for the LP: SoC now, the planning SoC window and power rating."""
        out = {}
        for i, n in enumerate(self.names):
            reserve = float(getattr(self.cfgs[n], "reserve_frac", 0.0))
            out[n] = self.cfgs[n].model_copy(update={
                "initial_soc_frac": float(soc_now[i]), "p_rated_mw": float(p_mw[i]),
                "min_soc_frac": float(max(lo[i] - reserve, 0.0)), "max_soc_frac": float(hi[i])})
        return out

    # ------------------------------------------------------------------ re-plan
    def replan(self, t: int, out_load: np.ndarray, out_pcc: np.ndarray, out_e: np.ndarray,
               e_mwh: np.ndarray, loss_mw: np.ndarray, w_now: float, alt: np.ndarray,
               events: list, info: dict):
        """Plan at step ``t``.

        The loop compensates each storage's own conversion losses (``loss_mw``, low-passed;
        the fast one's from the others): the forecast adds what that draws from the grid.
        The LP starts from each storage's SoC averaged over the last detected period (its
        level: the ripple around it is absorbed within the reserves, whatever phase the
        iteration is in at the re-plan), clipped into its SoC bounds.

        Returns
        -------
        (p_pcc_mw (n_h,), p_storage_mw (S, n_h)) on the MPC grid, or None: the interval goes
        to the filter fallback (an ``mpc_fallback`` event says why).
        """
        ctrl, r, dt = self.ctrl, self.r, self.dt_s
        t_wall = time.perf_counter()
        n_h = min(self.n_h, -(-(self.T - t) // r))         # the horizon ends with the simulation
        end = t - self.delay
        hist = self._measured(out_load, end)
        if hist.size == 0:
            return self._fallback(t, events, info, "nothing measured yet", t_wall)
        period = self.period_fixed
        if period is None:
            period = self._detect_period(hist)
        self.period_steps = period
        # the ripple around the level over the last periods (what the plan does not see)
        n_rip = min(hist.size, max(3 * (period or 0), int(round(10.0 / dt))))
        rip = ripple_of(hist[-n_rip:], period) if (period and ctrl.forecast != "perfect") else np.zeros(0)
        reserves = ctrl.forecast != "perfect"
        self.mode = ctrl.forecast
        sched = None
        if ctrl.forecast == "perfect":
            fut = self.load[t:t + n_h * r]
            if w_now > 0:
                fut = fut + w_now * (alt[t:t + n_h * r] - fut)
            fut = np.concatenate([fut, np.full(n_h * r - fut.size, fut[-1])])
            fc = fut.reshape(-1, r).mean(axis=1)
        elif ctrl.forecast == "persistence":
            fc = forecast_load("persistence", block_mean(hist, r), n_h)
        else:
            w_n = level_window_steps(period, int(round(10.0 / dt)), self.level_max_n)
            w_n = min(w_n, hist.size)
            level = measured_level(hist, w_n)
            # a step inside the window (a crash nobody announced): the level since it
            recent_n = period if period else int(round(1.0 / dt))
            stepped = step_level(hist, level, recent_n, max(w_n, 2 * recent_n))
            if stepped is not None:
                level, w_n = stepped
            sched = sched_now = None
            if self.schedule is not None:
                sched_now = float(self._schedule_at(end - w_n, end).mean())
                s = self._schedule_at(t, t + n_h * r)
                sched = s.reshape(-1, r).mean(axis=1)
            fc = level_forecast(level, n_h, sched, sched_now)
            self.mode = "level"
            wave = self._waveform_forecast(hist, end, t, n_h, n_rip) if self.nominal is not None else None
            if wave is not None:
                fc, rip = wave
                self.mode = "waveform"
        # the loss compensation of the loop draws from the grid: the fast storage's comes
        # from the others when there are any. Only the losses the last plan did not count
        # (the ripple's): its own planned power's are in its SoC balance already
        if self.mode == "level":
            loss = np.maximum(np.asarray(loss_mw, dtype=float) - self.plan_loss_mw, 0.0)
            fc = fc + float(loss.sum() if loss.size == 1 else loss.sum() - loss[self.fast])
        e_rated = np.array([p.e_rated_mwh for p in self.params.values()])
        prm = list(self.params.values())
        e_level = np.asarray(e_mwh, dtype=float).copy()
        if period and self.mode == "level" and t >= period:
            e_level = out_e[:, t - period:t].mean(axis=1)
        soc_now = np.array([min(max(e_level[i] / e_rated[i] if e_rated[i] > 0 else p.initial_soc_frac,
                                    p.min_soc_frac), p.max_soc_frac) for i, p in enumerate(prm)])
        kept = self._reused(t, fc, out_pcc, e_level, e_rated, loss_mw, info)
        if kept is not None:
            return kept
        wlo, whi, _ = self._soc_windows(rip, period, soc_now, reserves)
        # power headroom for each storage's share of the ripple
        # (not the fast one's: it closes the gap, and what it cannot deliver goes to the others)
        p_rated = np.array([p.p_rated_mw for p in prm])
        head = self.err_share * self.ripple_amp_mw
        head[self.fast] = 0.0
        p_plan = np.clip(p_rated - head, 0.1 * p_rated, p_rated)
        relaxed = self._cfgs(soc_now, wlo, whi, p_plan)
        cfgs = relaxed
        if len(prm) > 1 and self.mode == "level":
            # the fast storage keeps its energy for the ripple the plan does not see: the slow
            # band (events, SoC recovery) comes from the others where they can carry it
            f = self.fast
            tgt = float(np.clip(self.target[f], wlo[f], whi[f]))
            flo, fhi = wlo.copy(), whi.copy()
            flo[f] = min(max(wlo[f], tgt - FAST_BAND_FRAC), soc_now[f])
            fhi[f] = max(min(whi[f], tgt + FAST_BAND_FRAC), soc_now[f])
            cfgs = self._cfgs(soc_now, flo, fhi, p_plan)
        soc_end = self._soc_end(soc_now, wlo, whi, float(np.mean(fc)))
        # second try: end no further from the target than now (+ SOC_KEEP_FRAC); last: free
        keep = {n: (float(max(wlo[i], min(soc_now[i], self.target[i]) - SOC_KEEP_FRAC)),
                    float(min(whi[i], max(soc_now[i], self.target[i]) + SOC_KEEP_FRAC)))
                for i, n in enumerate(self.names)}
        # a level plan sees no ripple: it is made on the coarser level grid (k MPC steps a
        # step) and held; the PCC history is taken on the same grid. Not where the declared
        # schedule moves within the horizon (a start, a stop, a checkpoint): the edge and the
        # ramps around it are planned on the MPC step
        flat = sched is None or float(np.ptp(sched)) <= 1e-9 * max(1.0, float(np.max(np.abs(sched))))
        k = self.k_level if (self.mode == "level" and flat) else 1
        n_k = -(-n_h // k)
        fc_k = np.concatenate([fc, np.full(n_k * k - n_h, fc[-1])]).reshape(-1, k).mean(axis=1)
        n_hist_k = -(-self.pcc_hist_n // k)
        hist_pcc = block_mean(out_pcc[max(0, t - n_hist_k * k * r):t], k * r)

        # third try: end at least as close to the target as the fastest return of the PCC
        # from its history to the forecast at the allowed rate (after an unannounced step
        # the storage must take that much; planning without an end would keep the PCC up)
        def down():
            return self._descent_band(hist_pcc, fc_k, soc_now, wlo, whi, e_rated, k * self.mpc_dt)

        attempts = ([("ok", cfgs, soc_end)] if cfgs is not relaxed else []) + [
            ("ok" if cfgs is relaxed else "wide", relaxed, soc_end), ("descent", relaxed, down),
            ("keep", relaxed, keep), ("free", relaxed, None)]
        lag = self._variation_lag(period)
        try:
            p_sto, pcc, pinfo = _plan.plan_once(fc_k, k * self.mpc_dt, attempts, self.spec, self.optimize,
                                          {n: float(soc_now[i]) for i, n in enumerate(self.names)},
                                          hist_pcc, variation_cost=self.vcost, variation_lag=lag)
        except (FacilityError, ValueError) as exc:
            return self._fallback(t, events, info, f"solver failed: {exc}", t_wall)
        if k > 1:
            pcc = np.repeat(pcc, k)[:n_h]
            p_sto = {n: np.repeat(v, k)[:n_h] for n, v in p_sto.items()}
        el = time.perf_counter() - t_wall
        if el > self.deadline_s:
            return self._fallback(t, events, info, f"late: the re-plan took {el:.3g} s, "
                                  f"deadline {self.deadline_s:g} s", t_wall)
        self.solve_times_s.append(el)
        info["n_replans"] += 1
        info["n_waveform_plans"] = info.get("n_waveform_plans", 0) + (self.mode == "waveform")
        if pinfo["status"] == "descent" and not self.in_descent:
            events.append({"t_s": t * dt, "kind": "mpc_descent",
                           "detail": "the SoC target is out of reach over the horizon (an "
                                     "unannounced load step?): the PCC returns to the load at "
                                     "the allowed rate from its history, the storage takes "
                                     "the rest"})
        self.in_descent = pinfo["status"] == "descent"
        if pinfo["status"] in ("keep", "free"):
            events.append({"t_s": t * dt, "kind": "mpc_soc_band_dropped",
                           "detail": "the end-of-horizon SoC band toward the target was "
                                     "infeasible; planned " + (
                                         f"to end within {SOC_KEEP_FRAC:g} of the SoC now"
                                         if pinfo["status"] == "keep" else "without one")})
        elif pinfo["status"] == "slack":
            events.append({"t_s": t * dt, "kind": "mpc_slack",
                           "detail": "no plan over this horizon kept every limit's hard row "
                                     "(load history or storage): planned with penalized "
                                     "slacks, the least violation (whether the limits held "
                                     "over the run: metrics.json compliance)"})
        p_out = np.stack([p_sto[n] for n in self.names])
        self._count_plan_loss(p_out, np.asarray(loss_mw, dtype=float))
        self._prev = ({"t": t, "fc": np.asarray(fc, dtype=float).copy(), "pcc": pcc, "p": p_out,
                       "e0": np.asarray(e_level, dtype=float).copy(), "mode": self.mode, "reused": 0}
                      if pinfo["status"] == "ok" and self.ctrl.mpc_reuse_max > 0 else None)
        return pcc, p_out

    def _reused(self, t: int, fc: np.ndarray, out_pcc: np.ndarray, e_level: np.ndarray,
                e_rated: np.ndarray, loss_mw, info: dict):
        """The plan in force shifted to step ``t`` where it still holds
        (``controller.mpc_reuse_max``, :data:`REUSE_TOL_FRAC`), else None. The loop only applies a plan's first re-plan
        interval, so a plan that the forecast, the PCC and the SoC have kept to is the one a
        new solve would give up to the solver's tolerance; what they did not keep to is
        solved again. [MW]"""
        prev = self._prev
        if prev is None or prev["reused"] >= self.ctrl.mpc_reuse_max or prev["mode"] != self.mode:
            return None
        elapsed = t - prev["t"]
        if elapsed <= 0 or elapsed % self.r:
            return None
        s = elapsed // self.r
        n_left = prev["fc"].size - s
        if n_left < max(1, self.n_h // 2, -(-self.replan_k // self.r)):
            return None
        tol = REUSE_TOL_FRAC * (self.allow_mw if self.allow_mw is not None else max(1.0, float(np.mean(np.abs(fc)))))
        m = min(fc.size, n_left)
        if float(np.max(np.abs(fc[:m] - prev["fc"][s:s + m]))) > tol:
            return None
        # the PCC since the plan was made, on the MPC grid, against the plan's
        meas = out_pcc[prev["t"]:t]
        if meas.size != s * self.r or float(np.max(np.abs(meas.reshape(s, self.r).mean(axis=1)
                                                          - prev["pcc"][:s]))) > tol:
            return None
        # each storage's energy against the plan's (its efficiencies)
        h = self.mpc_dt / 3600.0
        p = prev["p"][:, :s]
        e_plan = prev["e0"] + h * np.sum(np.where(p > 0, self.eta_c * p, p / self.eta_d), axis=1)
        if np.any(np.abs(np.asarray(e_level, dtype=float) - e_plan) > REUSE_TOL_FRAC * np.maximum(e_rated, 1e-9)):
            return None
        prev["reused"] += 1
        info["n_replans_reused"] = info.get("n_replans_reused", 0) + 1
        pcc, p_out = prev["pcc"][s:], prev["p"][:, s:]
        prev.update(t=t, fc=prev["fc"][s:], pcc=pcc, p=p_out, e0=e_plan)
        self._count_plan_loss(p_out, np.asarray(loss_mw, dtype=float))
        return pcc, p_out

    def _count_plan_loss(self, p_plan: np.ndarray, loss_now: np.ndarray) -> None:
        """Conversion loss of each storage's planned power over the interval the plan is
        applied (``plan_loss_mw``), and the share of the loop's measured loss power left to
        compensate (``comp_frac``: ``1 - plan_loss / loss``, in [0, 1]). A plan that charges
        hard (after a crash) counts its own losses in its SoC balance; compensating them
        again would raise the PCC by them."""
        k = max(1, -(-self.replan_k // self.r))
        p = p_plan[:, :k]
        lost = np.where(p > 0, p * (1.0 - self.eta_c), -p * (1.0 / self.eta_d - 1.0))
        self.plan_loss_mw = lost.mean(axis=1) if p.size else np.zeros(len(self.names))
        self.comp_frac = np.clip(1.0 - np.divide(self.plan_loss_mw, loss_now,
                                                 out=np.zeros(loss_now.shape),
                                                 where=loss_now > 1e-12), 0.0, 1.0)

    def _descent_band(self, hist_pcc: np.ndarray, fc: np.ndarray, soc_now: np.ndarray,
                      wlo: np.ndarray, whi: np.ndarray, e_rated: np.ndarray,
                      step_s: float) -> dict | None:
        """End-of-horizon SoC band between the target and where the fastest return of the PCC
        to the forecast within the MPC's window limits leaves the storages
        (:func:`facility.control.crash.descent`, their energy shared by rating); None without
        a PCC history, a window limit or energy. ``hist_pcc`` and ``fc`` on the plan's grid of
        ``step_s``."""
        tot = float(e_rated.sum())
        if hist_pcc.size == 0 or not self.limits or tot <= 0:
            return None
        prm = list(self.params.values())
        _, de = descent(hist_pcc, fc, self.limits, step_s,
                        float(np.mean([p.eff_charge_frac for p in prm])),
                        float(np.mean([p.eff_discharge_frac for p in prm])))
        reach = soc_now + de / tot
        tgt = np.clip(self.target, wlo, whi)
        return {n: (float(max(wlo[i], min(tgt[i], reach[i]) - DESCENT_TOL_FRAC)),
                    float(min(whi[i], max(tgt[i], reach[i]) + DESCENT_TOL_FRAC)))
                for i, n in enumerate(self.names)}

    def _variation_lag(self, period: int | None) -> int:
        """MPC steps the variation price is taken over: one iteration period where the plan
        sees the ripple (waveform forecast) and no band amplitude limit (``max_band_peak_mw``,
        ``bands``: the LP does not see them) bounds what of it may reach the grid; else 1.

        Over one period a ripple of that period costs nothing: the plan then lets the grid
        carry as much of it as the linear limits (with the MPC's margin) allow, which the
        loss price makes worth it (each MW the grid follows is a MW the storage does not
        cycle at ``1/eta_d - eta_c``); the level's changes are priced as before.
        """
        if self.mode != "waveform" or not period:
            return 1
        spec = self.scenario.spec
        if spec.max_band_peak_mw is not None or spec.bands:
            return 1
        return max(1, int(round(period / self.r)))

    def _waveform_forecast(self, hist: np.ndarray, end: int, t: int, n_h: int, n_back: int):
        """The nominal waveform of the schedule as the forecast, where the measured load
        follows it: over the last ``n_back`` steps the measured load minus the nominal one
        (after removing their mean difference) must stay within WAVEFORM_MATCH_FRAC of the
        measured swing (RMS). Deterministic jobs pass; jittered iterations drift out of
        phase and do not.

        Returns
        -------
        (forecast on the MPC grid (n_h,), residual ripple (n_back,)) or None.
        """
        n = min(hist.size, n_back)
        if n < 2:
            return None
        h = hist[-n:]
        nom = self._schedule_at(end - n, end, self.nominal)
        d = h - nom
        resid = d - d.mean()
        r = self.r
        fut = self._schedule_at(t, t + n_h * r, self.nominal)
        # the swing to compare with: the measured one, or the nominal one ahead (a job that
        # is about to start shows no swing yet)
        ref = max(float(np.std(h)), float(np.std(fut)))
        err = float(np.sqrt(np.mean(resid ** 2)))
        if err > WAVEFORM_MATCH_FRAC * ref or (ref <= 0 and err > 0):
            return None
        fut = fut + d.mean()
        return fut.reshape(-1, r).mean(axis=1), resid

    def _fallback(self, t, events, info, why, t_wall):
        el = time.perf_counter() - t_wall
        self.solve_times_s.append(el)
        info["n_fallbacks"] = info.get("n_fallbacks", 0) + 1
        events.append({"t_s": t * self.dt_s, "kind": "mpc_fallback",
                       "detail": f"the filter controller takes this re-plan interval ({why})"})
        return None
