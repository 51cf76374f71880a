"""Command line: ``python -m facility {validate,trace,run,size,sweep,export-net,models,record,
grid-modes,grid-replay}``.

Exit codes: 0 ok, 2 bad input (also a full disk or a memory estimate over the budget), 3
infeasible, 4 power flow did not converge, 5 a sweep finished with failed cases, 1 anything
else; 0 too when the reader of stdout went away (``| head -1``: silently).
Every error is one clear message on stderr, never a traceback (``--debug`` shows it); user
values it echoes are cut to a bounded length (:func:`facility.errors.bounded`).
"""

from __future__ import annotations

import argparse
import functools
import io
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from facility import __version__
from facility.cli_logging import setup_logging
from facility.errors import (EXIT_BAD_INPUT, EXIT_ERROR, EXIT_OK, FacilityError, GapWarning, ScenarioError,
                             bounded, exit_code_for, is_no_space)

__all__ = ["main", "build_parser"]

log = logging.getLogger("facility")


def _add_common(p: argparse.ArgumentParser, out: str | None = None) -> None:
    p.add_argument("scenario", type=Path, help="scenario TOML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. --set bess.e_rated_mwh=20 or --set jobs.llm.n_gpus=8000 "
                        "(repeatable)")
    p.add_argument("--allow-implausible", action="store_true",
                   help="run a storage rating implausible by ~1000x for the site (a kW value in a MW "
                        "field) as given, with a warning, instead of refusing it (exit 2)")
    p.add_argument("--max-memory-gib", type=_positive_gib, default=None, metavar="GIB",
                   help="refuse (exit 2) a scenario whose estimated peak memory exceeds this "
                        "(default: 80%% of the memory this process may use: machine, cgroups, ulimit)")
    if out == "dir":
        p.add_argument("--out", type=Path, required=True,
                       help="output folder: a new or empty folder, or an earlier facility result with --force "
                            "(replaced atomically); a folder holding anything else is refused")
        p.add_argument("--force", action="store_true", help="replace an earlier facility result in --out")
    elif out == "file":
        p.add_argument("--out", type=Path, required=True, help="output file (an existing one needs --force)")
        p.add_argument("--force", action="store_true", help="replace an existing --out file")


