"""Facility network builder: the scenario's ``[grid]`` section as a pandapower network.

Topology (consumer frame, all loads PQ)::

    ext_grid (grid.vm_pu) -- source bus --[source impedance: grid.sc_mva, grid.rx_ratio]--
      PCC bus (grid.vn_kv) ==[grid.n_trafos substation trafos]== MV bus (grid.mv_kv)
        |-- per feeder f: MV/LV trafo -- LV bus f (grid.lv_kv): load = UPS AC input
        |       (the UPS output feeds the rack bus, regulated by the UPS inverter)
        '-- BESS trafo -- BESS bus (grid.lv_kv): storage element (if bess.enabled)

The PCC is the HV bus behind the utility's Thevenin impedance Z = vn_kv^2 / sc_mva, so PCC
voltage sags with the load. The PCC power is the power flowing from the utility into the PCC
bus (the utility's own source impedance losses are not the facility's).
"""

from __future__ import annotations

import copy
import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandapower as pp

from facility.electrical.checks import check_grid_types
from facility.electrical.limits import network_limits
from facility.electrical.ups import ups_input_mw
from facility.errors import PowerFlowError, ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = [
    "FacilityNetwork",
    "NetworkMatrices",
    "build_network",
    "export_network",
    "bool_columns_as_object",
    "SIZING_FACTOR",
    "MIN_RATING_MVA",
    "LV_PFE_FRAC",
    "LV_I0_PERCENT",
    "MAX_OVERLOAD_FRAC",
]

#: Default ratings are this factor times the peak they carry.
SIZING_FACTOR = 1.25
#: Smallest default rating (a feeder without load still gets a transformer). [MVA]
MIN_RATING_MVA = 0.1
#: Iron losses of MV/LV and BESS transformers without a type, as a share of the rating. [frac]
LV_PFE_FRAC = 0.0015
#: No-load current of MV/LV and BESS transformers without a type. [%]
LV_I0_PERCENT = 0.3
#: A network whose peak load exceeds this multiple of a rating cannot be built. [frac]
MAX_OVERLOAD_FRAC = 2.0



@dataclass
class NetworkMatrices:
    """Admittance data of the network taken from pandapower's internal ppc (per unit on 1 MVA = MW).

    Bus order is pandapower's internal order; ``slack`` is the source bus, ``other`` all others.
    """

    v_slack: complex
    slack: int
    other: np.ndarray            # (L,) bus indices of the non-slack buses
    y_ll: np.ndarray             # (L, L) admittance among non-slack buses
    z_ll: np.ndarray             # (L, L) its inverse
    v0_l: np.ndarray             # (L,) no-load voltages  -Z_LL Y_LS V_S
    k_feeder: np.ndarray         # (F,) positions in ``other`` of the LV feeder buses
    k_bess: int | None           # position in ``other`` of the BESS bus
    k_pcc: int                   # position in ``other`` of the PCC bus
    br_f: np.ndarray             # (B,) from-bus (full index) of each transformer branch
    br_t: np.ndarray             # (B,) to-bus
    br_y: np.ndarray             # (B, 4) yff, yft, ytf, ytt
    br_sn_mva: np.ndarray        # (B,) rating (times parallel units)
    br_group: np.ndarray         # (B,) 0 = substation, 1 = feeder MV/LV, 2 = BESS
    pcc_f: int                   # source impedance from-bus (source) and to-bus (PCC)
    pcc_t: int
    pcc_ytf: complex
    pcc_ytt: complex
    bus_names: list = field(default_factory=list)  # pandapower bus name of each column of ``other``
    bus_lv: np.ndarray | None = None  # (L,) True for LV-level buses (feeder LV buses, BESS bus)


