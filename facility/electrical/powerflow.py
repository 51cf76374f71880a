"""Time-series power flow of the facility network, chunked, and its metrics.

Per step: the feeder loads plus rack storage and UPS battery power (split over the feeders in
proportion to each feeder's headroom to its equipment limits, :func:`storage_shares`) form
each UPS's output; the UPS loss model gives its AC input, the load of the feeder's LV bus (Q
from ``grid.power_factor``); the BESS injects at its own bus.
:mod:`facility.electrical.solver` solves all steps of a chunk at once on the admittance
matrix pandapower builds; branch flows then give the PCC power, transformer loadings and
losses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from facility.electrical.flows import ROWS, summarize_steps
from facility.electrical.solver import ZBUS_MAX_ITER, solve_newton, solve_zbus_warm, solve_zbus_warm_star, star_split
from facility.electrical.ups import ups_input_mw
from facility.errors import PowerFlowError, ScenarioError

if TYPE_CHECKING:  # annotations only: network -> limits -> powerflow at run time
    from facility.electrical.network import FacilityNetwork

__all__ = ["PowerFlowResult", "run_power_flow", "electrical_metrics", "feeder_injections", "storage_shares",
           "TOL_MVA"]

#: Largest power mismatch per bus accepted as converged. [MVA] (1e-10 pu on a 1 MVA base)
TOL_MVA = 1e-10
_STORAGE_KEYS = ("rack_storage", "ups", "bess")


@dataclass
class PowerFlowResult:
    """Result of :func:`run_power_flow`; every array has shape (T,).

    Attributes
    ----------
    p_pcc_mw, q_pcc_mvar : numpy.ndarray
        Power drawn from the utility at the PCC (consumer frame). [MW], [Mvar]
    vm_min_pu, vm_max_pu : numpy.ndarray
        Lowest / highest voltage magnitude over the facility's AC buses (PCC, MV, LV, BESS). [pu]
    vm_pcc_pu : numpy.ndarray
        Voltage magnitude at the PCC. [pu]
    vm_min_mv_pu, vm_max_mv_pu : numpy.ndarray
        Lowest / highest voltage of the PCC and MV buses. [pu]
    vm_min_lv_pu, vm_max_lv_pu : numpy.ndarray
        Lowest / highest voltage of the LV buses (feeder LV buses = UPS inputs, BESS bus). [pu]
    sub_trafo_loading_percent : numpy.ndarray
        Largest loading of the substation transformers (pandapower's definition:
        max(|S_hv| / vm_hv, |S_lv| / vm_lv) / sn_mva). [%]
    lv_trafo_loading_percent : numpy.ndarray
        Largest loading of the feeder MV/LV transformers (the worst feeder). [%]
    bess_trafo_loading_percent : numpy.ndarray
        Loading of the BESS transformer (0 without a BESS). [%]
    ups_loading_percent : numpy.ndarray
        Largest UPS loading |P_out| / S_ups over the feeders (the worst feeder). [%]
    trafo_loading_percent : numpy.ndarray (property)
        Largest loading of any transformer (substation, feeder, BESS). [%]
    losses_mw : numpy.ndarray
        Network (transformer) losses + UPS conversion losses. [MW]
    network_losses_mw, ups_losses_mw : numpy.ndarray
        The two parts of ``losses_mw``. [MW]
    p_load_mw : numpy.ndarray
        Site load + all storage power (what the PCC serves before losses). [MW]
    max_mismatch_mva : float
        Largest power mismatch of any bus in any step. [MVA]
    n_newton_steps : int
        Steps the Z-bus iteration handed to Newton-Raphson.
    vm_bus_pu : numpy.ndarray or None
        (T, B) voltage of every non-source bus when requested (``bus_names`` names them). [pu]
    """

    p_pcc_mw: np.ndarray
    q_pcc_mvar: np.ndarray
    vm_min_pu: np.ndarray
    vm_max_pu: np.ndarray
    vm_pcc_pu: np.ndarray
    sub_trafo_loading_percent: np.ndarray
    lv_trafo_loading_percent: np.ndarray
    losses_mw: np.ndarray
    network_losses_mw: np.ndarray
    ups_losses_mw: np.ndarray
    p_load_mw: np.ndarray
    bess_trafo_loading_percent: np.ndarray | None = None
    ups_loading_percent: np.ndarray | None = None
    vm_min_mv_pu: np.ndarray | None = None
    vm_max_mv_pu: np.ndarray | None = None
    vm_min_lv_pu: np.ndarray | None = None
    vm_max_lv_pu: np.ndarray | None = None
    max_mismatch_mva: float = 0.0
    n_newton_steps: int = 0
    vm_bus_pu: np.ndarray | None = None
    bus_names: list = field(default_factory=list)

    def __post_init__(self):
        z = np.zeros_like(self.p_pcc_mw)
        for k in ("bess_trafo_loading_percent", "ups_loading_percent"):
            if getattr(self, k) is None:
                setattr(self, k, z.copy())
        for k, v in (("vm_min_mv_pu", self.vm_min_pu), ("vm_max_mv_pu", self.vm_max_pu),
                     ("vm_min_lv_pu", self.vm_min_pu), ("vm_max_lv_pu", self.vm_max_pu)):
            if getattr(self, k) is None:
                setattr(self, k, v.copy())

    @property
    def n_steps(self) -> int:
        """Number of time steps T."""
        return int(self.p_pcc_mw.size)

    @property
    def trafo_loading_percent(self) -> np.ndarray:
        """Largest loading of any transformer (substation, feeder MV/LV, BESS) per step. [%]"""
        return np.maximum(np.maximum(self.sub_trafo_loading_percent, self.lv_trafo_loading_percent),
                          self.bess_trafo_loading_percent)


def storage_shares(p_feeder_mw: np.ndarray, p_storage_mw: np.ndarray, p_max_mw: np.ndarray) -> np.ndarray:
    """Share of the storage behind the UPSs that each feeder takes, per step.

    The rack storage and UPS batteries are lumped over the site; their power goes to the
    feeders in proportion to each feeder's headroom to what its equipment carries
    (what a per-feeder dispatcher does), so no feeder is overloaded while the lumped power
    stays within the site-wide headroom Σ_f P_max,f − Σ_f P_f:

    .. math::
        w_{f,t} = \\frac{h_{f,t}}{\\sum_g h_{g,t}},\\quad
        h_{f,t} = \\begin{cases} \\max(P^{max}_f - P_{f,t}, 0) & p_t \\ge 0 \\ (charging)\\\\
                                \\max(P^{max}_f + P_{f,t}, 0) & p_t < 0 \\ (discharging)\\end{cases}

    (reverse flow counts against the same ratings); by ``P_max`` where no feeder has headroom.

    Parameters
    ----------
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Site power per feeder (UPS output before storage). [MW]
    p_storage_mw : numpy.ndarray, shape (T,)
        Rack storage + UPS battery power, + = charging. [MW]
    p_max_mw : numpy.ndarray, shape (F,)
        Active power at the UPS output each feeder carries at its limits
        (:attr:`facility.electrical.limits.NetworkLimits.feeder_p_max_mw`). [MW]

    Returns
    -------
    numpy.ndarray, shape (T, F)
        Shares w (each row sums to 1). [frac]
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    pmax = np.asarray(p_max_mw, dtype=float)[None, :]
    charge = (np.asarray(p_storage_mw, dtype=float) >= 0.0)[:, None]
    h = np.where(charge, np.maximum(pmax - p, 0.0), np.maximum(pmax + p, 0.0))
    tot = h.sum(axis=1, keepdims=True)
    base = pmax / pmax.sum() if pmax.sum() > 0 else np.full_like(pmax, 1.0 / pmax.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0.0, h / tot, base)


