"""Reference solutions with pandapower itself: one ``runpp`` per step, and ``run_timeseries``.

Slow (about 40 and 200 steps/s); used by the tests to cross-check the batch solver and by
``benchmarks/bench_powerflow.py`` as the baselines.
"""

from __future__ import annotations

import copy

import numpy as np
import pandapower as pp
import pandas as pd

from facility.electrical.network import FacilityNetwork, bool_columns_as_object
from facility.electrical.powerflow import feeder_injections

__all__ = ["set_step", "runpp_step", "runpp_loop", "run_timeseries_loop"]


def _inputs(fn: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None):
    t = p_feeder_mw.shape[0]
    st = {k: np.zeros(t) for k in ("rack_storage", "ups", "bess")}
    st.update({k: np.asarray(v, dtype=float) for k, v in (p_storage_mw or {}).items() if v is not None})
    p_out, p_in = feeder_injections(fn, p_feeder_mw, st["rack_storage"], st["ups"])
    return p_out, p_in, st["bess"]


def set_step(fn: FacilityNetwork, net, p_in_mw: np.ndarray, p_bess_mw: float) -> None:
    """Write one step's UPS input powers (F,) [MW] and BESS power [MW] into ``net``."""
    net.load.loc[fn.load_index, "p_mw"] = p_in_mw
    net.load.loc[fn.load_index, "q_mvar"] = p_in_mw * fn.tan_phi
    if fn.storage_index is not None:
        net.storage.at[fn.storage_index, "p_mw"] = p_bess_mw


def _read(fn: FacilityNetwork, net, ups_loss_mw: float) -> dict:
    names = net.trafo.name.astype(str)
    sub = names.str.startswith("substation").to_numpy()
    lv = names.str.startswith("feeder").to_numpy()
    bess = (names == "bess").to_numpy()
    ld = net.res_trafo.loading_percent.to_numpy()
    vm = net.res_bus.vm_pu.drop(index=fn.bus["source"]).to_numpy()
    return {
        "p_pcc_mw": -float(net.res_impedance.p_to_mw.iat[0]),
        "q_pcc_mvar": -float(net.res_impedance.q_to_mvar.iat[0]),
        "vm_bus_pu": vm,
        "vm_min_pu": float(vm.min()),
        "vm_max_pu": float(vm.max()),
        "trafo_loading_percent": float(ld.max()),
        "sub_trafo_loading_percent": float(ld[sub].max()),
        "lv_trafo_loading_percent": float(ld[lv].max()),
        "bess_trafo_loading_percent": float(ld[bess].max()) if bess.any() else 0.0,
        "losses_mw": float(net.res_trafo.pl_mw.sum()) + ups_loss_mw,
    }


def runpp_step(fn: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None = None,
               tolerance_mva: float = 1e-10, net=None, numba: bool = True) -> dict:
    """Solve one step with ``pandapower.runpp``.

    Parameters
    ----------
    p_feeder_mw : numpy.ndarray, shape (F,)
        Site power per feeder. [MW]
    p_storage_mw : dict of str to float, optional
        ``rack_storage``, ``ups``, ``bess`` power of the step (+ = charging). [MW]
    numba : bool
        pandapower's numba option (False skips its JIT compilation: faster for a few steps).

    Returns
    -------
    dict
        ``p_pcc_mw``, ``q_pcc_mvar``, ``vm_bus_pu`` (buses but the source, pandapower order),
        ``vm_min_pu``, ``vm_max_pu``, ``trafo_loading_percent`` (largest of all transformers),
        ``sub_trafo_loading_percent``, ``lv_trafo_loading_percent``, ``bess_trafo_loading_percent``,
        ``losses_mw``.
    """
    net = copy.deepcopy(fn.net) if net is None else net
    st = {k: np.atleast_1d(v) for k, v in (p_storage_mw or {}).items()}
    p_out, p_in, p_bess = _inputs(fn, np.atleast_2d(p_feeder_mw), st)
    set_step(fn, net, p_in[0], float(p_bess[0]))
    pp.runpp(net, tolerance_mva=tolerance_mva, calculate_voltage_angles=True, numba=numba)
    return _read(fn, net, float((p_in - p_out).sum()))


def runpp_loop(fn: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None = None,
               steps: np.ndarray | None = None) -> dict:
    """The naive baseline: ``runpp`` once per step (of ``steps``, default all). Returns (S,) arrays."""
    p_feeder_mw = np.asarray(p_feeder_mw, dtype=float)
    steps = np.arange(p_feeder_mw.shape[0]) if steps is None else np.asarray(steps)
    net = copy.deepcopy(fn.net)
    rows = []
    for s in steps:
        st = {k: np.asarray(v)[s] for k, v in (p_storage_mw or {}).items() if v is not None}
        rows.append(runpp_step(fn, p_feeder_mw[s], st, tolerance_mva=1e-8, net=net))
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def run_timeseries_loop(fn: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None = None,
                        steps: np.ndarray | None = None, numba: bool = True) -> dict:
    """The second baseline: pandapower's ``run_timeseries`` with ConstControl profiles.

    Returns (S,) arrays ``p_pcc_mw`` and ``vm_min_pu``.
    """
    from pandapower.control import ConstControl
    from pandapower.timeseries import DFData, OutputWriter, run_timeseries

    p_feeder_mw = np.asarray(p_feeder_mw, dtype=float)
    steps = np.arange(p_feeder_mw.shape[0]) if steps is None else np.asarray(steps)
    sub = {k: np.asarray(v)[steps] for k, v in (p_storage_mw or {}).items() if v is not None}
    p_out, p_in, p_bess = _inputs(fn, p_feeder_mw[steps], sub)
    net = copy.deepcopy(fn.net)
    n = len(steps)
    cols = [str(i) for i in fn.load_index]
    ds_p = DFData(pd.DataFrame(p_in, columns=cols))
    ds_q = DFData(pd.DataFrame(p_in * fn.tan_phi, columns=cols))
    with bool_columns_as_object(net, "controller"):  # pandapower adds controllers cell by cell
        ConstControl(net, "load", "p_mw", element_index=list(fn.load_index), data_source=ds_p, profile_name=cols)
        ConstControl(net, "load", "q_mvar", element_index=list(fn.load_index), data_source=ds_q, profile_name=cols)
        if fn.storage_index is not None:
            ds_b = DFData(pd.DataFrame({"bess": p_bess}))
            ConstControl(net, "storage", "p_mw", element_index=[fn.storage_index], data_source=ds_b,
                         profile_name=["bess"])
    ow = OutputWriter(net, time_steps=range(n), output_path=None, log_variables=[])
    ow.log_variable("res_impedance", "p_to_mw")
    ow.log_variable("res_bus", "vm_pu")
    ow.log_variable("res_trafo", "loading_percent")
    run_timeseries(net, time_steps=range(n), verbose=False, calculate_voltage_angles=True, numba=numba)
    vm = ow.output["res_bus.vm_pu"].drop(columns=fn.bus["source"]).to_numpy()
    return {"p_pcc_mw": -ow.output["res_impedance.p_to_mw"].to_numpy()[:, 0], "vm_min_pu": vm.min(axis=1)}
