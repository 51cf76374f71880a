"""``run_control``: set up the closed loop for the configured controller and run it.

Controllers (``controller.kind``), all acting on the measured drawn load ``m``:

* ``none`` — storage idle.
* ``moving_average`` — the paper's Fig. 7: grid target = mean of ``m`` over the last
  ``window_s``; the storages (shares by p_rated) supply target − m.
* ``filter`` — first-order low-pass ``LP_f`` at ``cutoff_hz`` (default 1 / (2 pi window_s)):
  the fast storage (rack_storage, else the one with the shortest response) takes
  ``LP_f − m`` (the band above the cutoff); the slow storages (UPS, BESS) take
  ``LP_s − LP_f`` with ``LP_s`` at ``slow_cutoff_hz``; the grid sees ``LP_s``.
* ``mpc`` — receding horizon on a forecast (:mod:`facility.control.mpc`).
* ``optimal`` — a perfect-foresight plan applied as is (the fast storage closes any gap).
* ``ramp_limit`` — the BESS ramp-rate control of PV and wind plants: the grid set-point moves
  toward the load's level (a low-pass of ``m`` at ``cutoff_hz``) plus a SoC recovery toward a
  band, at most ``max_ramp_mw_per_s``; the storage supplies set-point − m (with several, the
  slow ones set-point − level and the fast one the residual).

Under every deployable controller (all but ``none`` and ``optimal``) runs the fast guard
(:mod:`facility.control.guard`, ``controller.guard``): the PCC set-point is clipped each step
to what the spec's windows and ramps allow after the measured PCC history.

A hybrid section's units (``bess.supercap``, ``bess.lfp_1h``) are storages of their own; the
fast storage is then the unit with the shortest duration, the filter's (and moving average's)
fast cutoff at least its crossover (:func:`facility.control.split.crossover_tau_s`), and the
moving average gives the other units ``target − LP_f`` (docs/control.md, "Hybrid sections").

Every controller adds SoC recovery ``soc_gain_per_s * (soc_target − soc_lp) * e_rated * 3600``
[MW] to each storage (mpc: the fast storage only; optimal: none); moving_average and filter
also add the storage's own low-passed loss power (conversion losses, self-discharge), so the
SoC does not drift down with the efficiency. ``soc_lp`` and the loss are low-passed with time
constant ``window_s``.
"""

from __future__ import annotations

import math

import numpy as np

from facility.control import kernel as K
from facility.control.codesign import blend_steps, plain_swing, swing_sufficient
from facility.control.guard import guard_events, guard_info, guard_limits, new_guard_state
from facility.control.monitor import MonitorPolicy
from facility.control.mpc import MpcPlanner
from facility.control.plan import allowed_rate_mw_per_s, mpc_margin_frac
from facility.control.result import ControlResult
from facility.control.split import crossover_tau_s
from facility.config.technology import section_of
from facility.errors import ScenarioError
from facility.storage import LIMIT_NAMES, StorageParams, StorageTrace
from facility.storage.soc import LIMIT_EMPTY, LIMIT_FULL, LIMIT_POWER

__all__ = ["run_control"]

_MODES = {"none": K.MODE_NONE, "moving_average": K.MODE_MOVING_AVERAGE, "filter": K.MODE_FILTER,
          "mpc": K.MODE_TRACK, "optimal": K.MODE_TRACK, "ramp_limit": K.MODE_RAMP}
#: Controllers a site can run (no knowledge of the future load): the fast guard runs under them.
DEPLOYABLE = ("moving_average", "filter", "mpc", "ramp_limit")
_EVENT_CAP = 100_000


def _fast_index(names: list[str], storages: dict) -> int:
    """The fast storage: rack storage, else the one with the shortest response; of a hybrid
    section's units (``<section>.<technology>``) the one with the shortest duration E/P."""
    secs = [section_of(n) for n in names]
    if "rack_storage" in secs:
        i = secs.index("rack_storage")
    else:
        i = int(np.argmin([storages[n].response_s for n in names]))
    units = [j for j, s in enumerate(secs) if s == secs[i]]
    if len(units) > 1:
        dur = [storages[names[j]].e_rated_mwh / storages[names[j]].p_rated_mw
               if storages[names[j]].p_rated_mw > 0 else np.inf for j in units]
        i = units[int(np.argmin(dur))]
    return i


