"""Fuzz families of the newer features: each draws one feature into a bundled scenario, with
values a careless or hostile user would write (issue 52).

=============== ==========================================================================
family          what it sets
=============== ==========================================================================
hybrid          a storage section's candidate ``technologies`` (repeats, unknown names),
                extendable or with fixed ``unit_p_rated_mw`` / ``unit_e_rated_mwh`` tables
                whose values may be strings, booleans, negative or missing a unit
custom_tech     a technology file of its own (a bundled one edited: named like a bundled
                one or like its neighbour, a value out of range or of the wrong type, a key
                dropped or unknown, min above max duration), as ``technology`` or among
                ``technologies``
sags            ``[[grid_events]]``: rectangular sags (start in or past the horizon, short or
                long, shallow or deep) or a recorded voltage file (times not increasing,
                voltages out of range), with the UPS on, off or hybrid
failures        a job's ``failures``: a crash rate, declared crash times (unordered, past the
                horizon, strings), drop and restart times
mpc_grid        ``controller.kind = 'mpc'`` (or ``'none'``, which verifies a sized design
                under the MPC) with MPC steps, level steps, horizons and re-plan
                intervals that do or do not divide the spec's windows
trace_units     a job replaying an nvidia-smi log whose power cells mix W, kW, mW, MW, bare
                numbers, other units (V, %, ``mw``), ``[N/A]`` and text
trace_gaps      a job replaying a trace whose times hold gaps, stalls, repeats, steps back,
                jitter, or cells with a unit of time
=============== ==========================================================================

A family returns a :class:`tests.config.fuzzing.Mutation` whose ``paths`` are the keys it set
(a refusal must name one of them) and whose ``files`` (name -> text) :func:`check_mutation`
writes next to the mutated scenario (relative paths resolve against its folder).
"""

from __future__ import annotations

import datetime as dtm
from pathlib import Path
from typing import Any, Callable, Sequence

REPO = Path(__file__).resolve().parents[2]

FAMILIES = ("hybrid", "custom_tech", "sags", "failures", "mpc_grid", "trace_units", "trace_gaps")

Choose = Callable[[Sequence[Any]], Any]

_SECTIONS = ("rack_storage", "ups", "bess")
#: unit ratings: plausible ones three times as often as the hostile ones
_RATING = (0.5, 2.0, 10.0, 1.0, 5.0, 0.2) * 3 + (0, 1e-12, -1.0, "2.0", True, "2 MW", 1e9)
_ENERGY = (0.01, 0.5, 2.0, 0.1, 1.0, 4.0) * 3 + (0, -0.1, "0.5", False, 1e12)


def _techs() -> list[str]:
    from facility.config.technology import list_technologies

    return list_technologies()


def _n_jobs(raw: dict) -> int:
    jobs = raw.get("jobs")
    return len(jobs) if isinstance(jobs, list) else 0


def hybrid(raw: dict, choose: Choose):
    from tests.config.fuzzing import Mutation

    sec = choose(_SECTIONS)
    names = _techs() + ["no_such_tech"]
    k = choose((1, 2, 2, 3))
    if choose((True, True, True, False)):      # distinct known names, as a user means them
        techs = list(dict.fromkeys(choose(_techs()) for _ in range(k)))
    else:
        techs = [choose(names) for _ in range(k)]
    section: dict = {"enabled": True, "technologies": techs}
    if choose((True, False, False, False)):  # sizing in the run: a larger LP, kept to a quarter
        section.update(extendable=True, max_p_rated_mw=choose((5.0, 50.0, 0.1)),
                       max_e_rated_mwh=choose((1.0, 20.0, 0.05)))
    else:
        keys = list(dict.fromkeys(techs)) + ([choose(names)] if choose((False, False, True)) else [])
        section["unit_p_rated_mw"] = {t: choose(_RATING) for t in keys}
        section["unit_e_rated_mwh"] = {t: choose(_ENERGY) for t in keys if choose((True, True, True, False))}
    return Mutation("hybrid", ((sec,),), section, sizes=bool(section.get("extendable")))


