"""An ANDES case set up for the site: constant-power loads, a load at the PCC bus whose power
is the input, the case's own disturbances switched off (``pip install 'facility[grid]'``).

ANDES (https://andes.readthedocs.io) is the reference dynamics engine: its power flow gives
the operating point, its Jacobians the linearization (:mod:`.linear`), its time-domain
simulation the replay (:mod:`.replay`). Loads are constant power (ANDES's default converts
them to constant impedance after the power flow; a constant-power load is what a
datacenter's converter-interfaced load is to the grid at these frequencies, and what the
time-domain input, a change of the load's power, needs).
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from facility.errors import ScenarioError
from facility.grid_impact.dynamics.linear import LinearDae

__all__ = ["require_andes", "AndesCase", "load_case", "andes_version"]

#: PQ load conversion weights for the time domain: constant power, P and Q
CONSTANT_POWER = dict(p2p=1.0, p2i=0.0, p2z=0.0, q2q=1.0, q2i=0.0, q2z=0.0)
#: ANDES models that disturb a case on their own (line trips, faults, set-point changes)
DISTURBANCES = ("Toggle", "Fault", "Alter")
#: name of the load the input drives
PCC_LOAD = "facility_pcc"


def require_andes():
    """The ``andes`` module, or a ScenarioError telling how to install it."""
    try:
        import andes
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ScenarioError("the grid dynamics commands need ANDES: pip install 'facility[grid]' "
                            "(or pip install andes)") from e
    return andes


def andes_version() -> str:
    """The installed ANDES's version string."""
    return str(require_andes().__version__)


def _case_path(case: str) -> Path:
    andes = require_andes()
    p = Path(case)
    if p.is_file():
        return p
    try:
        return Path(andes.get_case(case))
    except Exception as e:  # andes raises FileNotFoundError (or ValueError) for an unknown case
        raise ScenarioError(f"case {case!r} is neither a file nor a case bundled with ANDES "
                            f"(e.g. kundur/kundur_full.xlsx, ieee39/ieee39_full.xlsx): {e}") from None


@dataclass
class AndesCase:
    """A set-up ANDES system with the PCC load and the observed generator located.

    Attributes
    ----------
    system : andes.System
    case : str
        As given (bundled name or path).
    bus : int or str
        The PCC bus's idx.
    generator : str
        The observed generator's idx (as a string) and ``model``, its ANDES model name.
    s_base_mva : float
        The case's power base. [MVA]
    f0_hz : float
        Nominal frequency. [Hz]
    """

    system: object
    case: str
    bus: object
    generator: str
    model: str
    s_base_mva: float
    f0_hz: float

    @property
    def load_uid(self) -> int:
        """Row of the PCC load in the PQ model."""
        return self.system.PQ.idx2uid(PCC_LOAD)

    @property
    def gen_uid(self) -> int:
        m = getattr(self.system, self.model)
        return m.idx2uid(self._gen_idx)

    @property
    def _gen_idx(self):
        m = getattr(self.system, self.model)
        return next(i for i in m.idx.v if str(i) == self.generator)

    def generator_rating(self) -> tuple[float, float]:
        """(H [s], S [MVA]) of the observed generator: H on its own base Sn (ANDES's input
        M = 2H; ``M.v`` is on the system base)."""
        m = getattr(self.system, self.model)
        u = self.gen_uid
        return float(m.M.vin[u]) / 2.0, float(m.Sn.v[u])


def _find_generator(ss, observe: str):
    for name in ("GENROU", "GENCLS"):
        m = getattr(ss, name, None)
        if m is None or m.n == 0:
            continue
        for i in m.idx.v:
            if str(i) == str(observe):
                return name
    gens = [str(i) for name in ("GENROU", "GENCLS") if getattr(ss, name, None) is not None
            for i in getattr(ss, name).idx.v]
    raise ScenarioError(f"--observe {observe!r}: no synchronous generator (GENROU, GENCLS) with that idx "
                        f"in the case; its generators: {', '.join(gens)}")


@contextlib.contextmanager
def _quiet():
    """ANDES logs and prints its progress; keep the CLI's output ours."""
    andes = require_andes()
    andes.config_logger(stream_level=logging.ERROR)
    lg = logging.getLogger("andes")
    level, prop = lg.level, lg.propagate
    lg.setLevel(logging.ERROR)
    lg.propagate = False
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        lg.setLevel(level)
        lg.propagate = prop