def _hybrid_cutoff_hz(ctrl, names: list[str], storages: dict, fast: int, fc_hz: float) -> float:
    """The filter's fast cutoff where the fast storage is a hybrid section's unit and
    ``controller.cutoff_hz`` is not set: at least 1 / (2 pi tau) with tau =
    :func:`~facility.control.split.crossover_tau_s` of the fast unit (its usable energy from
    the SoC target to the nearer bound over its power), so a step of its full rating stays
    within its energy; the part below goes to the section's other unit(s). [Hz]"""
    n = names[fast]
    same = [m for m in names if section_of(m) == section_of(n)]
    if ctrl.cutoff_hz is not None or len(same) < 2:
        return fc_hz
    p = storages[n]
    s0 = p.initial_soc_frac if ctrl.soc_target_frac is None else ctrl.soc_target_frac
    usable = max(0.0, min(s0 - p.min_soc_frac, p.max_soc_frac - s0)) * p.e_rated_mwh
    tau = crossover_tau_s(p.p_rated_mw, usable)
    return max(fc_hz, 1.0 / (2 * math.pi * tau)) if tau > 0 else fc_hz


def _shares(p_rated: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.zeros_like(p_rated)
    tot = p_rated[mask].sum()
    if mask.any():
        out[mask] = p_rated[mask] / tot if tot > 0 else 1.0 / mask.sum()
    return out


def _steps(x_s: float, dt_s: float, key: str, minimum: int = 0) -> int:
    n = int(round(x_s / dt_s))
    if n < minimum:
        raise ScenarioError(f"{key} = {x_s:g} s is shorter than time.dt_s = {dt_s:g} s")
    return n


def run_control(p_site_mw, dt_s: float, scenario, storages: dict[str, StorageParams], *,
                p_site_gpu_engaged_mw=None, plan: dict | None = None,
                network_limits: dict | None = None, schedule=None,
                gpu_ramp_mw_per_s: tuple[float, float] | None = None) -> ControlResult:
    """Run the storage controller, the co-design and the monitor in closed loop.

    Parameters
    ----------
    p_site_mw : array_like (T,)
        Site power drawn when the co-design does not engage GPU controls. [MW]
    dt_s : float
        Step. [s]
    scenario : facility.config.schema.Scenario
        Uses ``controller``, ``monitor``, ``spec`` and ``optimize`` (mpc).
    storages : dict of str to StorageParams
        Storages the controller commands (resolved ratings).
    p_site_gpu_engaged_mw : array_like (T,), optional
        Site power with GPU smoothing / firefly engaged: what the co-design switches to when a
        storage nears a SoC bound. None = no co-design possible. [MW]
    plan : dict of str to array_like (T,), optional
        Perfect-foresight storage dispatch for ``controller.kind = 'optimal'`` (a coarser plan
        whose length divides T is held over each of its steps). [MW]
    network_limits : dict, optional
        What the network carries (keys as in ``[optimize]``; missing or None = unlimited):
        ``max_feeder_p_mw`` bounds |drawn load + rack_storage + ups|, ``max_site_p_mw``
        |drawn load + every storage|, ``max_bess_p_mw`` |bess|, per step. A storage the
        network stops saturates at its ``network`` limit. [MW]
    schedule : facility.control.schedule.SiteSchedule, optional
        The site's expected power from its declared schedule
        (:func:`facility.control.schedule.site_schedule`): the MPC's forecast moves the
        measured level with it, and plans on its nominal waveform where the measured load
        follows it.
    gpu_ramp_mw_per_s : (float, float), optional
        Site-level up/down ramp rates of the GPUs under smoothing
        (:func:`facility.control.codesign.gpu_ramp_mw_per_s`): the drawn load follows them
        while the co-design switches. None = unlimited. [MW/s]

    Returns
    -------
    ControlResult
    """
    load = np.ascontiguousarray(p_site_mw, dtype=np.float64)
    if load.ndim != 1 or load.size == 0:
        raise ScenarioError(f"p_site_mw must be a non-empty 1-D array, got shape {load.shape}")
    if not np.all(np.isfinite(load)):
        raise ScenarioError("p_site_mw contains NaN or inf")
    T = load.size
    ctrl, mon = scenario.controller, scenario.monitor
    names = list(storages)
    S = len(names)
    mode = _MODES[ctrl.kind] if S else K.MODE_NONE
    has_alt = p_site_gpu_engaged_mw is not None
    alt = (np.ascontiguousarray(p_site_gpu_engaged_mw, dtype=np.float64) if has_alt else load)
    if alt.shape != load.shape:
        raise ScenarioError(f"p_site_gpu_engaged_mw has shape {alt.shape}, p_site_mw {load.shape}")

    # ---- storage arrays
    prm = [storages[n] for n in names]
    ka = np.array([p.kernel_args(dt_s) for p in prm], dtype=float).reshape(S, 8)
    p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha, ramp_step = (np.ascontiguousarray(ka[:, j]) for j in range(8))
    e_rated = np.array([p.e_rated_mwh for p in prm], dtype=float)
    soc_min = np.array([p.min_soc_frac for p in prm], dtype=float)
    soc_max = np.array([p.max_soc_frac for p in prm], dtype=float)
    tgt = [p.initial_soc_frac if ctrl.soc_target_frac is None else ctrl.soc_target_frac for p in prm]
    soc_target = np.clip(np.array(tgt, dtype=float), soc_min, soc_max) if S else np.zeros(0)
    fast = _fast_index(names, storages) if S else 0
    group = np.ones(S, dtype=np.int64)
    if S:
        group[fast] = 0
    # SoC recovery: the plan does it for mpc and optimal; the filter fallback of the mpc
    # recovers as the filter does. Loss compensation: moving_average, filter and mpc (whose
    # forecast includes it; the plan does not see the ripple's conversion losses)
    rec_gain_fb = np.full(S, ctrl.soc_gain_per_s) * e_rated * 3600.0
    rec_gain_mw = rec_gain_fb if mode in (K.MODE_MOVING_AVERAGE, K.MODE_FILTER) else np.zeros(S)
    comp_fb = np.ones(S)
    comp = (comp_fb.copy() if (mode in (K.MODE_MOVING_AVERAGE, K.MODE_FILTER) or ctrl.kind == "mpc")
            else np.zeros(S))
    a_rec = -math.expm1(-dt_s / ctrl.window_s)
    # moving average with a hybrid fast unit: the others take the low-passed part (split)
    ma_split = bool(mode == K.MODE_MOVING_AVERAGE and S > 1
                    and sum(section_of(n) == section_of(names[fast]) for n in names) > 1)
    if mode in (K.MODE_FILTER, K.MODE_TRACK, K.MODE_RAMP) or ma_split:
        share = _shares(p_rated, group == 0) + _shares(p_rated, group == 1)
    else:
        share = _shares(p_rated, np.ones(S, bool))
    # a hybrid unit the sizing left out (no power) is asked for nothing
    unbought = np.array([section_of(n) != n for n in names], dtype=bool) & (p_rated <= 0)
    share[unbought] = 0.0

    # ---- network headroom (facility.electrical.limits)
    nl = dict(network_limits or {})

    def _cap(key: str) -> float:
        v = nl.get(key)
        return math.inf if v is None else float(v)

    c_feeder, c_site = _cap("max_feeder_p_mw"), _cap("max_site_p_mw")
    secs = [section_of(n) for n in names]
    behind_ups = np.array([s in ("rack_storage", "ups") for s in secs], dtype=np.bool_)
    # the BESS connection's cap; a hybrid BESS's units share it by rating
    in_bess = np.array([s == "bess" for s in secs], dtype=bool)
    c_bess = _cap("max_bess_p_mw")
    p_own_max = (np.where(in_bess, c_bess * _shares(p_rated, in_bess), math.inf) if math.isfinite(c_bess)
                 else np.full(S, math.inf))
    net_on = bool(math.isfinite(c_feeder) or math.isfinite(c_site))

    # ---- controller timing
    delay = _steps(ctrl.measurement_delay_s, dt_s, "controller.measurement_delay_s")
    sample = 1 if ctrl.sample_s is None else max(1, _steps(ctrl.sample_s, dt_s, "controller.sample_s", 1))
    ma_window = max(1, _steps(ctrl.window_s, dt_s, "controller.window_s"))
    fc = ctrl.cutoff_hz if ctrl.cutoff_hz is not None else 1.0 / (2 * math.pi * ctrl.window_s)
    fcs = ctrl.slow_cutoff_hz if ctrl.slow_cutoff_hz is not None else fc / 10.0
    if S > 1 and (mode == K.MODE_FILTER or ma_split or ctrl.kind == "mpc"):
        fc = _hybrid_cutoff_hz(ctrl, names, storages, fast, fc)
    if mode == K.MODE_FILTER and S > 1 and fcs >= fc:
        raise ScenarioError(f"controller.slow_cutoff_hz = {fcs:g} Hz must be below cutoff_hz = {fc:g} Hz")
    ts = sample * dt_s
    a_fast = -math.expm1(-2 * math.pi * fc * ts)
    a_slow = -math.expm1(-2 * math.pi * fcs * ts)
    # slow storages as the fast one's energy reservoir (moving_average / filter, S > 1)
    res_share = _shares(p_rated, group == 1)
    res_share[unbought] = 0.0
    res_gain_fb = 0.0
    if S > 1:
        g = ctrl.reservoir_gain_per_s if ctrl.reservoir_gain_per_s is not None else 0.25 / ctrl.window_s
        res_gain_fb = g * e_rated[fast] * 3600.0
    # (mpc: set at each re-plan; only a plan that does not see the ripple needs them)
    res_gain = [res_gain_fb if (mode in (K.MODE_MOVING_AVERAGE, K.MODE_FILTER, K.MODE_RAMP)
                                or ctrl.kind == "mpc") else 0.0]
    tgt_step = np.inf if ctrl.target_ramp_mw_per_s is None else ctrl.target_ramp_mw_per_s * ts
    # the MPC's filter fallback moves its grid target at most at the MPC's allowed rate
    rate_spec = allowed_rate_mw_per_s(scenario.spec)
    tgt_step_fb = min(tgt_step, (1.0 - mpc_margin_frac(scenario)) * rate_spec * ts)

    # ---- ramp_limit: the set-point's rate, the SoC band and the recovery gain toward it
    rl_rate = (ctrl.max_ramp_mw_per_s if ctrl.max_ramp_mw_per_s is not None
               else (1.0 - ctrl.guard_margin_frac) * rate_spec)
    rl_step = rl_rate * ts
    rl_lo = np.clip(soc_target - ctrl.soc_band_frac, soc_min, soc_max) if S else np.zeros(0)
    rl_hi = np.clip(soc_target + ctrl.soc_band_frac, soc_min, soc_max) if S else np.zeros(0)
    rl_gain = e_rated * 3600.0 / ctrl.soc_recovery_s
    if S > 1 and mode == K.MODE_RAMP:
        rl_gain[fast] = 0.0       # the fast unit refills from the others (reservoir)

    # ---- the fast guard (facility.control.guard)
    g_k, g_lim = guard_limits(scenario.spec, dt_s, ctrl.guard_margin_frac)
    g_on = bool(ctrl.guard and ctrl.kind in DEPLOYABLE and S and g_k.size)
    g_q, g_qs = new_guard_state(g_k)
    g_cnt = np.zeros((S + 1, 8), dtype=np.int64)

    # ---- co-design
    cd = bool(ctrl.codesign and has_alt and mode != K.MODE_NONE)
    margin = ctrl.codesign_soc_margin_frac
    rel = 2 * margin if ctrl.codesign_release_margin_frac is None else ctrl.codesign_release_margin_frac
    if cd and rel < margin:
        raise ScenarioError(f"controller.codesign_release_margin_frac = {rel:g} must be at least "
                            f"codesign_soc_margin_frac = {margin:g} (hysteresis)")
    hold = _steps(ctrl.codesign_hold_s, dt_s, "controller.codesign_hold_s")
    w_step = np.ones(1)
    release_ok = np.ones(1, dtype=np.int8)
    release_e = np.zeros(1)
    gpu_up = gpu_dn = np.inf
    if cd:
        cd_window = max(1, _steps(max(ctrl.window_s, scenario.spec.window_s), dt_s, "controller.window_s"))
        w_step = blend_steps(load, alt, dt_s, ctrl.codesign_blend_s, 0.5 * rate_spec, cd_window)
        usable = float(np.sum(np.maximum(soc_max - soc_min - 2 * margin, 0.0) * e_rated))
        pre = np.resize(load[:cd_window], 2 * cd_window) if ctrl.warm_start else None
        p_need, release_e = plain_swing(load, dt_s, cd_window, pre)
        release_ok = swing_sufficient(p_need, release_e, float(p_rated.sum()), usable)
        if gpu_ramp_mw_per_s is not None:
            gpu_up, gpu_dn = gpu_ramp_mw_per_s[0] * dt_s, gpu_ramp_mw_per_s[1] * dt_s

    # ---- plan arrays
    track = mode == K.MODE_TRACK
    pcc_plan = np.zeros(T if track else 1)
    ff = np.zeros((S, T if track else 1))
    fb = np.zeros(T if (track and ctrl.kind == "mpc") else 1, dtype=np.int8)
    err_share = np.zeros(S)           # mpc: shares of the plan's error (set at each re-plan)
    if ctrl.kind == "optimal" and S:
        if plan is None:
            raise ScenarioError("controller.kind = 'optimal' needs a perfect-foresight plan "
                                "(run_scenario solves one with facility.optimize.solve_dispatch)")
        for i, n in enumerate(names):
            if n in plan:
                ff[i] = _upsample(np.asarray(plan[n], dtype=float), T, n)
        pcc_plan[:] = load + ff.sum(axis=0)

    # ---- state and outputs
    st = K.new_state()
    e = np.array([p.e_initial_mwh for p in prm], dtype=float)
    p_prev = np.zeros(S)
    sp = np.zeros(S)
    last_lim = np.zeros(S, dtype=np.int64)
    first_sat = np.full(S, -1, dtype=np.int64)
    first_lim = np.zeros(S, dtype=np.int64)
    soc_lp = np.array([p.initial_soc_frac for p in prm], dtype=float)
    loss_lp = np.zeros(S)
    out_p = np.zeros((S, T))
    out_e = np.zeros((S, T))
    out_lim = np.zeros((S, T), dtype=np.int8)
    out_load = np.zeros(T)
    out_pcc = np.zeros(T)
    out_w = np.zeros(T)
    meas = np.zeros(T if mode == K.MODE_MOVING_AVERAGE else 1)
    ev_step = np.zeros(_EVENT_CAP, dtype=np.int64)
    ev_kind = np.zeros(_EVENT_CAP, dtype=np.int64)
    ev_sto = np.zeros(_EVENT_CAP, dtype=np.int64)
    ev_reason = np.zeros(_EVENT_CAP, dtype=np.int64)
    ev_val = np.zeros(_EVENT_CAP)
    n_ev = np.zeros(1, dtype=np.int64)
    mods = [1.0, 0.0, 0.0]   # keep, throttle, mean (monitor response)
    ma_pre = np.zeros(0)
    first = load                   # what was drawn before t = 0 (warm start)
    if cd and ctrl.warm_start and not (release_ok[0] and (ctrl.kind == "optimal" or K.room_for_swing(
            np.array([p.initial_soc_frac for p in prm]), soc_min, soc_max, rel, e_rated, release_e[0]))):
        # the controller has been running: a storage that cannot carry the load had GPU
        # controls engaged before t = 0 already
        st[K.S_ENGAGED], st[K.S_W], st[K.S_SINCE] = 1.0, 1.0, 0.0
        first = alt
    if ctrl.warm_start and (mode in (K.MODE_MOVING_AVERAGE, K.MODE_FILTER, K.MODE_RAMP)
                            or ctrl.kind == "mpc"):
        # the controller has been running on the same load: the load before t = 0 repeats
        # the first window (periodic extension)
        if mode == K.MODE_MOVING_AVERAGE:
            ma_pre = np.resize(first[:ma_window], ma_window)
            st[K.S_MA_SUM], st[K.S_MA_N] = ma_pre.sum(), float(ma_window)
            m0 = float(ma_pre.mean())
            if ma_split:
                n_f = max(1, int(round(1.0 / (2 * math.pi * fc * dt_s))))
                st[K.S_LP_FAST], st[K.S_LP_SLOW], st[K.S_LP_OK] = float(first[:n_f].mean()), m0, 1.0
        else:
            n_f = max(1, int(round(1.0 / (2 * math.pi * fc * dt_s))))
            n_s = max(1, int(round(1.0 / (2 * math.pi * fcs * dt_s))))
            m0 = float(first[:n_f].mean())
            st[K.S_LP_FAST], st[K.S_LP_SLOW], st[K.S_LP_OK] = m0, float(first[:n_s].mean()), 1.0
        st[K.S_MEAS], st[K.S_MEAS_OK] = m0, 1.0

    def run(t0: int, t1: int) -> None:
        K.control_loop(t0, t1, mode, load, alt, has_alt, mods[0], mods[1], mods[2],
                       p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha, ramp_step, e_rated,
                       rec_gain_mw, soc_target, group, share, comp, a_rec,
                       delay, sample, ma_window, ma_pre, a_fast, a_slow, S > 1, fast, tgt_step,
                       res_gain[0], res_share, ma_split,
                       pcc_plan, ff, err_share, fb, rec_gain_fb, comp_fb, res_gain_fb, tgt_step_fb,
                       cd, ctrl.kind != "optimal", soc_min, soc_max, margin, rel, hold,
                       w_step, release_ok, release_e, gpu_up, gpu_dn,
                       dt_s / 3600.0, net_on, behind_ups, p_own_max, c_feeder, c_site,
                       rl_step, rl_lo, rl_hi, rl_gain,
                       g_on, g_k, g_lim, g_q, g_qs, g_cnt,
                       st, e, p_prev, sp, last_lim, first_sat, first_lim,
                       soc_lp, loss_lp,
                       out_p, out_e, out_lim, out_load, out_pcc, out_w, meas,
                       ev_step, ev_kind, ev_sto, ev_reason, ev_val, n_ev)

    # ---- schedule of stops: MPC re-plans and monitor evaluations
    events: list[dict] = []
    info: dict = {"kind": ctrl.kind, "n_replans": 0, "mpc_solve_s": 0.0, "monitor_evaluations": 0,
                  "monitor_shed_mwh": 0.0}
    if cd and st[K.S_ENGAGED] > 0.5:
        events.append({"t_s": 0.0, "kind": "codesign_engage",
                       "detail": "GPU controls engaged from the start: the storages cannot "
                                 "carry the plain load's swing (power or ripple energy)"})
    stops: set[int] = set()
    replan_k = monitor = None
    if ctrl.kind == "mpc" and S:
        replan_k = max(1, _steps(ctrl.replan_s, dt_s, "controller.replan_s", 1))
        stops.update(range(0, T, replan_k))
        if schedule is not None and np.shape(schedule.p_level_mw) != load.shape:
            raise ScenarioError(f"schedule has shape {np.shape(schedule.p_level_mw)}, "
                                f"p_site_mw {load.shape}")
        mpc = MpcPlanner(ctrl, scenario, {n: storages[n] for n in names}, fast, dt_s, load, schedule,
                         first_mw=first)
    if mon.enabled:
        monitor = MonitorPolicy(mon, scenario.spec, dt_s)
        every = max(1, _steps(mon.every_s, dt_s, "monitor.every_s", 1))
        stops.update(range(every, T, every))
    bounds = sorted(stops | {0, T})
    for t0, t1 in zip(bounds[:-1], bounds[1:]):
        if replan_k is not None and t0 % replan_k == 0:
            t_end = min(T, t0 + replan_k)
            got = mpc.replan(t0, out_load, out_pcc, out_e, e, loss_lp, float(st[K.S_W]), alt, events, info)
            if got is None:
                fb[t0:t_end] = 1
                ff[:, t0:t_end] = 0.0
                pcc_plan[t0:t_end] = np.nan
            else:
                idx = np.minimum(np.arange(t_end - t0) // mpc.r, got[0].size - 1)
                fb[t0:t_end] = 0
                pcc_plan[t0:t_end] = got[0][idx]
                ff[:, t0:t_end] = got[1][:, idx]
                err_share[:] = mpc.err_share
                # loss compensation and the fast storage's refill from the others only where
                # the plan does not see the ripple (level forecast); else the plan's SoC rules
                unseen = mpc.mode == "level"
                comp[:] = mpc.comp_frac if unseen else 0.0
                res_gain[0] = res_gain_fb if unseen else 0.0
        if monitor is not None and t0 > 0 and t0 % every == 0:
            lo = max(0, t0 - monitor.n_window)
            if t0 - lo >= monitor.n_window:        # a full window only
                evs = monitor.evaluate(t0 * dt_s, out_pcc[lo:t0])
                info["monitor_evaluations"] += 1
                events.extend(evs)
                base = load[lo:t0] + out_w[lo:t0] * (alt[lo:t0] - load[lo:t0])
                mods[:] = monitor.modifiers(float(base.mean()))
        run(t0, t1)
        if monitor is not None and monitor.tier >= 2:
            base = load[t0:t1] + out_w[t0:t1] * (alt[t0:t1] - load[t0:t1])
            info["monitor_shed_mwh"] += float(np.sum(base - out_load[t0:t1]) * dt_s / 3600.0)

    # ---- results
    p_base = load + out_w * (alt - load) if has_alt else load
    traces, p_sto, soc, saturation = {}, {}, {}, {}
    n_sat, n_sat_by = {}, {}
    for i, n in enumerate(names):
        tr = StorageTrace.from_energy(out_p[i], out_e[i], out_lim[i], prm[i])
        traces[n], p_sto[n], soc[n] = tr, tr.p_mw, tr.soc_frac
        n_sat[n] = int(np.count_nonzero(out_lim[i]))
        n_sat_by[n] = {"power": int(np.count_nonzero(out_lim[i] == LIMIT_POWER)),
                       "soc": int(np.count_nonzero((out_lim[i] == LIMIT_EMPTY) | (out_lim[i] == LIMIT_FULL)))}
        if first_sat[i] >= 0:
            t_sat = float(first_sat[i] * dt_s)
            saturation[n] = t_sat
            lim = LIMIT_NAMES[int(first_lim[i])]
            events.append({"t_s": t_sat, "kind": "storage_saturated", "storage": n, "limit": lim,
                           "soc_frac": float(tr.soc_frac[first_sat[i]]),
                           "detail": f"{n} first saturated at its {lim} limit "
                                     f"(SoC {tr.soc_frac[first_sat[i]]:.3f}); "
                                     f"{n_sat[n]} saturated steps in all"})
        else:
            saturation[n] = None
    events.extend(_codesign_events(names, prm, n_ev[0], ev_step, ev_kind, ev_sto, ev_reason,
                                   ev_val, dt_s, margin, rel))
    if g_on:
        info["guard"] = guard_info(names, g_cnt, int(st[K.S_GCLIP]), T, LIMIT_NAMES)
        ks = [k for k in range(min(int(n_ev[0]), _EVENT_CAP)) if ev_kind[k] == K.EV_GUARD_BREACH]
        events.extend(guard_events(names, ((ev_step[k], ev_sto[k], ev_reason[k], ev_val[k]) for k in ks),
                                   dt_s, LIMIT_NAMES))
    events.sort(key=lambda d: d["t_s"])
    if ctrl.kind == "mpc" and S:
        ts_ = np.asarray(mpc.solve_times_s, dtype=float)
        info.update(mpc_solve_s=float(ts_.sum()), mpc_solve_times_s=ts_.tolist(),
                    mpc_solve_median_s=float(np.median(ts_)) if ts_.size else 0.0,
                    mpc_solve_max_s=float(ts_.max()) if ts_.size else 0.0,
                    mpc_solve_median_frac_of_replan=(float(np.median(ts_)) / ctrl.replan_s
                                                     if ts_.size else 0.0),
                    n_fallbacks=int(info.get("n_fallbacks", 0)), mpc_horizon_s=mpc.n_h * mpc.mpc_dt,
                    mpc_dt_s=mpc.mpc_dt, mpc_level_dt_s=mpc.k_level * mpc.mpc_dt,
                    mpc_period_s=(None if mpc.period_steps is None
                                                       else mpc.period_steps * dt_s),
                    fallback_frac=float(np.mean(fb)) if fb.size == T else 0.0)
    info.update(n_saturated_steps=n_sat, n_saturated_steps_by_limit=n_sat_by, engaged_frac=float(np.mean(out_w > 0)),
                n_codesign_engagements=int(np.sum(ev_kind[:min(n_ev[0], _EVENT_CAP)] == K.EV_ENGAGE)),
                events_dropped=int(max(0, n_ev[0] - _EVENT_CAP)))
    return ControlResult(p_storage_mw=p_sto, soc_frac=soc, p_load_mw=out_load, p_pcc_mw=out_pcc,
                         gpu_engaged=out_w > 0, engaged_weight=out_w, events=events,
                         saturation=saturation, traces=traces, info=info, _p_base_mw=p_base)


def _upsample(x: np.ndarray, T: int, name: str) -> np.ndarray:
    if x.size == T:
        return x
    if x.size and T % x.size == 0:
        return np.repeat(x, T // x.size)
    raise ScenarioError(f"plan for {name} has {x.size} steps; the simulation has {T} "
                        f"(a plan must have T steps or a divisor of T)")


def _codesign_events(names, prm, n, ev_step, ev_kind, ev_sto, ev_reason, ev_val, dt_s, margin, rel):
    out = []
    for k in range(min(int(n), ev_step.size)):
        t_s = float(ev_step[k] * dt_s)
        if ev_kind[k] == K.EV_GUARD_BREACH:
            continue
        if ev_kind[k] == K.EV_ENGAGE:
            i = int(ev_sto[k])
            nm, r, v = names[i], int(ev_reason[k]), float(ev_val[k])
            if r == K.REASON_NEAR_MIN:
                why = f"{nm} SoC {v:.3f} within {margin:g} of min_soc_frac {prm[i].min_soc_frac:g}"
            elif r == K.REASON_NEAR_MAX:
                why = f"{nm} SoC {v:.3f} within {margin:g} of max_soc_frac {prm[i].max_soc_frac:g}"
            else:
                why = f"{nm} saturated at its {LIMIT_NAMES.get(r - 10, '?')} limit (SoC {v:.3f})"
            out.append({"t_s": t_s, "kind": "codesign_engage", "storage": nm, "soc_frac": v,
                        "detail": f"GPU controls engaged: {why}"})
        else:
            out.append({"t_s": t_s, "kind": "codesign_release",
                        "detail": f"GPU controls released: every storage SoC at least {rel:g} "
                                  f"inside its bounds and no saturation"})
    return out
