"""Invariants every simulation must satisfy; call :func:`check_invariants` after each run in tests."""

from __future__ import annotations

import numpy as np

__all__ = ["check_invariants"]


def _leaves(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    else:
        yield path, obj


def check_invariants(res, *, balance_rel_tol: float = 1e-6) -> None:
    """Assert the contract invariants of a :class:`facility.run.orchestrator.Results`.

    * every metrics.json leaf is a finite number or a bool;
    * the timeseries has the contract columns and one row per step;
    * power balance at the PCC on every step: p_pcc = p_load + Σ storage + losses;
    * every storage SoC within [min_soc_frac, max_soc_frac], storage power within ±p_rated;
    * compliance and electrical_compliance have ``compliant``, the AND of their rows;
      ``compliance.margins`` agrees with the rows.
    """
    for path, v in _leaves(res.metrics):
        assert isinstance(v, (bool, int, float)) and not isinstance(v, complex), (path, v)
        if isinstance(v, float):
            assert np.isfinite(v), path
    ts = res.timeseries
    sc = res.scenario
    n = int(round(sc.time.horizon_s / sc.time.dt_s))
    assert len(ts) == n
    for col in ("t_s", "p_gpu_mw", "p_site_mw", "p_pcc_mw"):
        assert col in ts.columns, col
    np.testing.assert_allclose(np.diff(ts["t_s"].to_numpy()), sc.time.dt_s, rtol=1e-9, atol=1e-12)
    p_store = np.zeros(n)
    for name, cfg in sc.storage_units().items():     # a hybrid section: each unit
        assert f"p_{name}_mw" in ts.columns and f"soc_{name}_frac" in ts.columns, name
        soc = ts[f"soc_{name}_frac"].to_numpy()
        lo = cfg.min_soc_frac + getattr(cfg, "reserve_frac", 0.0)
        assert soc.min() >= lo - 1e-6 or soc.min() >= cfg.min_soc_frac - 1e-6, (name, soc.min())
        assert soc.max() <= cfg.max_soc_frac + 1e-6, (name, soc.max())
        p = ts[f"p_{name}_mw"].to_numpy()
        rated = res.metrics["storage"][name]["p_rated_mw"]
        assert np.abs(p).max() <= rated * (1 + 1e-6) + 1e-9, (name, np.abs(p).max(), rated)
        p_store += p
    scale = max(1.0, float(np.abs(ts["p_pcc_mw"]).max()))
    balance = ts["p_pcc_mw"] - (ts["p_load_mw"] + p_store + ts["losses_mw"])
    assert np.abs(balance).max() <= balance_rel_tol * scale, float(np.abs(balance).max())
    comp = res.metrics["compliance"]
    rows = [v for k, v in comp.items() if k not in ("compliant", "all_decided", "margins")]
    assert comp["compliant"] == all(rows)
    # each limit with a number has its margin = limit - value, >= 0 (to the tolerance) where it holds
    from facility.metrics import COMPLIANCE_ABS_TOL, margin_of

    for row, entry in comp["margins"].items():
        v, lim, margin, _ = margin_of(entry)
        assert margin == lim - v and (margin >= -COMPLIANCE_ABS_TOL) == comp[row], (row, entry)
    assert comp["all_decided"] == (not res.metrics.get("undecided"))
    assert not set(res.metrics.get("undecided", {})) & set(comp)
    el = res.metrics["electrical_compliance"]
    el_rows = [v for k, v in el.items() if k not in ("compliant", "violation_s")]
    assert el["compliant"] == all(el_rows)
    assert set(el["violation_s"]) == {k for k in el if k not in ("compliant", "violation_s")}
