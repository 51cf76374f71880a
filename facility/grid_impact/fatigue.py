"""Shaft fatigue: rainflow counting (ASTM E1049-85, the ``rainflow`` package) of a torque
trace against an S-N curve, summed by Miner's rule.

S-N curve in torque amplitude T_a [pu]: N(T_a) = N_e (T_e / T_a)^m above the endurance
amplitude T_e, no damage at or below it. Damage D = Σ n_i / N(T_a,i) over the counted cycles
(half cycles count 0.5); the shaft's fatigue life is used up at D = 1. The torque is the
oscillating part (the response to the PCC power's deviation from its mean): no mean-torque
correction (Goodman, Gerber) is applied, so the curve must be one for the shaft's operating
mean torque. Torque amplitudes in pu of the shaft model's torque base (S_rated at synchronous
speed); :mod:`facility.grid_impact.metrics` counts the torsional band's torque.
"""

from __future__ import annotations

import numpy as np
import rainflow

__all__ = ["rainflow_cycles", "miner_damage", "NO_DAMAGE_LIFE_YEARS", "fatigue_metrics"]

#: Reported life when no cycle exceeds the endurance amplitude (metrics.json takes no inf). [yr]
NO_DAMAGE_LIFE_YEARS = 1e9
HOURS_PER_YEAR = 8760.0


def rainflow_cycles(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rainflow-counted cycles of a series: (amplitudes = range / 2, counts 1 or 0.5).

    A sinusoid of C whole periods gives C cycles of its amplitude (C − 1 full cycles and two
    half cycles at its ends, as ASTM E1049 counts the residue)."""
    rows = rainflow.count_cycles(np.asarray(x, dtype=float))
    if not rows:
        return np.zeros(0), np.zeros(0)
    r = np.asarray(rows, dtype=float)
    return r[:, 0] / 2.0, r[:, 1]


def miner_damage(amp: np.ndarray, count: np.ndarray, sn_exponent: float, t_endurance_pu: float,
                 n_endurance_cycles: float) -> float:
    """Miner's sum Σ n_i / N(T_a,i) of counted cycles (amplitudes in pu). [1]"""
    amp = np.asarray(amp, dtype=float)
    hit = amp > t_endurance_pu
    if not hit.any():
        return 0.0
    n_allow = n_endurance_cycles * (t_endurance_pu / amp[hit]) ** sn_exponent
    return float(np.sum(np.asarray(count)[hit] / n_allow))


def fatigue_metrics(torque_pu: np.ndarray, horizon_h: float, sn: dict) -> dict:
    """Damage of one torque trace over the horizon, per hour and per year, and the life.

    Rainflow counting is skipped when max |T| ≤ T_e: no cycle's amplitude can exceed max |T|
    then, so the damage is exactly 0.

    Returns
    -------
    dict
        damage (over the horizon), damage_per_hour, damage_per_year [1/h, 1/yr], life_years
        (1 / damage_per_year, :data:`NO_DAMAGE_LIFE_YEARS` when nothing is damaged), and
        max_cycle_amplitude_pu.
    """
    t = np.asarray(torque_pu, dtype=float)
    if t.size == 0 or np.max(np.abs(t)) <= sn["t_endurance_pu"]:
        d, a_max = 0.0, float(np.ptp(t) / 2.0) if t.size else 0.0
    else:
        amp, cnt = rainflow_cycles(t)
        d = miner_damage(amp, cnt, sn["sn_exponent"], sn["t_endurance_pu"], sn["n_endurance_cycles"])
        a_max = float(amp.max()) if amp.size else 0.0
    per_h = d / horizon_h
    per_y = per_h * HOURS_PER_YEAR
    return {"damage": d, "damage_per_hour": per_h, "damage_per_year": per_y,
            "life_years": min(NO_DAMAGE_LIFE_YEARS, 1.0 / per_y) if per_y > 0 else NO_DAMAGE_LIFE_YEARS,
            "max_cycle_amplitude_pu": a_max}
