"""The checks of a scenario that need the grid-side models: the ``[grid_impact]`` section's
shaft and mode set, the torsional band's edge, and the warning for torsional modes the time
step cannot resolve.

:func:`check_grid_impact` returns a list of problems (strings naming key, unit and range), like
the checks of :mod:`facility.config.checks`; :func:`facility.scenario.resolve` runs it with the
others, on the shaft and mode set it loaded once (``lib``: the scenario's
:class:`~facility.config.resolved.Library` with its domain entries; one that could not be
loaded is None, its message in ``lib.unresolved``).

May import: :mod:`facility.config`, :mod:`facility.errors` and :mod:`facility.grid_impact`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.files import is_explicit_path
from facility.errors import ScenarioError
from facility.grid_impact.connection import connect_shaft, torsional_band_min_hz
from facility.grid_impact.library import list_mode_sets, list_shafts

if TYPE_CHECKING:
    from facility.config.resolved import Library
    from facility.config.schema import Scenario

__all__ = ["check_grid_impact", "grid_impact_warnings"]


def check_grid_impact(s: "Scenario", lib: "Library") -> list[str]:
    """``[grid_impact]``: the shaft is a bundled model, the mode set a bundled one or a readable
    mode set file (validate names them), the torsional band's edge lies between the connected
    shaft's electromechanical and lowest torsional mode, a governor has the shaft's turbine
    shares."""
    gi = s.grid_impact
    if not gi.enabled:
        return []
    out = []
    if lib.shaft is None:
        out.append(f"grid_impact.shaft_model = {gi.shaft_model!r} is not a bundled shaft model "
                   f"(models/grid_impact/): {', '.join(list_shafts())}")
    if lib.mode_set is None:
        if is_explicit_path(gi.mode_set):
            out.append(lib.unresolved.get("mode_set", f"grid_impact.mode_set = {gi.mode_set!r}: "
                                                      "cannot read it as a mode set file"))
        else:
            out.append(f"grid_impact.mode_set = {gi.mode_set!r} is not a bundled mode set "
                       f"(models/grid_impact/): {', '.join(list_mode_sets())} (or the path of a mode "
                       f"set file, e.g. one facility grid-modes wrote)")
    if not out:
        try:
            torsional_band_min_hz(gi, connect_shaft(gi, lib.shaft, lib.mode_set))
        except ScenarioError as e:
            out.append(str(e))
    return out


def grid_impact_warnings(s: "Scenario") -> list[str]:
    """Torsional modes above the Nyquist frequency of ``time.dt_s`` (their response is not
    resolved: the metrics see only the modes below it). ``s``: a resolved scenario."""
    gi = s.grid_impact
    if not gi.enabled or check_grid_impact(s, s.library):
        return []
    nyq = 0.5 / s.time.dt_s
    above = [f for f in connect_shaft(gi, s.library.shaft, s.library.mode_set).torsional_modes_hz() if f >= nyq]
    if not above:
        return []
    return [f"grid_impact: torsional mode(s) at {', '.join(f'{f:.2f}' for f in above)} Hz lie above the "
            f"Nyquist frequency {nyq:g} Hz of time.dt_s = {s.time.dt_s:g} s: not resolved, their torque "
            f"is missing from the grid_impact metrics (use dt_s <= {0.5 / (1.05 * max(above)):.3g} s)"]