@dataclass
class FacilityNetwork:
    """The facility's pandapower network plus what the batch power flow needs.

    Attributes
    ----------
    net : pandapowerNet
        The network (loads at the feeders' peak UPS input); ``export_network`` writes it.
    enabled : bool
        ``grid.enabled``; False = run_power_flow is a lossless sum at 1 pu.
    n_feeders : int
        Number of feeders F.
    bus : dict
        pandapower bus index of ``source``, ``pcc``, ``mv``, ``bess`` (or None) and ``lv`` (list).
    trafo_sn_mva, lv_trafo_sn_mva, ups_sn_mva, bess_trafo_sn_mva
        Ratings (per unit; LV ratings are (F,) and include parallel units). [MVA]
    ups_eff_rated_frac : float
        UPS efficiency at rated load (``ups.eff_ups_frac``). [frac]
    ups_shares : tuple of float
        (no-load, linear, quadratic) shares of the UPS rated loss.
    tan_phi : float
        Q / P of the feeder loads, from ``grid.power_factor``. [-]
    has_bess : bool
        Whether the BESS and its transformer exist.
    grid : GridConfig or None
        The ``[grid]`` section it was built from (its limits define :attr:`limits`).
    """

    net: object
    enabled: bool
    n_feeders: int
    bus: dict
    load_index: np.ndarray
    storage_index: int | None
    trafo_sn_mva: float
    n_trafos: int
    lv_trafo_sn_mva: np.ndarray
    ups_sn_mva: np.ndarray
    bess_trafo_sn_mva: float | None
    ups_eff_rated_frac: float
    ups_shares: tuple[float, float, float]
    tan_phi: float
    has_bess: bool
    grid: object = None
    _matrices: NetworkMatrices | None = field(default=None, repr=False)
    _limits: object = field(default=None, repr=False)

    @property
    def matrices(self) -> NetworkMatrices:
        """Admittance data for the batch solver (pandapower runs once, at zero load, to build it)."""
        if self._matrices is None:
            self._matrices = _extract_matrices(self)
        return self._matrices

    @property
    def limits(self):
        """What the network carries within its electrical limits
        (:class:`facility.electrical.limits.NetworkLimits`, computed on first use)."""
        if self._limits is None:
            self._limits = network_limits(self)
        return self._limits


def _rating(value: float | None, peak_mw: float) -> float:
    return float(value) if value is not None else max(SIZING_FACTOR * peak_mw, MIN_RATING_MVA)


@contextmanager
def bool_columns_as_object(net, table: str):
    """Hold the boolean columns of ``net[table]`` as ``object`` while a single-element
    pandapower creator runs, then restore them to ``bool``.

    pandapower's single-element creators (``create_ext_grid``, controllers) write a new row
    cell by cell: the first write enlarges the table with NaN, which turns an empty boolean
    column (``in_service``) into float64, and pandas >= 3 then refuses to write ``True`` into
    it (pandas 2 warned and upcast). Object columns take both, so the table comes out the same
    under pandas 2 and 3. Vectorized ``create_<elements>`` functions need none of this.
    """
    df = net[table]
    cols = [c for c in df.columns if df[c].dtype == bool]
    for c in cols:
        df[c] = df[c].astype(object)
    try:
        yield
    finally:
        df = net[table]
        for c in cols:
            if c in df.columns:
                df[c] = df[c].astype(bool)


def _create_ext_grid(net, bus: int, **kwargs) -> int:
    """``pandapower.create_ext_grid`` under pandas 2 and 3 (no vectorized ``create_ext_grids``
    exists in every pandapower release this package supports)."""
    with bool_columns_as_object(net, "ext_grid"):
        return int(pp.create_ext_grid(net, bus, **kwargs))


