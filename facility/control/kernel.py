"""The closed loop, step by step, in numba: co-design switch → drawn load → measurement →
controller set-points → storage (saturating SoC bookkeeping) → PCC power.

The loop is resumable: it runs steps ``[t0, t1)`` and keeps everything it needs in state
arrays, so the orchestrator can stop it to re-plan (MPC) or to run the FFT-bin monitor and
change the load modifiers in between.

Order inside one step t:

1. co-design: look at every storage's SoC level (``soc_lp``, low-passed with time constant
   window_s: the iteration ripple around it comes back by itself) and its last saturation;
   engage GPU controls when one saturated without the others meeting the grid target, or
   (``cd_soc_trigger``: all but 'optimal', whose plan may run to a bound on purpose) its
   level is within ``margin`` of a bound; release when all levels are ``release_margin``
   inside their bounds after ``hold`` steps, the storages could
   carry the plain load (``release_ok[t]``) and their SoC levels leave room, inside the
   release margins, for one swing of it (``release_e_mwh[t]``) down and up; the blend
   weight ``w`` moves by at most ``w_step[t]`` per step towards 1 (engaged) or 0.
2. drawn load = ``keep * (mean + (1 - throttle) * (base - mean))`` with
   ``base = raw + w * (alt - raw)`` (``keep``/``throttle``/``mean``: the monitor's response).
   While the co-design switches, ``base`` moves from the last drawn value by at most the GPUs'
   programmed ramp (``gpu_up_step`` / ``gpu_dn_step`` [MW per step]): the GPU ramp state is
   carried across the switch instead of jumping onto the precomputed engaged trace.
3. measurement (every ``sample`` steps): the drawn load ``delay`` steps ago; held in between.
4. controller: set-points from the measurement (held between samples); with ``ma_split``
   (moving average, the fast storage a hybrid section's unit) the slow storages take
   ``target - LP_f`` and the fast one closes the gap (the part of ``target - m`` above the
   fast cutoff); in plan-following
   mode the storages other than the fast one follow the plan ``ff`` plus their share
   ``err_share`` of the plan's error (planned PCC - measured load - planned storage power),
   the fast one closes the gap; the steps flagged in ``fb`` (mpc) run the filter instead (the MPC's fallback; the
   low-passes run all the time, and the grid target starts from the last planned PCC power and
   moves at most ``tgt_step_fb`` per sample), plus SoC recovery
   ``rec_gain_mw * (soc_target - soc_lp)`` and loss compensation ``comp * loss_lp``, where
   ``soc_lp`` and ``loss_lp`` are the SoC and the storage's own loss power (conversion and
   self-discharge) low-passed with coefficient ``a_rec`` (time constant window_s), so that
   neither carries the iteration-frequency ripple to the grid.
5. storage: :func:`facility.storage.soc.storage_step_bounded` for each storage, the fast one
   first; with ``net_on``, each within what the network still carries in this step: the
   storages behind the UPSs (``behind_ups``) share the feeders' headroom
   ``[-c_feeder - drawn, c_feeder - drawn]``, all storages the substation's
   ``[-c_site - drawn, c_site - drawn]``, each at most ``p_own_max`` (BESS transformer); a
   storage the network stops saturates with ``LIMIT_NETWORK`` (never forced to act).
6. PCC power (lossless) = drawn load + sum of storage powers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from facility.control.codesign import room_for_swing
from facility.control.guard import guard_bounds, guard_breach, guard_push, guard_shift
from facility.storage.soc import storage_step_bounded

__all__ = ["control_loop", "room_for_swing", "MODE_NONE", "MODE_MOVING_AVERAGE", "MODE_FILTER", "MODE_TRACK",
           "MODE_RAMP", "new_state", "EV_ENGAGE", "EV_RELEASE", "EV_GUARD_BREACH", "REASON_NEAR_MIN",
           "REASON_NEAR_MAX",
           "REASON_SATURATED", "REASON_RECOVERED", "N_STATE"]

MODE_NONE = 0
MODE_MOVING_AVERAGE = 1
MODE_FILTER = 2
MODE_TRACK = 3          # follow a plan: pcc target + per-storage feed-forward (mpc, optimal)
MODE_RAMP = 4           # ramp_limit: rate-limited grid set-point toward the load's level

EV_ENGAGE = 1
EV_RELEASE = 2
EV_GUARD_BREACH = 3     # the guard could not hold a limit (ev_sto: saturated storage or -1)
REASON_NEAR_MIN = 1
REASON_NEAR_MAX = 2
REASON_SATURATED = 3    # power or energy saturation in the previous step
REASON_RECOVERED = 4

# scalar state slots
(S_MA_SUM, S_MA_N, S_LP_FAST, S_LP_SLOW, S_W, S_ENGAGED, S_SINCE, S_MEAS, S_MEAS_OK, S_LP_OK,
 S_TGT, S_TGT_OK, S_GAP, S_BASE, S_BASE_OK, S_TRANS, S_MISS, S_GBREACH, S_GCLIP) = range(19)
N_STATE = 19


@njit(cache=True, inline="always")
def _limit_target(st, x, step):
    """Rate-limit the grid target: at most ``step`` MW per controller sample."""
    if st[S_TGT_OK] < 0.5:
        st[S_TGT_OK] = 1.0
    elif x > st[S_TGT] + step:
        x = st[S_TGT] + step
    elif x < st[S_TGT] - step:
        x = st[S_TGT] - step
    st[S_TGT] = x
    return x


@njit(cache=True, inline="always")
def _net_bounds(net_on, behind, p_own, f_hi, f_lo, s_hi, s_lo, u_f, u_s, floor_hi=0.0, ceil_lo=0.0):
    """Bounds ``(hi, lo)`` of one storage's power: its own connection ``p_own`` and, with
    ``net_on``, the headroom ``[*_lo, *_hi]`` less what earlier storages took (``u_*``) of the
    substation and, behind the UPSs, of the feeders. The network stops a storage but does not
    push it past ``floor_hi`` / ``ceil_lo`` (0: never forced to act; a slow storage in gap
    mode: its predicted power, which the fast one counted on). [MW]"""
    hi = p_own
    lo = -p_own
    if net_on:
        r_hi = s_hi - u_s
        r_lo = s_lo - u_s
        if behind:
            r_hi = min(r_hi, f_hi - u_f)
            r_lo = max(r_lo, f_lo - u_f)
        hi = min(hi, max(r_hi, floor_hi))
        lo = max(lo, min(r_lo, ceil_lo))
    return hi, lo


def new_state() -> np.ndarray:
    """Fresh scalar state of :func:`control_loop`."""
    st = np.zeros(N_STATE)
    st[S_SINCE] = -1.0
    return st


@njit(cache=True)
def control_loop(t0, t1, mode, load_raw, load_alt, has_alt,
                 mod_keep, mod_throttle, mod_mean,
                 p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha, ramp_step, e_rated,
                 rec_gain_mw, soc_target, group, share, comp, a_rec,
                 delay, sample, ma_window, ma_pre, a_fast, a_slow, has_slow, fast_idx, tgt_step,
                 res_gain_mw, res_share, ma_split,
                 pcc_plan, ff, err_share, fb, rec_gain_fb, comp_fb, res_gain_fb, tgt_step_fb,
                 cd_enabled, cd_soc_trigger, soc_min, soc_max, margin, release_margin, hold,
                 w_step, release_ok, release_e_mwh, gpu_up_step, gpu_dn_step,
                 dt_h, net_on, behind_ups, p_own_max, c_feeder, c_site,
                 rl_step, rl_lo, rl_hi, rl_gain,
                 g_on, g_k, g_lim, g_q, g_qs, g_cnt,
                 st, e, p_prev, sp, last_lim, first_sat, first_lim, soc_lp, loss_lp,
                 out_p, out_e, out_lim, out_load, out_pcc, out_w, meas,
                 ev_step, ev_kind, ev_sto, ev_reason, ev_val, n_ev):
    """Run the closed loop over steps ``[t0, t1)``; see the module docstring.

    Storage arrays have shape (S,), outputs (S, T) or (T,); ``w_step``, ``release_ok`` and
    ``release_e_mwh`` (the plain load's swing energy [MWh]) have shape (T,) or (1,) (one
    value for every step), ``fb`` (T,) in plan-following mode (else
    (1,)); ``st`` is the scalar state of
    :func:`new_state`, ``e``/``p_prev``/``sp``/``last_lim`` the per-storage state,
    ``first_sat``/``first_lim`` the first saturation step and limit (-1 = none). Events go to
    the ``ev_*`` buffers; ``n_ev[0]`` counts them (also those that did not fit).

    ``rl_*`` (ramp_limit): the grid set-point's largest move per sample [MW], the SoC band
    (S,) [frac] and the recovery gain toward it (S,) [MW per unit of SoC]. ``g_*`` (the fast
    guard, :mod:`facility.control.guard`): on/off (on only under a deployable controller with
    storage, never with ``mode`` MODE_NONE: :func:`facility.control.run.run_control`), window
    steps (C,), limits (C, 4), the deques and the breach counts (S + 1, 8) by storage (row S:
    none saturated) and limit.
    """
    n_sto = p_rated.size
    cap = ev_step.size
    rec = np.zeros(n_sto)
    xr = np.zeros(n_sto)
    pred = np.zeros(n_sto)
    for t in range(t0, t1):
        # 1. co-design switch
        if cd_enabled:
            engaged = st[S_ENGAGED] > 0.5
            if not engaged:
                for i in range(n_sto):
                    reason = 0
                    # the SoC level (low-passed): the iteration ripple around it comes back
                    val = soc_lp[i] if e_rated[i] > 0 else soc_target[i]
                    if last_lim[i] > 0 and not ((last_lim[i] == 1 or last_lim[i] == 4)
                                                and st[S_GAP] > 0.5 and n_sto > 1
                                                and st[S_MISS] < 0.5):
                        # (a storage at its power or network limit while the others still met
                        # the grid target is no reason: the fast one hands its rest to the slow
                        # ones, and closes the gap a slow one leaves)
                        reason = REASON_SATURATED
                    elif not cd_soc_trigger or e_rated[i] <= 0:
                        reason = 0
                    elif val <= soc_min[i] + margin + 1e-12:
                        reason = REASON_NEAR_MIN
                    elif val >= soc_max[i] - margin - 1e-12:
                        reason = REASON_NEAR_MAX
                    if reason > 0:
                        st[S_ENGAGED] = 1.0
                        st[S_SINCE] = t
                        k = n_ev[0]
                        if k < cap:
                            ev_step[k] = t
                            ev_kind[k] = EV_ENGAGE
                            ev_sto[k] = i
                            ev_reason[k] = reason if reason != REASON_SATURATED else 10 + last_lim[i]
                            ev_val[k] = val
                        n_ev[0] = k + 1
                        break
            elif t - st[S_SINCE] >= hold:
                ok = release_ok[min(t, release_ok.size - 1)] != 0
                for i in range(n_sto):
                    if last_lim[i] > 0:
                        ok = False
                    elif cd_soc_trigger and e_rated[i] > 0:
                        val = soc_lp[i]
                        if val < soc_min[i] + release_margin or val > soc_max[i] - release_margin:
                            ok = False
                if ok and cd_soc_trigger and not room_for_swing(
                        soc_lp, soc_min, soc_max, release_margin, e_rated,
                        release_e_mwh[min(t, release_e_mwh.size - 1)]):
                    ok = False
                if ok:
                    st[S_ENGAGED] = 0.0
                    k = n_ev[0]
                    if k < cap:
                        ev_step[k] = t
                        ev_kind[k] = EV_RELEASE
                        ev_sto[k] = -1
                        ev_reason[k] = REASON_RECOVERED
                        ev_val[k] = 0.0
                    n_ev[0] = k + 1
            ws = w_step[min(t, w_step.size - 1)]
            w_old = st[S_W]
            if st[S_ENGAGED] > 0.5:
                st[S_W] = min(1.0, st[S_W] + ws)
            else:
                st[S_W] = max(0.0, st[S_W] - ws)
            if st[S_W] != w_old:
                st[S_TRANS] = 1.0          # switching: carry the GPU ramp state
        w = st[S_W]
        # 2. drawn load
        base = load_raw[t]
        if has_alt and w > 0.0:
            base = base + w * (load_alt[t] - base)
        if st[S_TRANS] > 0.5 and st[S_BASE_OK] > 0.5:
            # the GPUs move from where they are at their programmed ramp; once engaged, the
            # transition ends when the drawn load meets the engaged trace, and on release
            # when the weight is back at 0 (no smoothing any more)
            lo = st[S_BASE] - gpu_dn_step
            hi = st[S_BASE] + gpu_up_step
            if base > hi:
                base = hi
            elif base < lo:
                base = lo
            elif w >= 1.0 or w <= 0.0:
                st[S_TRANS] = 0.0
            if w <= 0.0 and st[S_ENGAGED] < 0.5:
                st[S_TRANS] = 0.0
        st[S_BASE] = base
        st[S_BASE_OK] = 1.0
        drawn = mod_keep * (mod_mean + (1.0 - mod_throttle) * (base - mod_mean))
        out_load[t] = drawn
        out_w[t] = w
        # 3. measurement
        sampled = (t % sample) == 0
        if sampled:
            td = t - delay
            if td >= 0:
                st[S_MEAS] = out_load[td]
                st[S_MEAS_OK] = 1.0
        m = st[S_MEAS]
        ok_m = st[S_MEAS_OK] > 0.5
        if mode == MODE_MOVING_AVERAGE:
            # running window over the held measurement, one entry per step
            meas[t] = m if ok_m else np.nan
            if ok_m:
                st[S_MA_SUM] += m
                st[S_MA_N] += 1.0
            tw = t - ma_window
            if tw >= 0:
                if meas[tw] == meas[tw]:
                    st[S_MA_SUM] -= meas[tw]
                    st[S_MA_N] -= 1.0
            elif t < ma_pre.size:          # warm start: the pre-history leaves the window
                st[S_MA_SUM] -= ma_pre[t]
                st[S_MA_N] -= 1.0
        # 4. controller
        close_gap = False
        gap_target = 0.0
        fallback = mode == MODE_TRACK and fb.size > 1 and fb[t] != 0
        if sampled and ok_m and (mode == MODE_FILTER or mode == MODE_TRACK or mode == MODE_RAMP
                                 or ma_split):
            # the low-passes run in plan-following mode too (bumpless MPC fallback)
            if st[S_LP_OK] < 0.5:
                st[S_LP_FAST] = m
                st[S_LP_SLOW] = m
                st[S_LP_OK] = 1.0
            else:
                st[S_LP_FAST] += a_fast * (m - st[S_LP_FAST])
                st[S_LP_SLOW] += a_slow * (m - st[S_LP_SLOW])
        g_rec = rec_gain_fb if fallback else rec_gain_mw
        g_comp = comp_fb if fallback else comp
        g_res = res_gain_fb if fallback else res_gain_mw
        if sampled:
            if mode == MODE_NONE:
                for i in range(n_sto):
                    sp[i] = 0.0
            elif mode == MODE_TRACK and not ok_m:
                for i in range(n_sto):
                    sp[i] = ff[i, t]
            elif not ok_m:
                for i in range(n_sto):
                    sp[i] = 0.0
            else:
                if mode == MODE_MOVING_AVERAGE:
                    target = _limit_target(st, st[S_MA_SUM] / st[S_MA_N], tgt_step)
                    for i in range(n_sto):
                        if ma_split and group[i] != 0:
                            # hybrid: the slow units take the part below the fast cutoff
                            sp[i] = share[i] * (target - st[S_LP_FAST])
                        else:
                            sp[i] = share[i] * (target - m)
                    if n_sto > 1:
                        close_gap = True
                        gap_target = target
                elif mode == MODE_RAMP:
                    # the grid set-point moves toward the load's level (low-pass) plus the SoC
                    # recovery toward the band, at most rl_step per sample
                    x = st[S_LP_FAST]
                    for i in range(n_sto):
                        if e_rated[i] > 0:
                            if soc_lp[i] < rl_lo[i]:
                                x += rl_gain[i] * (rl_lo[i] - soc_lp[i])
                            elif soc_lp[i] > rl_hi[i]:
                                x += rl_gain[i] * (rl_hi[i] - soc_lp[i])
                    g = _limit_target(st, x, rl_step)
                    if n_sto > 1:
                        # the slow units take the set-point's distance to the level, the fast
                        # one the residual (the ripple and what the slow ones miss)
                        for i in range(n_sto):
                            if group[i] != 0:
                                sp[i] = share[i] * (g - st[S_LP_FAST])
                        close_gap = True
                        gap_target = g
                    else:
                        for i in range(n_sto):
                            sp[i] = g - m
                elif fallback:
                    # the filter, its grid target moving from the last planned PCC power
                    if has_slow:
                        for i in range(n_sto):
                            if group[i] != 0:
                                sp[i] = share[i] * (st[S_LP_SLOW] - st[S_LP_FAST])
                        close_gap = True
                        gap_target = _limit_target(st, st[S_LP_SLOW], tgt_step_fb)
                    else:
                        close_gap = True
                        gap_target = _limit_target(st, st[S_LP_FAST], tgt_step_fb)
                elif mode == MODE_FILTER:
                    if has_slow:
                        for i in range(n_sto):
                            if group[i] != 0:
                                sp[i] = share[i] * (st[S_LP_SLOW] - st[S_LP_FAST])
                        close_gap = True
                        gap_target = _limit_target(st, st[S_LP_SLOW], tgt_step)
                    else:
                        g = _limit_target(st, st[S_LP_FAST], tgt_step)
                        for i in range(n_sto):
                            sp[i] = share[i] * (g - m)
                elif pcc_plan[t] != pcc_plan[t]:  # no PCC target (NaN): plan only
                    for i in range(n_sto):
                        sp[i] = ff[i, t]
                else:  # MODE_TRACK: others follow the plan plus their share of its error,
                    # the fast one closes the gap
                    err = pcc_plan[t] - m
                    for i in range(n_sto):
                        err -= ff[i, t]
                    for i in range(n_sto):
                        if i != fast_idx:
                            sp[i] = ff[i, t] + err_share[i] * err
                    close_gap = True
                    gap_target = pcc_plan[t]
                    st[S_TGT] = gap_target         # a fallback starts from here
                    st[S_TGT_OK] = 1.0
                st[S_GAP] = 1.0 if close_gap else 0.0
                for i in range(n_sto):
                    rec[i] = g_rec[i] * (soc_target[i] - soc_lp[i]) + g_comp[i] * loss_lp[i]
                    if not (close_gap and i == fast_idx):
                        sp[i] += rec[i]
                for i in range(n_sto):
                    xr[i] = 0.0
                if close_gap and g_res > 0.0:
                    # the slow storages are the fast one's energy reservoir: its SoC recovery
                    # and loss compensation come from them, not from the grid
                    f = fast_idx
                    rec[f] = g_res * (soc_target[f] - soc_lp[f]) + g_comp[f] * loss_lp[f]
                    for j in range(n_sto):
                        if j != f:
                            xr[j] = -res_share[j] * rec[f]
                            sp[j] += xr[j]
        # 4b. the fast guard: the PCC set-point within what the spec's windows and ramps allow
        # after the PCC history (margined); the storage takes the difference
        g_seen = False
        g_lo_r = -np.inf
        g_hi_r = np.inf
        if g_on:
            g_lo, g_hi, g_lo_r, g_hi_r, g_seen = guard_bounds(t, out_pcc, g_k, g_lim, g_q, g_qs)
            if g_seen and sampled and ok_m:
                d = guard_shift(close_gap, gap_target, m, sp, rec, xr, fast_idx, g_lo, g_hi)
                if abs(d) > 1e-6:
                    st[S_GCLIP] += 1.0
                if close_gap:
                    gap_target += d
                else:
                    sp[fast_idx] += d
        # 5. storage: with several storages (gap mode) the fast one goes first and closes the
        # gap between the grid target and what the slow ones will deliver of their bands
        # (their converter lag, ramp and saturation predicted with the same storage_step);
        # what the fast one cannot deliver (saturation) goes to the slow ones in the same
        # step, shared by rating
        pcc = drawn
        gap_on = st[S_GAP] > 0.5
        ovf = 0.0
        miss = False
        # network headroom of the step for the sum of the storage powers: behind the UPSs
        # (feeders, f_*) and everything (substation, s_*); u_* = what earlier storages took.
        # In gap mode the fast storage makes up for the slow ones, so the slow ones are
        # predicted with the headroom widened by what the fast one can take back (g_*); the
        # fast one then gets what they leave, and the slow ones get what the fast one
        # actually left (so only a saturated fast storage ever lets the slow ones be clipped)
        f_hi = c_feeder - drawn
        f_lo = -c_feeder - drawn
        s_hi = c_site - drawn
        s_lo = -c_site - drawn
        u_f = 0.0
        u_s = 0.0
        for k in range(n_sto):
            if k == 0:
                i = fast_idx
                if close_gap:
                    spf = gap_target - m + rec[i]
                    g_s = min(p_rated[i], p_own_max[i])
                    g_f = g_s if behind_ups[i] else 0.0
                    for kk in range(1, n_sto):
                        j = kk - 1 if kk - 1 < fast_idx else kk
                        hi, lo = _net_bounds(net_on, behind_ups[j], p_own_max[j], f_hi + g_f, f_lo - g_f,
                                             s_hi + g_s, s_lo - g_s, u_f, u_s)
                        p_pred, _e, _l = storage_step_bounded(sp[j], p_prev[j], e[j], p_rated[j],
                                                              hi, lo, eta_c[j], eta_d[j], k_self[j],
                                                              e_min[j], e_max[j], alpha[j],
                                                              ramp_step[j], dt_h)
                        pred[j] = p_pred
                        spf -= p_pred - rec[j] - xr[j]
                        u_s += p_pred
                        if behind_ups[j]:
                            u_f += p_pred
                    sp[i] = spf
                req = sp[i]
            else:
                i = k - 1 if k - 1 < fast_idx else k
                req = sp[i] + res_share[i] * ovf if gap_on else sp[i]
            if k > 0 and close_gap:
                hi, lo = _net_bounds(net_on, behind_ups[i], p_own_max[i], f_hi, f_lo, s_hi, s_lo, u_f, u_s,
                                     min(pred[i], 0.0), max(pred[i], 0.0))
            else:
                hi, lo = _net_bounds(net_on, behind_ups[i], p_own_max[i], f_hi, f_lo, s_hi, s_lo, u_f, u_s)
            p, e_new, lim = storage_step_bounded(req, p_prev[i], e[i], p_rated[i], hi, lo, eta_c[i],
                                                 eta_d[i], k_self[i], e_min[i], e_max[i], alpha[i],
                                                 ramp_step[i], dt_h)
            if k == 0:
                # from here on count what is actually delivered
                u_f = 0.0
                u_s = 0.0
            u_s += p
            if behind_ups[i]:
                u_f += p
            if i == fast_idx:
                ovf = req - p if (gap_on and lim > 0) else 0.0
                miss = lim > 0 and n_sto == 1
            elif ovf != 0.0 and lim > 0:
                miss = True            # the fast one's rest did not fit either
            p_prev[i] = p
            # loss of the step (conversion + self-discharge) and SoC, both low-passed
            loss = p - (e_new - e[i]) / dt_h
            loss_lp[i] += a_rec * (loss - loss_lp[i])
            if e_rated[i] > 0:
                soc_lp[i] += a_rec * (e_new / e_rated[i] - soc_lp[i])
            e[i] = e_new
            last_lim[i] = lim
            out_p[i, t] = p
            out_e[i, t] = e_new
            out_lim[i, t] = lim
            if lim > 0 and first_sat[i] < 0:
                first_sat[i] = t
                first_lim[i] = lim
            pcc += p
        # 6. PCC (and whether the storages together met the grid target)
        out_pcc[t] = pcc
        st[S_MISS] = 1.0 if miss else 0.0
        if g_on:
            if g_seen:
                who, over = guard_breach(t, pcc, g_lo_r, g_hi_r, out_lim, g_cnt)
                if over > 0.0:
                    if st[S_GBREACH] < 0.5:
                        k = n_ev[0]
                        if k < cap:
                            ev_step[k] = t
                            ev_kind[k] = EV_GUARD_BREACH
                            ev_sto[k] = who
                            ev_reason[k] = out_lim[who, t] if who >= 0 else 0
                            ev_val[k] = over
                        n_ev[0] = k + 1
                    st[S_GBREACH] = 1.0
                else:
                    st[S_GBREACH] = 0.0
            guard_push(t, out_pcc, g_k, g_q, g_qs)
