"""What a run returns: :class:`Results`, the one object the writers (:mod:`facility.report`)
and the sweeps read.

It lives below both the co-simulation (:mod:`facility.cosim.design`, which builds it and calls the
writers) and the writers (which only read it), so neither imports the other for it.
``from facility.run.orchestrator import Results`` keeps working (re-exported). It imports
:mod:`facility.config.schema` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from facility.config.schema import Scenario

__all__ = ["Results"]


@dataclass
class Results:
    """Everything a run produces.

    Attributes
    ----------
    scenario : Scenario
        The resolved scenario that ran.
    timeseries : pandas.DataFrame
        One row per step: ``t_s`` [s], ``p_gpu_mw``, ``p_site_mw`` (raw site power: GPUs +
        non-GPU IT + cooling), ``p_load_mw`` (site power actually drawn, after GPU controls),
        ``p_raw_pcc_mw`` (PCC power with every mitigation off), ``p_pcc_mw`` (PCC power),
        ``q_pcc_mvar``, ``vm_min_pu``, ``vm_max_pu`` (all AC buses), ``vm_pcc_pu``,
        ``vm_min_mv_pu`` (PCC and MV buses), ``vm_min_lv_pu`` / ``vm_max_lv_pu`` (LV buses: UPS
        inputs, BESS), ``trafo_loading_percent`` (largest of any transformer),
        ``sub_trafo_loading_percent``, ``lv_trafo_loading_percent`` (worst feeder),
        ``bess_trafo_loading_percent``, ``ups_loading_percent`` (worst UPS), ``losses_mw``,
        per storage ``p_<name>_mw`` (+ = charging) and ``soc_<name>_frac``, and
        ``gpu_engaged`` (bool, co-design). [MW, MVAr, pu, %]
    metrics : dict
        The nested ``metrics.json`` (docs/contract.md §4): raw, pcc, energy, storage,
        electrical, training, compliance (the utility spec at the PCC), electrical_compliance
        (voltage bands and equipment loadings, :func:`facility.electrical.limits.electrical_compliance`)
        (+ gpu, events summaries).
    events : list of dict
        Time-stamped controller, co-design, monitor and GPU events (``t_s``, ``kind``, ``detail``).
    timings_s : dict
        Wall time of each stage. [s]
    sizing : dict or None
        ``sizing.json`` content when the run verifies a sizing.
    """

    scenario: Scenario
    timeseries: pd.DataFrame
    metrics: dict
    events: list = field(default_factory=list)
    timings_s: dict = field(default_factory=dict)
    sizing: dict | None = None

    @property
    def compliant(self) -> bool:
        """Whether the PCC power meets every limit that is set."""
        return bool(self.metrics["compliance"]["compliant"])