def build_network(scenario: "Scenario", feeder_peak_mw: np.ndarray) -> FacilityNetwork:
    """Build the facility network of a scenario.

    Parameters
    ----------
    scenario : facility.config.Scenario
        Resolved (:func:`facility.scenario.resolve`); uses ``grid``, ``ups.eff_ups_frac``,
        ``bess`` (enabled, p_rated_mw) and the transformer and UPS types of ``library``
        (``trafo``, ``lv_trafo``, ``ups``).
    feeder_peak_mw : numpy.ndarray, shape (F,)
        Peak site power of each feeder; sizes the default ratings (1.25 x peak). [MW]

    Returns
    -------
    FacilityNetwork

    Raises
    ------
    ScenarioError
        Unknown types, conflicting keys, or a rating below 1/2 of the peak it must carry.
    """
    g = scenario.grid
    peaks = np.atleast_1d(np.asarray(feeder_peak_mw, dtype=float))
    if peaks.ndim != 1 or peaks.size == 0 or not np.all(np.isfinite(peaks)) or np.any(peaks < 0):
        raise ScenarioError(f"feeder_peak_mw must be a non-empty 1-D array of finite values >= 0 MW, got {peaks!r}")
    problems = check_grid_types(g, scenario.library)
    if problems:
        raise ScenarioError("\n".join(problems))
    n_f = peaks.size
    total = float(peaks.sum())

    lib = scenario.library
    sub = lib.trafo
    if sub is not None:
        sn, vk, vkr, pfe, i0, tstep = sub.sn_mva, sub.vk_percent, sub.vkr_percent, sub.pfe_kw, sub.i0_percent, sub.tap_step_percent
    else:
        sn = _rating(g.trafo_sn_mva, total / g.n_trafos)
        vk, vkr, i0, tstep = g.trafo_vk_percent, g.trafo_vkr_percent, g.trafo_i0_percent, g.trafo_tap_step_percent
        pfe = g.trafo_pfe_kw if g.trafo_pfe_kw is not None else 0.0005 * sn * 1e3
    if total > MAX_OVERLOAD_FRAC * sn * g.n_trafos:
        raise ScenarioError(
            f"grid.trafo_sn_mva = {sn:g} MVA x {g.n_trafos} substation transformer(s) cannot carry the "
            f"peak site load of {total:.1f} MW; allowed: trafo_sn_mva >= {total / MAX_OVERLOAD_FRAC / g.n_trafos:.1f} MVA")

    ups_type = lib.ups
    lvt = lib.lv_trafo

    tan_phi = math.tan(math.acos(g.power_factor))
    # per-feeder MV/LV transformer units and UPS ratings (checked before anything is built)
    lv_unit_sn, lv_vk, lv_vkr, lv_pfe, lv_i0 = (np.empty(n_f) for _ in range(5))
    lv_par = np.ones(n_f, dtype=int)
    ups_sn, p_in = np.empty(n_f), np.empty(n_f)
    for f in range(n_f):
        if lvt is not None:
            lv_par[f] = max(1, math.ceil(SIZING_FACTOR * peaks[f] / lvt.sn_mva))
            lv_unit_sn[f], lv_vk[f], lv_vkr[f] = lvt.sn_mva, lvt.vk_percent, lvt.vkr_percent
            lv_pfe[f], lv_i0[f] = lvt.pfe_kw, lvt.i0_percent
        else:
            s_f = _rating(g.lv_trafo_sn_mva, peaks[f])
            lv_unit_sn[f], lv_vk[f], lv_vkr[f] = s_f, g.lv_trafo_vk_percent, g.lv_trafo_vkr_percent
            lv_pfe[f], lv_i0[f] = LV_PFE_FRAC * s_f * 1e3, LV_I0_PERCENT
        ups_sn[f] = _rating(g.ups_sn_mva, peaks[f])
        p_in[f] = float(ups_input_mw(peaks[f], ups_sn[f], scenario.ups.eff_ups_frac, ups_type.shares))
    lv_sn = lv_unit_sn * lv_par
    over = np.flatnonzero(peaks > MAX_OVERLOAD_FRAC * lv_sn)
    if over.size:
        f = int(over[0])
        raise ScenarioError(
            f"grid.lv_trafo_sn_mva = {lv_sn[f]:g} MVA cannot carry feeder {f}'s peak of {peaks[f]:.1f} MW; "
            f"allowed: lv_trafo_sn_mva >= {peaks[f] / MAX_OVERLOAD_FRAC:.1f} MVA")

    bess = scenario.bess
    bess_sn = None
    if bess.enabled:
        p_b = bess.p_rated_mw if not bess.extendable else (bess.max_p_rated_mw or bess.p_rated_mw)
        bess_sn = _rating(g.bess_trafo_sn_mva, p_b or 0.0)

    # Elements are created with pandapower's vectorized ``create_<elements>`` functions: they
    # build whole typed rows at once. The single-element ``create_<element>`` functions enlarge
    # a table cell by cell, which pandas >= 3 refuses for boolean columns (pandapower <= 3.1,
    # the releases that install beside pandas 3, do this); see _create_ext_grid.
    net = pp.create_empty_network(name=f"facility:{scenario.name}", sn_mva=1.0)
    b_src, b_pcc, b_mv = (int(b) for b in pp.create_buses(
        net, 3, [g.vn_kv, g.vn_kv, g.mv_kv], name=["source", "pcc", "mv"]))
    lv_buses = [int(b) for b in pp.create_buses(net, n_f, g.lv_kv, name=[f"lv_{f}" for f in range(n_f)])]
    _create_ext_grid(net, b_src, vm_pu=g.vm_pu, name="utility", s_sc_max_mva=g.sc_mva, rx_max=g.rx_ratio)
    z = 1.0 / math.sqrt(1.0 + g.rx_ratio ** 2)  # |Z| = 1 pu on sc_mva -> Z = vn^2 / sc_mva
    pp.create_impedances(net, [b_src], [b_pcc], rft_pu=g.rx_ratio * z, xft_pu=z, sn_mva=g.sc_mva,
                         rtf_pu=g.rx_ratio * z, xtf_pu=z, name=["utility source impedance"])
    pp.create_transformers_from_parameters(
        net, [b_pcc] * g.n_trafos, [b_mv] * g.n_trafos, sn_mva=sn, vn_hv_kv=g.vn_kv, vn_lv_kv=g.mv_kv,
        vkr_percent=vkr, vk_percent=vk, pfe_kw=pfe, i0_percent=i0, tap_side="hv", tap_neutral=0,
        tap_min=-20, tap_max=20, tap_step_percent=tstep, tap_pos=g.trafo_tap_pos, tap_changer_type="Ratio",
        name=[f"substation {i}" for i in range(g.n_trafos)])
    pp.create_transformers_from_parameters(
        net, [b_mv] * n_f, lv_buses, sn_mva=lv_unit_sn, vn_hv_kv=g.mv_kv, vn_lv_kv=g.lv_kv,
        vk_percent=lv_vk, vkr_percent=lv_vkr, pfe_kw=lv_pfe, i0_percent=lv_i0, parallel=lv_par,
        name=[f"feeder {f}" for f in range(n_f)])
    loads = pp.create_loads(net, lv_buses, p_mw=p_in, q_mvar=p_in * tan_phi,
                            name=[f"feeder {f} (UPS input)" for f in range(n_f)])

    b_bess, st = None, None
    if bess.enabled:
        b_bess = int(pp.create_buses(net, 1, g.lv_kv, name=["bess"])[0])
        pp.create_transformers_from_parameters(
            net, [b_mv], [b_bess], sn_mva=bess_sn, vn_hv_kv=g.mv_kv, vn_lv_kv=g.lv_kv,
            vk_percent=g.lv_trafo_vk_percent, vkr_percent=g.lv_trafo_vkr_percent,
            pfe_kw=LV_PFE_FRAC * bess_sn * 1e3, i0_percent=LV_I0_PERCENT, name=["bess"])
        # one storage element per unit (a hybrid BESS's units share the bus and transformer);
        # storage_index: the first, which carries the section's power in the reference run
        units = scenario.storage_units() if bess.technologies and not bess.extendable else {}
        units = {u: c for u, c in units.items() if u.startswith("bess.")} or {"bess": bess}
        st = int(pp.create_storages(net, [b_bess] * len(units), p_mw=0.0,
                                    max_e_mwh=[c.e_rated_mwh or 0.0 for c in units.values()],
                                    name=list(units))[0])

    return FacilityNetwork(
        net=net, enabled=g.enabled, n_feeders=n_f,
        bus={"source": b_src, "pcc": b_pcc, "mv": b_mv, "lv": lv_buses, "bess": b_bess},
        load_index=np.asarray(loads), storage_index=st, trafo_sn_mva=float(sn), n_trafos=g.n_trafos,
        lv_trafo_sn_mva=lv_sn, ups_sn_mva=ups_sn, bess_trafo_sn_mva=bess_sn,
        ups_eff_rated_frac=scenario.ups.eff_ups_frac, ups_shares=ups_type.shares, tan_phi=tan_phi,
        has_bess=bess.enabled, grid=g)