def _positive_gib(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GiB") from None
    if not (v > 0 and v < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number of GiB")
    return v


def _load(args):
    """Load and validate the scenario, then check its resource estimate against the budget
    (``--max-memory-gib``); returns ``(scenario, estimate)``."""
    from facility.scenario import load_scenario
    from facility.scenario.resources import check_resources

    s = load_scenario(args.scenario, args.overrides)
    from facility.config.checks import raise_problems
    from facility.config.plausibility import implausible_errors

    bad = implausible_errors(s)
    if not getattr(args, "allow_implausible", False):
        raise_problems(bad, str(args.scenario))
    est = check_resources(s, getattr(args, "max_memory_gib", None), source=str(args.scenario))
    if args.command in ("run", "size"):
        from facility.scenario.resources import check_disk_space

        check_disk_space(est, args.out)
    return s, est


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``facility`` command."""
    parser = argparse.ArgumentParser(
        prog="facility",
        description="Co-simulator for the power of AI-training datacenters: load generator, "
                    "pandapower network, Pyomo/HiGHS storage sizing and closed-loop control.")
    parser.add_argument("--version", action="version", version=f"facility {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="schema + physics checks only")
    _add_common(p)

    p = sub.add_parser("trace", help="load generator only: parquet/csv of t_s, p_*_mw")
    _add_common(p, "file")

    p = sub.add_parser("run", help="full co-simulation")
    _add_common(p, "dir")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = sub.add_parser("size", help="optimal storage sizing + dispatch, then a verification run")
    _add_common(p, "dir")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = sub.add_parser("sweep", help="many cases over --set value lists, locally or on Dask")
    p.add_argument("scenario", type=Path, help="scenario TOML file")
    try:
        from facility.sweep import add_sweep_arguments

        add_sweep_arguments(p)
    except ImportError:  # pragma: no cover - sweep package missing
        p.add_argument("rest", nargs=argparse.REMAINDER)

    p = sub.add_parser("export-net", help="write the pandapower network of a scenario as JSON")
    _add_common(p, "file")

    sub.add_parser("models", help="list the GPU models, utility specs and storage technologies in models/")

    p = sub.add_parser("record", help="record every GPU's power through NVML while a command runs "
                                      "(a trace file the trace workload reads)",
                       usage="facility record --out FILE [--interval-ms MS] -- COMMAND ...")
    p.add_argument("--out", type=Path, required=True, help="CSV file to write")
    p.add_argument("--interval-ms", type=float, default=20.0, help="poll interval [ms] (default 20)")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command to run, after --")
    from facility.cli_grid import add_grid_parsers

    add_grid_parsers(sub)
    for sp in sub.choices.values():
        # --debug also after the command (`facility run --debug …`), as the error message says;
        # SUPPRESS keeps a --debug given before the command
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of unexpected errors")
    return parser


def _cmd_validate(args) -> int:
    s, est = _load(args)
    n = int(round(s.time.horizon_s / s.time.dt_s))
    limits = [k for k, v in s.spec.model_dump().items()
              if k.startswith("max_") and v is not None] + [f"band_{b.name}" for b in s.spec.bands]
    print(f"ok: {args.scenario} — {s.name}: {len(s.jobs)} job(s), {sum(j.n_gpus for j in s.jobs):,} GPUs, "
          f"{n:,} steps of {s.time.dt_s:g} s; storage: {', '.join(s.storages()) or 'none'}; "
          f"controller: {s.controller.kind}; limits: {', '.join(limits) or 'none'}")
    print(f"   {est.summary()}")
    from facility.scenario.checks import scenario_warnings, trace_summaries

    for line in trace_summaries(s):
        print(f"  {line}")
    for w in scenario_warnings(s):
        log.warning("%s", w)
    return EXIT_OK


def _cmd_trace(args) -> int:
    from facility.report.staging import atomic_file
    from facility.report.outdir import check_out_file

    out: Path = args.out
    suffixes = (".csv", ".parquet", ".pq")
    full = check_out_file(out, force=args.force, suffixes=suffixes)
    from facility.run.orchestrator import generate_trace   # after the refusals: it loads the models

    s, _ = _load(args)
    df = generate_trace(s)
    with atomic_file(full, force=args.force, command="trace", suffixes=suffixes) as tmp:
        if out.suffix.lower() == ".csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False)
    print(f"wrote {out} ({len(df):,} steps, columns: {', '.join(df.columns)})")
    return EXIT_OK


def _summary(res, out: Path, wall_s: float) -> str:
    m = res.metrics
    from facility.metrics import verdict_text

    comp = m["compliance"]
    line = (f"{res.scenario.name}: pcc swing {m['pcc']['max_window_swing_mw']:.3g} MW/{res.scenario.spec.window_s:g} s "
            f"(raw {m['raw']['max_window_swing_mw']:.3g}), energy overhead {100 * m['energy']['energy_overhead_frac']:.2f} %, "
            f"slowdown {100 * m['training']['slowdown_frac']:.2f} %; compliant: "
            f"{verdict_text(comp, m.get('undecided', {}))}")
    el = m.get("electrical_compliance", {})
    if not el.get("compliant", True):
        from facility.electrical.limits import violation_lines

        line += ("\nwarning: electrical limits violated (see events.json, kind electrical_limit): "
                 + "; ".join(violation_lines(m, res.scenario.grid)))
    from facility.metrics import margins_text

    margins = margins_text(comp)
    if margins:
        line += f"\nlimit margins (value of limit, margin = limit - value): {margins}"
    return f"{line}\nwrote {out}/ in {wall_s:.1f} s"


def _cmd_run(args) -> int:
    from facility.report.outdir import check_out_dir
    from facility.run.orchestrator import run_scenario

    t0 = time.perf_counter()
    check_out_dir(args.out, force=args.force, kinds=("run", "size"))
    with _claim(args):
        s, _ = _load(args)
        res = run_scenario(s, out_dir=args.out, progress=not args.no_progress and sys.stderr.isatty(),
                           plots=not args.no_plots)
    print(_summary(res, args.out, time.perf_counter() - t0))
    return EXIT_OK


def _claim(args):
    """Hold ``--out`` for this command until its result is in place (a second command on the
    same ``--out`` exits 2; :mod:`facility.report.claim`)."""
    from facility.report.claim import claim_out

    return claim_out(args.out, force=args.force, kinds=("run", "size"),
                     command=f"facility {args.command} {args.scenario}")


def _nonneg(x: float) -> float:
    """A rating for display: solver round-off below zero (and -0.0) shown as 0."""
    return float(x) if x > 0 else 0.0


def _cmd_size(args) -> int:
    from facility.report.outdir import check_out_dir
    from facility.sizing.pipeline import size_scenario

    t0 = time.perf_counter()
    check_out_dir(args.out, force=args.force, kinds=("run", "size"))
    with _claim(args):
        s, _ = _load(args)
        if not any(st.extendable for st in s.storages().values()) and s.optimize.levers == ["storage"]:
            raise ScenarioError(f"{args.scenario}: nothing to size: set extendable = true on rack_storage, "
                                f"ups or bess, or name GPU levers in optimize.levers")
        sol, res = size_scenario(s, out_dir=args.out, progress=not args.no_progress and sys.stderr.isatty(),
                                 plots=not args.no_plots)
    from facility.report.design import design_line

    z = res.sizing or {}
    print(design_line(res))      # lead with the design: technology, P, E, duration, cost, who verified it
    how = {"periodic": f"periodic reduction, period {sol.info.period_steps} steps",
           "follower": "fallback plan: PCC on a moving average of the load",
           "interior": "interior-point restriction, bracketed by a Lagrangian bound"}.get(sol.info.method, "full LP")
    if sol.info.step_factor > 1:
        how += f", on steps {sol.info.step_factor}x dt_s (exact)"
    fs = z.get("foresight", {})
    fs_sizes = ", ".join(f"{n} {_nonneg(d['p_rated_mw_opt']):.4g} MW / {_nonneg(d['e_rated_mwh_opt']):.4g} MWh"
                         for n, d in fs.items() if isinstance(d, dict))
    loss = z.get("losses", {})
    loss_txt = (f"; network losses inside the LP: {loss['rounds']} round(s), PCC within "
                f"{loss['residuals_mw'][-1]:.2g} MW of the power flow's" if loss else "")
    print(f"foresight design (LP): {fs_sizes or 'no storage'}, {fs.get('objective_usd_per_year', 0.0):,.0f} USD/yr "
          f"({how}; proven within {sol.info.gap_frac:.2g} of the optimum{loss_txt})")
    cand = sol.info.candidates
    if cand and cand.get("pruned"):
        print(f"candidates: {', '.join(cand['pruned'])} pruned before the hybrid's solve (cannot lower "
              f"the cost below {cand['first']} alone, by a bound; sizing.json candidates)")
    if z.get("verified_by", "optimal") != "optimal":
        from facility.report.design import growth_text

        rz = z.get("resize", {})
        print(f"no foresight costs {z.get('cost_of_no_foresight_usd_per_year', 0.0):,.0f} USD/yr: "
              f"controller.kind = {z['verified_by']!r} needs "
              f"{growth_text(rz.get('p_scale') or {}, rz.get('e_scale') or {}) or 'the foresight ratings'} "
              f"({rz.get('runs', 0)} verification run(s))")
    if sol.info.status == "gap":
        from facility.optimize.solvers.solve import is_time_limit

        # what helps: a longer limit only where the LP is small enough to finish soon
        # (facility.optimize.certificates.fallback.time_limit_advice)
        from facility.optimize.certificates.fallback import SIMPLEX_QUICK_STEPS

        n = sol.p_pcc_mw.size // max(sol.info.step_factor, 1)
        hint = ("; raise optimize.time_limit_s" if sol.info.method != "interior" and n <= SIMPLEX_QUICK_STEPS else
                "; a larger time.dt_s or a shorter time.horizon_s helps more than a longer "
                "optimize.time_limit_s")
        if sol.info.gap_reason:
            from facility.optimize.driver.api import gap_reason_text

            why = gap_reason_text(sol.info.gap_reason, s.optimize,
                                  sol.p_pcc_mw.size // max(sol.info.step_factor, 1))
            hint = hint if sol.info.gap_reason == "time" else ""
        elif is_time_limit(sol.info.termination):
            why = (f"the solver stopped at optimize.time_limit_s = {s.optimize.time_limit_s:g} s before "
                   f"proving an optimum")
        else:
            why = "the LP's plan could not be made realizable"
        print(f"warning: {why}; the plan is verified but only proven within gap_frac = "
              f"{sol.info.gap_frac:.3g} of the optimum (lower bound {sol.info.lower_bound_usd:,.0f} USD, "
              f"optimize.max_gap_frac = {s.optimize.max_gap_frac:g}){hint}",
              file=sys.stderr)
    cost = z.get("cost")
    if cost is not None and sol.levers:
        jobs = "; ".join(
            f"{j}: floor {_frac(d['floor_frac'])}, cap {_frac(d['cap_frac'])}, "
            f"burn {d['burned_mwh_per_year']:,.0f} MWh/yr, slowdown {100 * d['slowdown_frac']:.2g} %"
            for j, d in z["mix"]["jobs"].items())
        print(f"GPU levers: {jobs}")
    if cost is not None:
        print(f"cost {cost['total_usd_per_year']:,.0f} USD/yr (storage capex "
              f"{cost['storage_capex_usd_per_year']:,.0f}, fixed O&M {cost.get('fixed_om_usd_per_year', 0.0):,.0f}, losses {cost['loss_energy_usd_per_year']:,.0f}, "
              f"burn {cost['burn_energy_usd_per_year']:,.0f}, degradation {cost['degradation_usd_per_year']:,.0f}, "
              f"slowdown {cost['slowdown_usd_per_year']:,.0f})")
    hist = z.get("limit_margin_history", [])
    if len(hist) > 1:
        print(f"warning: last resort: verified after {len(hist)} size-and-verify rounds with a margin on the "
              f"limits (optimize.limit_margin_frac {' -> '.join(f'{m:.3g}' for m in hist)}): the converged "
              f"loss-aware plan still broke a limit through the network", file=sys.stderr)
    print(_summary(res, args.out, time.perf_counter() - t0))
    return EXIT_OK


def _frac(v) -> str:
    return "-" if v is None else f"{v:.3g} x TDP"


def _cmd_sweep(args) -> int:
    from facility.sweep import main_sweep

    return int(main_sweep(args))


def _cmd_export_net(args) -> int:
    from facility.report.staging import atomic_file
    from facility.report.outdir import check_out_file

    full = check_out_file(args.out, force=args.force, suffixes=(".json",))  # before pandapower loads (seconds)
    import numpy as np

    from facility.electrical.network import build_network, export_network
    from facility.workload import default_n_feeders, generate_load, site_power

    s, _ = _load(args)
    profile = generate_load(s)
    site = site_power(profile, profile.p_gpu_w, s.site, default_n_feeders(s))
    net = build_network(s, np.asarray(site.p_feeder_mw.max(axis=0)))
    with atomic_file(full, force=args.force, command="export-net", suffixes=(".json",)) as tmp:
        export_network(net, tmp)
    print(f"wrote {args.out}")
    return EXIT_OK


def _cmd_models(args) -> int:
    from facility.config.library import list_gpus, list_specs, load_gpu, read_library, spec_limit_keys, spec_limits_text
    from facility.config.messages import format_validation_error
    from facility.config.schema import SpecConfig
    from pydantic import ValidationError

    print("GPU models (models/gpus/):")
    for name in list_gpus():
        g = load_gpu(name)
        print(f"  {name:8s} TDP {g.tdp_w:g} W, idle {g.idle_w:g} W, power smoothing: "
              f"{'floor %g-%g of TDP' % (g.min_floor_frac, g.max_floor_frac) if g.supports_power_smoothing else 'no'}")
    print("utility specs (models/specs/; spec = NAME or spec.base = NAME), with their limits:")
    for name in list_specs():
        data, label = read_library("specs", name, "utility spec", "spec.base")
        try:
            spec = SpecConfig(**spec_limit_keys(data))
        except ValidationError as exc:      # a broken file in models/specs/: its errors, no traceback
            raise ScenarioError(format_validation_error(exc, label, SpecConfig)) from None
        desc = data.get("description", "")
        print(f"  {name}" + (f": {desc}" if desc else ""))
        for line in spec_limits_text(spec):
            print(f"      {line}")
    from facility.config.technology import COST_YEAR_POLICY, list_technologies, load_technology

    print("storage technologies (models/storage/; technology = NAME in a storage section).")
    print(f"  Each figure is marked verified (read in the source named) or unverified (no checked\n"
          f"  source: a placeholder to override). Cost years: {COST_YEAR_POLICY}.")
    for name in list_technologies():
        t = load_technology(name)
        om = f"O&M {t.fixed_om_usd_per_kw_year:g} USD/kW-yr" + (
            f" + {t.fixed_om_usd_per_kwh_year:g} USD/kWh-yr" if t.fixed_om_usd_per_kwh_year else "")
        print(f"  {name:9s} {_duration(t.min_duration_h)}-{_duration(t.max_duration_h)}, "
              f"{t.cost_usd_per_kw:g} USD/kW + {t.cost_usd_per_kwh:g} USD/kWh ({t.cost_year}), "
              f"{om}, round trip {100 * t.round_trip_frac:.3g} %, "
              f"{t.cycle_life:,.0f} cycles at {100 * t.cycle_depth_frac:g} % depth, "
              f"{t.calendar_life_years:g} yr, self-discharge {100 * t.self_discharge_frac_per_h:.3g} %/h")
        marks = t.figures_by_mark()
        for m in ("verified", "unverified"):
            print(f"            {m}: {', '.join(marks[m]) or '(none)'}")
        print(f"            source: {t.source}")
    return EXIT_OK


def _duration(h: float) -> str:
    """A duration in the unit that reads best (s, min, h)."""
    return f"{h * 3600:.3g} s" if h < 1 / 60 else (f"{h * 60:.3g} min" if h < 1 else f"{h:g} h")


def _cmd_grid_modes(args) -> int:
    from facility.cli_grid import cmd_grid_modes

    return cmd_grid_modes(args)


def _cmd_grid_replay(args) -> int:
    from facility.cli_grid import cmd_grid_replay

    return cmd_grid_replay(args)


def _cmd_record(args) -> int:
    from facility.report.outdir import check_out_file
    from facility.workload.record import record

    cmd = list(args.argv)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    from facility.report.staging import write_sidecar

    full = check_out_file(args.out, force=args.force, suffixes=(".csv",))   # before the job runs, not after
    res = record(cmd, full, interval_s=args.interval_ms / 1e3)
    write_sidecar(full, "record")
    print(f"wrote {res.path} ({res.n_polls:,} polls of {res.n_gpus} GPU(s), median interval "
          f"{1e3 * res.median_interval_s:.4g} ms, sensor {res.sensor})")
    if res.exit_status != 0:
        print(f"error: {' '.join(cmd)} exited with status {res.exit_status} (the trace up to then is written)",
              file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


_COMMANDS = {"validate": _cmd_validate, "trace": _cmd_trace, "run": _cmd_run, "size": _cmd_size,
             "sweep": _cmd_sweep, "export-net": _cmd_export_net, "models": _cmd_models,
             "record": _cmd_record, "grid-modes": _cmd_grid_modes, "grid-replay": _cmd_grid_replay}


def _warning_lines():
    """A ``warnings.showwarning`` that sends each message to the ``facility`` logger, whose
    handler prints it once as a ``warning:`` line on stderr (:func:`setup_logging`), as the
    CLI's own warnings read (not Python's ``file:line: UserWarning`` with the source line; a
    size-and-verify loop would repeat them round after round, and a message both logged and
    warned shows once)."""

    def show(message, category, filename, lineno, file=None, line=None):
        log.warning("%s", str(message))

    return show


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The parser, built once per process (building it looks up argparse's message catalogue
    ~500 times: 10–20 ms, which dominated an in-process ``main`` that fails fast)."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``facility`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    setup_logging(args)
    with warnings.catch_warnings():
        warnings.showwarning = _warning_lines()
        if args.command == "size":  # it prints its own line for a gap (_cmd_size)
            warnings.simplefilter("ignore", GapWarning)
        try:
            rc = _run_command(args)
            sys.stdout.flush()      # a closed pipe shows here, not at the interpreter's exit
        except BrokenPipeError:
            if not _stdout_gone():
                raise
            return _reader_gone()
        return rc


def _stdout_gone() -> bool:
    """Whether nobody reads stdout any more (``| head -1`` exited): its pipe's reading end is
    closed (``poll`` reports an error on the writing end). True where it cannot be told."""
    try:
        import select

        fd = sys.stdout.fileno()
        po = select.poll()
        po.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in po.poll(0))
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return True


def _reader_gone() -> int:
    """Exit 0, silently, when the reader of stdout went away: its choice, not an error. What
    is still buffered goes nowhere (stdout now writes to ``os.devnull``, so the interpreter's
    final flush cannot fail again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        pass
    return EXIT_OK


def _run_command(args) -> int:
    try:
        return _COMMANDS[args.command](args)
    except FacilityError as exc:
        print(f"error: {bounded(str(exc))}", file=sys.stderr)
        diag = getattr(exc, "diagnosis", None)
        if diag and args.verbose:
            print(f"diagnosis: {bounded(str(diag))}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if _stdout_gone():
            raise                   # main(): the reader of stdout went away, exit 0
        return _unexpected(args, sys.exc_info()[1])
    except OSError as exc:
        if not is_no_space(exc) or args.debug:
            return _unexpected(args, exc)
        where = f" writing {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: no space left on device{bounded(where)} ({exc.strerror or exc}); free space or "
              f"choose another --out", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a bare traceback
        return _unexpected(args, exc)


def _unexpected(args, exc: BaseException) -> int:
    if args.debug:
        raise exc
    print(f"error: unexpected {type(exc).__name__}: {bounded(str(exc))} (rerun with --debug for the traceback)",
          file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