def load_case(case: str, bus, observe: str) -> AndesCase:
    """Load an ANDES case, add the PCC load (0 MW, constant power) at ``bus``, switch the case's
    own disturbances off, solve the power flow and initialize the time domain.

    Parameters
    ----------
    case : str
        A case bundled with ANDES (``andes.get_case``, e.g. ``kundur/kundur_full.xlsx``) or a path.
    bus : int or str
        The PCC bus's idx in the case.
    observe : str
        The observed generator's idx.

    Returns
    -------
    AndesCase
    """
    andes = require_andes()
    path = _case_path(case)
    with _quiet():
        ss = andes.load(str(path), setup=False, no_output=True, default_config=True)
        buses = [str(b) for b in ss.Bus.idx.v]
        if str(bus) not in buses:
            raise ScenarioError(f"--bus {bus!r} is not a bus of {case}; its buses: {', '.join(buses[:60])}"
                                + (" ..." if len(buses) > 60 else ""))
        bus_idx = next(b for b in ss.Bus.idx.v if str(b) == str(bus))
        model = _find_generator(ss, observe)
        ss.add("PQ", dict(idx=PCC_LOAD, name=PCC_LOAD, bus=bus_idx, p0=0.0, q0=0.0))
        for k, v in CONSTANT_POWER.items():
            setattr(ss.PQ.config, k, v)
        ss.setup()
        for name in DISTURBANCES:
            m = getattr(ss, name, None)
            if m is not None and m.n:
                m.u.v[:] = 0.0
        ss.PFlow.run()
        if not ss.PFlow.converged:
            raise ScenarioError(f"the power flow of {case} did not converge")
        ss.TDS.config.no_tqdm = 1
        ss.TDS.init()
    return AndesCase(ss, case, bus_idx, str(observe), model, float(ss.config.mva), float(ss.config.freq))


def pcc_power_mw(c: AndesCase) -> float:
    """The PCC load's power now. [MW]"""
    return float(c.system.PQ.Ppf.v[c.load_uid]) * c.s_base_mva


def set_pcc_power_mw(c: AndesCase, p_mw: float) -> None:
    """Set the PCC load's (constant) power. [MW]"""
    c.system.PQ.Ppf.v[c.load_uid] = p_mw / c.s_base_mva


def output_addresses(c: AndesCase) -> dict:
    """DAE addresses of the outputs: generator Pe (algebraic) and ω (state), PCC bus angle
    (algebraic)."""
    ss = c.system
    gen = getattr(ss, c.model)
    u = c.gen_uid
    return {"pe": int(gen.Pe.a[u]), "omega": int(gen.omega.a[u]),
            "angle": int(ss.Bus.a.a[ss.Bus.idx2uid(c.bus)])}


def bus_names(c: AndesCase) -> dict:
    """idx → name of every bus (for the file's record)."""
    ss = c.system
    return {str(i): str(n) for i, n in zip(ss.Bus.idx.v, ss.Bus.name.v)}


def _sparse(m):
    return sp.csr_matrix((np.array(m.V).ravel(), (np.array(m.I).ravel(), np.array(m.J).ravel())),
                         shape=m.size)


def linearize(c: AndesCase, eps_mw: float = 1.0):
    """The linearized DAE at the operating point, input the PCC load's power [MW], outputs
    the observed generator's Pe [MW] and ω [pu] and the PCC bus angle [rad].

    The Jacobians are ANDES's own (analytic, after its time-domain initialization and one step,
    as its eigenvalue routine takes them); the input columns are the change of the DAE
    residuals when the PCC load's power moves by ``eps_mw`` (exact to rounding: the residuals
    are linear in a constant-power load's P).

    Returns
    -------
    LinearDae
    """
    ss = c.system
    dae = ss.dae
    models = ss.exist.pflow_tds
    with _quiet():
        if not ss.EIG._pre_check():
            raise ScenarioError(f"{c.case}: ANDES could not initialize the time domain")
        ss.TDS.fg_update(models)
    f0, g0 = dae.f.copy(), dae.g.copy()
    p0 = pcc_power_mw(c)
    set_pcc_power_mw(c, p0 + eps_mw)
    with _quiet():
        ss.TDS.fg_update(models)
    bf, bg = (dae.f - f0) / eps_mw, (dae.g - g0) / eps_mw
    set_pcc_power_mw(c, p0)
    with _quiet():
        ss.TDS.fg_update(models)
    n, m = dae.n, dae.m
    adr = output_addresses(c)
    cx, cy = np.zeros((3, n)), np.zeros((3, m))
    cy[0, adr["pe"]] = c.s_base_mva        # generator Pe [MW] (system base pu → MW)
    cx[1, adr["omega"]] = 1.0              # speed [pu]
    cy[2, adr["angle"]] = 1.0              # bus angle [rad]
    return LinearDae(_sparse(dae.fx), _sparse(dae.fy), _sparse(dae.gx), _sparse(dae.gy),
                     np.array(dae.Tf, dtype=float), bf[:, None], bg[:, None], cx, cy,
                     list(dae.x_name))