def _tech_file(choose: Choose) -> tuple[dict, str]:
    """(table, text) of a technology file: a bundled one, edited."""
    import tomllib

    import tomli_w

    base = choose(_techs())
    data = tomllib.loads((REPO / "models" / "storage" / f"{base}.toml").read_text())
    edit = choose(("none",) * 6 + ("like_bundled", "value", "wrong_type", "drop", "unknown", "durations"))
    data["name"] = choose((base, "mine", "mine", "mine_b", "mine_c")) if edit != "like_bundled" else choose(_techs())
    numeric = [k for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if edit == "value" and numeric:
        data[choose(numeric)] = choose((-1.0, 0.0, 1e12, 1e-300, 0.3))
    elif edit == "wrong_type" and numeric:
        data[choose(numeric)] = choose(("1.0", True, [1.0], {"x": 1}))
    elif edit == "drop":
        data.pop(choose(sorted(data)), None)
    elif edit == "unknown":
        data["cost_usd_per_mw"] = 1.0
    elif edit == "durations":
        data["min_duration_h"], data["max_duration_h"] = 4.0, 0.5
    return data, tomli_w.dumps(data)


def custom_tech(raw: dict, choose: Choose):
    from tests.config.fuzzing import Mutation

    sec = choose(_SECTIONS)
    files, refs, tables = {}, [], []
    for i in range(choose((1, 1, 2))):
        data, text = _tech_file(choose)
        fname = f"fz_tech_{i}.toml"
        files[fname] = text
        refs.append(fname)
        tables.append((data.get("name", f"fz_tech_{i}"), data))
    if choose((True, False)):
        bundled = choose(_techs())
        import tomllib

        tables.append((bundled, tomllib.loads((REPO / "models" / "storage" / f"{bundled}.toml").read_text())))
        refs.append(bundled)

    def ratings(d: dict) -> tuple:
        p = choose((1.0, 5.0, 20.0))
        dur = d.get("min_duration_h", 1.0)
        dur = dur if isinstance(dur, (int, float)) and not isinstance(dur, bool) and dur > 0 else 1.0
        return p, p * float(dur)

    section: dict = {"enabled": True}
    if choose((True, False, False)):      # sizing in the run: a larger LP, kept to a third
        section.update(extendable=True, max_p_rated_mw=20.0, max_e_rated_mwh=10.0)
    if len(refs) == 1:
        section["technology"] = refs[0]
        if not section.get("extendable"):
            section["p_rated_mw"], section["e_rated_mwh"] = ratings(tables[0][1])
    else:
        section["technologies"] = refs
        if not section.get("extendable"):
            rr = {str(n): ratings(d) for n, d in tables}
            section["unit_p_rated_mw"] = {n: r[0] for n, r in rr.items()}
            section["unit_e_rated_mwh"] = {n: r[1] for n, r in rr.items()}
    return Mutation("custom_tech", ((sec,),), section, files=files, sizes=bool(section.get("extendable")))


def sags(raw: dict, choose: Choose):
    from tests.config.fuzzing import Mutation

    events, files = [], {}
    for i in range(choose((1, 1, 2))):
        start = choose((0.0, 1.0, 3.0, 5.0, 9.5) * 3 + (20.0, 1e6, -1.0))
        if choose((True, True, False)):
            events.append({"start_s": start,
                           "duration_s": choose((0.05, 0.2, 1.0, 2.0) * 3 + (5.0, 1e-4, 0.0, 4000.0)),
                           "depth_pu": choose((0.3, 0.5, 0.7, 0.9) * 3 + (0.0, 0.999, 1.0, -0.1))})
        else:
            shape = choose(("ok",) * 4 + ("back", "high", "text", "one"))
            rows = [(0.0, 1.0), (0.05, 0.6), (0.2, 0.5), (0.4, 0.9), (0.6, 1.0)]
            if shape == "back":
                rows[2] = (0.01, 0.5)
            elif shape == "high":
                rows[1] = (0.05, 7.0)
            elif shape == "one":
                rows = rows[:1]
            body = "".join(f"{t},{'abc' if shape == 'text' and j == 2 else v}\n" for j, (t, v) in enumerate(rows))
            files[f"fz_sag_{i}.csv"] = "t_s,vm_pu\n" + body
            events.append({"start_s": start, "trace_file": f"fz_sag_{i}.csv"})
    ups = choose(("as_is", "on", "on", "off", "hybrid"))
    paths: tuple = (("grid_events",),)
    if ups == "on":
        paths += (("ups",),)
        value_ups: Any = {"enabled": True, "p_rated_mw": choose((5.0, 50.0)), "e_rated_mwh": choose((0.5, 5.0))}
    elif ups == "off":
        paths += (("ups",),)
        value_ups = {"enabled": False}
    elif ups == "hybrid":
        paths += (("ups",),)
        value_ups = {"enabled": True, "technologies": ["supercap", "lfp_1h"],
                     "unit_p_rated_mw": {"supercap": 5.0, "lfp_1h": 5.0},
                     "unit_e_rated_mwh": {"supercap": 0.05, "lfp_1h": 5.0}}
    else:
        value_ups = None
    return Mutation("sags", paths, {"grid_events": events, "ups": value_ups}, files=files)


def failures(raw: dict, choose: Choose):
    from tests.config.fuzzing import Mutation

    n = _n_jobs(raw)
    if n == 0:
        return Mutation("failures", (("jobs",),), None)
    i = choose(range(n))
    f: dict = {}
    how = choose(("rate", "times", "both", "neither"))
    if how in ("rate", "both"):
        f["rate_per_gpu_h"] = choose((1e-5, 1e-3, 0.01, 1e-4) * 2 + (0.02, 0.0, -1e-5, "1e-5", True))
    if how in ("times", "both"):
        f["crash_times_s"] = choose(([2.0], [1.0, 5.0], [3.0], [0.5, 8.0]) * 2 + (
            [5.0, 1.0], [1e6], [-1.0], ["2"], [True], [], [2.0, 2.0], [0.0]))
    if choose((True, False)):
        f["crash_drop_s"] = choose((0.0, 0.5, 2.0, 61.0, -1.0))
    if choose((True, False)):
        f["restart_after_s"] = choose((0.0, 0.2, 3.0, 600.0, 1e5))
    return Mutation("failures", (("jobs", i, "failures"),), f)


def mpc_grid(raw: dict, choose: Choose):
    from tests.config.fuzzing import Mutation

    # 'none' with an extendable storage: run and size verify the design under the MPC
    ctrl: dict = {"kind": choose(("mpc", "mpc", "mpc", "none"))}
    for key, values in (("mpc_dt_s", (None, 0.05, 0.1, 0.5, 0.7, 1.0, 2.5, 20.0, 100.0)),
                        ("mpc_level_dt_s", (None, None, 0.5, 1.0, 1.5, 2.5, 5.0, 3600.0)),
                        ("replan_s", (None, 1.0, 5.0, 7.0)),
                        ("horizon_s", (None, None, 10.0, 30.0, 3.0))):
        v = choose(values)
        if v is not None:
            ctrl[key] = v
    spec = choose((None, {"window_s": 5.0, "max_window_swing_mw": 5.0},
                   {"max_ramp_mw_per_min": 20.0}, {"ramp_window_s": 2.0, "max_ramp_up_mw_per_s": 1.0}))
    paths: tuple = (("controller",),)
    if spec is not None:
        paths += (("spec",),)
    return Mutation("mpc_grid", paths, {"controller": ctrl, "spec": spec})


def _smi_rows(t_s, cells) -> str:
    t0 = dtm.datetime(2024, 5, 14, 10, 21, 33)
    out = ["timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    for t, c in zip(t_s, cells):
        out.append(f"{t0 + dtm.timedelta(seconds=float(t)):%Y/%m/%d %H:%M:%S.%f}"[:-3] + f", {c}, 100 %, 71000 MiB")
    return "\n".join(out) + "\n"


def _trace_job(raw: dict, choose: Choose, text: str, kind: str, extra: dict | None = None):
    from tests.config.fuzzing import Mutation

    n = _n_jobs(raw)
    i = choose(range(n)) if n else 0
    job = {"workload": "trace", "trace_file": f"fz_{kind}.csv", "trace_sensor": "instant"}
    job.update(extra or {})
    return Mutation(kind, (("jobs", i, "trace_file"), ("jobs", i, "workload")), job,
                    files={f"fz_{kind}.csv": text})


def trace_units(raw: dict, choose: Choose):
    cells_pool = ("312.45 W", "0.650 kW", "450000 mW", "0.0004 MW", "380", "380.0W", "1e3 W") * 2 + (
        "650 V", "50 %", "300 mw", "[N/A]", "abc", "", "-5 W", "0.3 kWh")
    main = choose(("312.45 W", "380", "0.4 kW"))
    odd = [choose(cells_pool) for _ in range(choose((1, 2, 5)))]
    n = 200
    cells = [main] * n
    for j, c in enumerate(odd):
        cells[choose(range(n))] = c
    t = [0.1 * k for k in range(n)]
    return _trace_job(raw, choose, _smi_rows(t, cells), "trace_units",
                      {"trace_drop_na": choose((False, True))})


def trace_gaps(raw: dict, choose: Choose):
    n = 300
    dt = choose((0.01, 0.1, 1.0))
    t = [dt * k for k in range(n)]
    shape = choose(("gap", "stall", "repeat", "back", "jitter", "units", "two_gaps", "gap", "jitter"))
    k = choose(range(5, n - 5))
    if shape in ("gap", "two_gaps"):
        g = choose((1.0, 60.0, 3600.0))
        t = t[:k] + [x + g for x in t[k:]]
        if shape == "two_gaps":
            t = t[:k + 3] + [x + g for x in t[k + 3:]]
    elif shape == "stall":
        t = t[:k] + [t[k - 1] + 1e-4 * j for j in range(1, 4)] + t[k + 3:]
    elif shape == "repeat":
        t[k] = t[k - 1]
    elif shape == "back":
        t[k] = t[k - 1] - dt
    elif shape == "jitter":
        t = [x + (0.3 * dt if j % 2 else 0.0) for j, x in enumerate(t)]
    if shape == "units" or choose((False, False, True)):
        unit = choose(("s", "ms", "min", "s", "ms", "kg"))
        f = {"s": 1.0, "ms": 1e3, "min": 1 / 60, "kg": 1.0}[unit]
        body = "".join(f"{x * f:.6g} {unit},{300 + 50 * (j % 2)}\n" for j, x in enumerate(t))
        text = "t_s,p_gpu_w\n" + body
    else:
        text = "t_s,p_gpu_w\n" + "".join(f"{x:.6f},{300 + 50 * (j % 2)}\n" for j, x in enumerate(t))
    return _trace_job(raw, choose, text, "trace_gaps")


DRAW = {"hybrid": hybrid, "custom_tech": custom_tech, "sags": sags, "failures": failures,
        "mpc_grid": mpc_grid, "trace_units": trace_units, "trace_gaps": trace_gaps}


def apply_family(out: dict, m) -> None:
    """Set what a family mutation draws into the (copied) raw scenario ``out``."""
    if m.value is None:
        return
    if m.kind in ("hybrid", "custom_tech"):
        sec = m.paths[0][0]
        out[sec] = m.value
    elif m.kind == "sags":
        out["grid_events"] = m.value["grid_events"]
        if m.value["ups"] is not None:
            out["ups"] = m.value["ups"]
    elif m.kind == "failures":
        _, i, _ = m.paths[0]
        if isinstance(out.get("jobs"), list) and i < len(out["jobs"]) and isinstance(out["jobs"][i], dict):
            out["jobs"][i]["failures"] = m.value
    elif m.kind == "mpc_grid":
        ctrl = out.get("controller") if isinstance(out.get("controller"), dict) else {}
        out["controller"] = {**ctrl, **m.value["controller"]}
        if m.value["spec"] is not None:
            spec = out.get("spec")
            spec = {"base": spec} if isinstance(spec, str) else (spec if isinstance(spec, dict) else {})
            out["spec"] = {**spec, **m.value["spec"]}
    elif m.kind in ("trace_units", "trace_gaps"):
        _, i, _ = m.paths[0]
        jobs = out.get("jobs")
        if isinstance(jobs, list) and i < len(jobs) and isinstance(jobs[i], dict):
            job = jobs[i]
            for k in ("archetype", "period_s", "compute_frac", "p_low_frac", "p_high_frac"):
                job.pop(k, None)
            job.update(m.value)