def export_network(net: FacilityNetwork, path) -> None:
    """Write the pandapower network as JSON (``pandapower.from_json`` reads it back).

    The loads hold each feeder's UPS input at its peak, the BESS is at 0 MW.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = _portable_pandas_modules(json.loads(pp.to_json(net.net)))
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")


#: Where pandapower's JSON reader looks up the pandas classes it decodes. pandas >= 3 reports
#: ``DataFrame.__module__ == "pandas"``, which pandapower <= 3.1 (the releases that install
#: beside pandas 3) does not know: its ``from_json`` then silently returns the tables as dicts.
_PANDAS_CLASS_MODULES = {"DataFrame": "pandas.core.frame", "Series": "pandas.core.series"}


def _portable_pandas_modules(obj):
    """Rewrite ``{"_module": "pandas", "_class": "DataFrame"}`` entries to the module name every
    pandapower release reads (recursively, in place); returns ``obj``."""
    if isinstance(obj, dict):
        if obj.get("_module") == "pandas" and obj.get("_class") in _PANDAS_CLASS_MODULES:
            obj["_module"] = _PANDAS_CLASS_MODULES[obj["_class"]]
        for v in obj.values():
            _portable_pandas_modules(v)
    elif isinstance(obj, list):
        for v in obj:
            _portable_pandas_modules(v)
    return obj


def _extract_matrices(fn: FacilityNetwork) -> NetworkMatrices:
    """Run pandapower once at zero load and read Ybus, Yf, Yt from its internal ppc."""
    net = copy.deepcopy(fn.net)
    net.load["p_mw"] = 0.0
    net.load["q_mvar"] = 0.0
    net.storage["p_mw"] = 0.0
    # numba=False: pandapower's numba kernels would be JIT-compiled in every process (~3 s)
    # (only Ybus is needed; a very stiff grid cannot meet 1e-10 MVA in round-off: retry looser)
    for tol in (1e-10, 1e-8, 1e-6):
        try:
            pp.runpp(net, tolerance_mva=tol, calculate_voltage_angles=True, numba=False)
            break
        except pp.LoadflowNotConverged:
            continue
    else:
        raise PowerFlowError("the zero-load power flow of the facility network did not converge: "
                             "its impedances are degenerate; check grid.sc_mva, grid.rx_ratio and "
                             "the transformer impedances (grid.trafo_vk_percent, "
                             "grid.lv_trafo_vk_percent and their vkr)") from None
    ppci = net._ppc["internal"]
    lookup = net._pd2ppc_lookups["bus"]
    n_bus = ppci["Ybus"].shape[0]
    # sanity: internal order = lookup order (no fused / out-of-service buses in this network)
    v_res = net.res_bus.vm_pu.to_numpy() * np.exp(1j * np.deg2rad(net.res_bus.va_degree.to_numpy()))
    if n_bus != len(net.bus) or not np.allclose(ppci["V"][lookup[net.bus.index.to_numpy()]], v_res, atol=1e-9):
        raise RuntimeError("unexpected pandapower internal bus order; cannot build the batch solver")
    pp_of = {int(k): int(b) for b, k in zip(net.bus.index, lookup[net.bus.index.to_numpy()])}
    ybus = ppci["Ybus"].toarray()
    yf, yt = ppci["Yf"].tocsr(), ppci["Yt"].tocsr()
    branch = ppci["branch"]
    slack = int(lookup[fn.bus["source"]])
    other = np.array([i for i in range(n_bus) if i != slack])
    pos = {int(b): k for k, b in enumerate(other)}
    v_s = complex(ppci["V"][slack])
    y_ll = ybus[np.ix_(other, other)]
    z_ll = np.linalg.inv(y_ll)
    v0 = -z_ll @ (ybus[other, slack] * v_s)

    tr0, tr1 = net._pd2ppc_lookups["branch"]["trafo"]
    names = net.trafo.name.to_numpy()
    group = np.array([0 if str(n).startswith("substation") else (2 if n == "bess" else 1) for n in names])
    rows = np.arange(tr0, tr1)
    br_f = branch[rows, 0].real.astype(int)
    br_t = branch[rows, 1].real.astype(int)
    br_y = np.column_stack([np.asarray(m[rows, c]).ravel() for m, c in ((yf, br_f), (yf, br_t), (yt, br_f), (yt, br_t))])
    br_sn = (net.trafo.sn_mva * net.trafo.parallel).to_numpy(dtype=float)
    lv_internal = {int(lookup[b]) for b in list(fn.bus["lv"]) + ([fn.bus["bess"]] if fn.bus["bess"] is not None else [])}
    i0 = net._pd2ppc_lookups["branch"]["impedance"][0]
    pf_, pt_ = int(branch[i0, 0].real), int(branch[i0, 1].real)
    return NetworkMatrices(
        v_slack=v_s, slack=slack, other=other, y_ll=y_ll, z_ll=z_ll, v0_l=v0,
        k_feeder=np.array([pos[int(lookup[b])] for b in fn.bus["lv"]]),
        k_bess=pos[int(lookup[fn.bus["bess"]])] if fn.bus["bess"] is not None else None,
        k_pcc=pos[int(lookup[fn.bus["pcc"]])],
        br_f=br_f, br_t=br_t, br_y=br_y, br_sn_mva=br_sn, br_group=group,
        pcc_f=pf_, pcc_t=pt_, pcc_ytf=complex(yt[i0, pf_]), pcc_ytt=complex(yt[i0, pt_]),
        bus_names=[str(net.bus.name.at[pp_of[int(i)]]) for i in other],
        bus_lv=np.array([int(i) in lv_internal for i in other], dtype=np.bool_))