def feeder_injections(net: FacilityNetwork, p_feeder_mw: np.ndarray, p_rack_mw: np.ndarray,
                      p_ups_mw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """UPS output and AC input of each feeder.

    Parameters
    ----------
    net : FacilityNetwork
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Site power per feeder. [MW]
    p_rack_mw, p_ups_mw : numpy.ndarray, shape (T,)
        Rack storage and UPS battery power (+ = charging), split over the feeders by
        :func:`storage_shares` (in proportion to each feeder's headroom). [MW]

    Returns
    -------
    p_out_mw, p_in_mw : numpy.ndarray, shape (T, F)
        UPS output (load + storage share) and AC input (output + UPS loss). [MW]
    """
    p_s = np.asarray(p_rack_mw, dtype=float) + np.asarray(p_ups_mw, dtype=float)
    if np.any(p_s != 0.0):
        p_out = p_feeder_mw + storage_shares(p_feeder_mw, p_s, net.limits.feeder_p_max_mw) * p_s[:, None]
    else:
        p_out = np.array(p_feeder_mw, dtype=float)
    p_in = ups_input_mw(p_out, net.ups_sn_mva, net.ups_eff_rated_frac, net.ups_shares)
    return p_out, p_in


def _storage_arrays(p_storage_mw: dict | None, t: int, has_bess: bool) -> dict[str, np.ndarray]:
    out = {k: np.zeros(t) for k in _STORAGE_KEYS}
    for k, v in (p_storage_mw or {}).items():
        sec = k.split(".", 1)[0]        # a hybrid section's units add at the section's bus
        if sec not in out:
            raise ScenarioError(f"p_storage_mw key {k!r} unknown; allowed: {', '.join(_STORAGE_KEYS)} "
                                f"(or a unit <section>.<technology>)")
        if v is None:
            continue
        a = np.asarray(v, dtype=float)
        if a.shape != (t,):
            raise ScenarioError(f"p_storage_mw[{k!r}] has shape {a.shape}; expected ({t},) [MW]")
        out[sec] = out[sec] + a
    if not has_bess and np.any(out["bess"] != 0.0):
        raise ScenarioError("p_storage_mw['bess'] is non-zero but the network has no BESS (bess.enabled = false)")
    return out


def run_power_flow(net: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None = None,
                   chunk_steps: int = 50_000, store_bus_vm: bool = False) -> PowerFlowResult:
    """AC power flow of every time step, solved in chunks of ``chunk_steps`` steps.

    Parameters
    ----------
    net : FacilityNetwork
        From :func:`facility.electrical.network.build_network`.
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Site power per feeder (consumer frame). [MW]
    p_storage_mw : dict of str to numpy.ndarray (T,), optional
        ``rack_storage``, ``ups``, ``bess`` powers, + = charging. [MW]
    chunk_steps : int
        Steps solved at once; bounds memory (about 1 kB per step for 8 feeders).
    store_bus_vm : bool
        Keep the (T, B) voltage of every bus (float32) in ``vm_bus_pu``.

    Returns
    -------
    PowerFlowResult

    Raises
    ------
    PowerFlowError
        A step does not converge; the message names it, its largest mismatch and the likely cause.
    ScenarioError
        Input arrays of the wrong shape.
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    if p.ndim == 1:
        p = p[:, None]
    if p.ndim != 2 or p.shape[1] != net.n_feeders:
        raise ScenarioError(f"p_feeder_mw has shape {p.shape}; expected (T, {net.n_feeders}) [MW]")
    t = p.shape[0]
    st = _storage_arrays(p_storage_mw, t, net.has_bess)
    if not np.all(np.isfinite(p)) or not all(np.all(np.isfinite(v)) for v in st.values()):
        raise ScenarioError("p_feeder_mw and p_storage_mw must be finite [MW]")
    p_load = p.sum(axis=1) + st["rack_storage"] + st["ups"] + st["bess"]
    if not net.enabled:
        z, one = np.zeros(t), np.ones(t)
        return PowerFlowResult(
            p_pcc_mw=p_load.copy(), q_pcc_mvar=p.sum(axis=1) * net.tan_phi, vm_min_pu=one, vm_max_pu=one.copy(),
            vm_pcc_pu=one.copy(), sub_trafo_loading_percent=z, lv_trafo_loading_percent=z.copy(),
            losses_mw=z.copy(), network_losses_mw=z.copy(), ups_losses_mw=z.copy(), p_load_mw=p_load)

    m = net.matrices
    names = list(ROWS) + ["ups_losses_mw", "ups_loading_percent"]
    out = {k: np.empty(t) for k in names}
    n_l = m.other.size
    vm_bus = np.empty((t, n_l), dtype=np.float32) if store_bus_vm else None
    k_load = np.concatenate([m.k_feeder, [m.k_bess] if m.k_bess is not None else []]).astype(int)
    z_kk = m.z_ll[np.ix_(k_load, k_load)]
    k_free = np.setdiff1d(np.arange(n_l), k_load)
    z_fk = np.ascontiguousarray(m.z_ll[np.ix_(k_free, k_load)].T)
    v0_k = m.v0_l[k_load]
    star = star_split(z_kk)  # feeders and BESS hang off the MV bus: O(K) sweeps
    # full-bus index -> column of V_L (-1 = the slack)
    col = np.full(n_l + 1, -1, dtype=np.int64)
    col[m.other] = np.arange(n_l)
    f_pos, t_pos = col[m.br_f], col[m.br_t]
    if col[m.pcc_f] != -1:
        raise RuntimeError("the source impedance must start at the slack bus")
    worst, n_newton = 0.0, 0
    i_slack_l = m.y_ll @ (-m.v0_l)  # Y_LS V_S = -Y_LL V0

    for a in range(0, t, max(1, int(chunk_steps))):
        b = min(t, a + int(chunk_steps))
        p_out, p_in = feeder_injections(net, p[a:b], st["rack_storage"][a:b], st["ups"][a:b])
        s_k = p_in * (1.0 + 1j * net.tan_phi)
        if m.k_bess is not None:
            s_k = np.concatenate([s_k, st["bess"][a:b, None] + 0j], axis=1)
        if star is not None:
            v_k, i_k, mis, _ = solve_zbus_warm_star(s_k, star[0], star[1], v0_k, TOL_MVA, ZBUS_MAX_ITER)
        else:
            v_k, i_k, mis, _ = solve_zbus_warm(s_k, z_kk, v0_k, TOL_MVA, ZBUS_MAX_ITER)
        v_l = np.empty((b - a, n_l), dtype=complex)
        v_l[:, k_load] = v_k  # = V0_K - Z_KK i_k
        v_l[:, k_free] = m.v0_l[k_free] - i_k @ z_fk  # PCC and MV: O(K) per step, not O(K L)
        bad = ~(mis <= TOL_MVA)
        if np.any(bad):
            rows = np.flatnonzero(bad)
            n_newton += rows.size
            per_batch = max(1, min(2000, int(5e7 // (2 * n_l) ** 2)))  # bounds the Jacobians' memory
            for c in range(0, rows.size, per_batch):
                r = rows[c:c + per_batch]
                s_l = np.zeros((r.size, n_l), dtype=complex)
                s_l[:, k_load] = s_k[r]
                v_nr, mis_nr = solve_newton(s_l, m.y_ll, i_slack_l, v_l[r], TOL_MVA)
                v_l[r] = v_nr
                mis[r] = mis_nr
                failed = r[~(mis_nr <= TOL_MVA)]
                if failed.size:
                    _raise_not_converged(net, int(a + failed[0]), float(mis[failed[0]]), s_k[failed[0]],
                                         np.abs(v_l[failed[0]]), int(np.sum(~(mis_nr <= TOL_MVA))))
        worst = max(worst, float(mis.max()))
        summ = summarize_steps(v_l, m.v_slack, f_pos, t_pos, m.br_y, m.br_sn_mva, m.br_group.astype(np.int64),
                               int(m.k_pcc), m.pcc_ytf, m.pcc_ytt, m.bus_lv)
        for j, key in enumerate(ROWS):
            out[key][a:b] = summ[j]
        out["ups_losses_mw"][a:b] = (p_in - p_out).sum(axis=1)
        out["ups_loading_percent"][a:b] = (np.abs(p_out) / net.ups_sn_mva[None, :]).max(axis=1) * 100.0
        if vm_bus is not None:
            vm_bus[a:b] = np.abs(v_l)

    bus_names = list(m.bus_names) if store_bus_vm else []
    return PowerFlowResult(
        **out, losses_mw=out["network_losses_mw"] + out["ups_losses_mw"], p_load_mw=p_load,
        max_mismatch_mva=worst, n_newton_steps=n_newton, vm_bus_pu=vm_bus, bus_names=bus_names)


def _raise_not_converged(net: FacilityNetwork, step: int, mis_mva: float, s_k: np.ndarray,
                         vm: np.ndarray, n_failed: int) -> None:
    s_feeders = np.abs(s_k[: net.n_feeders])
    s_total = float(np.abs(s_k.sum()))
    sub_pct = s_total / (net.trafo_sn_mva * net.n_trafos) * 100.0
    lv_pct = s_feeders / net.lv_trafo_sn_mva * 100.0
    f_worst = int(np.argmax(lv_pct))
    causes = []
    if sub_pct > 100.0:
        causes.append(f"overloaded substation transformer(s): demand {s_total:.1f} MVA = {sub_pct:.0f} % of "
                      f"{net.n_trafos} x {net.trafo_sn_mva:g} MVA (grid.trafo_sn_mva)")
    if lv_pct[f_worst] > 100.0:
        causes.append(f"overloaded feeder transformer {f_worst}: {s_feeders[f_worst]:.1f} MVA = "
                      f"{lv_pct[f_worst]:.0f} % of {net.lv_trafo_sn_mva[f_worst]:g} MVA (grid.lv_trafo_sn_mva)")
    causes.append("voltage collapse: the demand exceeds what the source impedance (grid.sc_mva) and the "
                  "transformer impedances (vk_percent) can transfer")
    mis_txt = "not finite (diverged)" if not np.isfinite(mis_mva) else f"{mis_mva:.3g} MVA"
    vm_txt = f"{np.nanmin(vm):.3f} pu" if np.any(np.isfinite(vm)) else "n/a"
    raise PowerFlowError(
        f"power flow did not converge at time step {step} ({n_failed} step(s) of its batch failed): "
        f"largest mismatch {mis_txt} (tolerance {TOL_MVA:g} MVA), lowest voltage {vm_txt}; "
        f"likely cause: {'; '.join(causes)}")


def electrical_metrics(res: PowerFlowResult, dt_s: float) -> dict:
    """The ``electrical`` metrics of ``metrics.json``.

    Returns
    -------
    dict
        The contract's ``min_vm_pu`` and ``max_vm_pu`` (extremes over all AC buses and steps)
        [pu], ``max_trafo_loading_percent`` (largest loading of *any* transformer: substation,
        feeder MV/LV, BESS) [%], ``losses_mwh`` = sum_t losses_mw(t) * dt_s / 3600 (network +
        UPS) [MWh]; and ``min_vm_pcc_pu``, ``min_vm_mv_pu`` / ``max_vm_mv_pu`` (PCC and MV
        buses), ``min_vm_lv_pu`` / ``max_vm_lv_pu`` (LV buses: UPS inputs, BESS) [pu],
        ``max_sub_trafo_loading_percent``, ``max_lv_trafo_loading_percent`` (worst feeder),
        ``max_bess_trafo_loading_percent``, ``max_ups_loading_percent`` (worst UPS) [%],
        ``network_losses_mwh`` and ``ups_losses_mwh`` (the two parts of ``losses_mwh``) [MWh].
    """
    if res.n_steps == 0:
        raise ScenarioError("electrical_metrics needs at least one time step")
    h = dt_s / 3600.0
    return {
        "min_vm_pu": float(np.min(res.vm_min_pu)),
        "max_vm_pu": float(np.max(res.vm_max_pu)),
        "max_trafo_loading_percent": float(np.max(res.trafo_loading_percent)),
        "losses_mwh": float(np.sum(res.losses_mw) * h),
        "min_vm_pcc_pu": float(np.min(res.vm_pcc_pu)),
        "min_vm_mv_pu": float(np.min(res.vm_min_mv_pu)),
        "max_vm_mv_pu": float(np.max(res.vm_max_mv_pu)),
        "min_vm_lv_pu": float(np.min(res.vm_min_lv_pu)),
        "max_vm_lv_pu": float(np.max(res.vm_max_lv_pu)),
        "max_sub_trafo_loading_percent": float(np.max(res.sub_trafo_loading_percent)),
        "max_lv_trafo_loading_percent": float(np.max(res.lv_trafo_loading_percent)),
        "max_bess_trafo_loading_percent": float(np.max(res.bess_trafo_loading_percent)),
        "max_ups_loading_percent": float(np.max(res.ups_loading_percent)),
        "network_losses_mwh": float(np.sum(res.network_losses_mw) * h),
        "ups_losses_mwh": float(np.sum(res.ups_losses_mw) * h),
    }
