"""Command line of the grid dynamics engine (ANDES): ``facility grid-modes`` derives a mode set
from a case, ``facility grid-replay`` plays a run's PCC power into a case (docs/grid_impact.md).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from facility.errors import EXIT_OK, ScenarioError

__all__ = ["add_grid_parsers", "cmd_grid_modes", "cmd_grid_replay"]


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
    return v


def _window(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give START:END in seconds of the run, e.g. 0:30") from None
    if not (0 <= a < b):
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= START < END [s]")
    return a, b


def add_grid_parsers(sub) -> None:
    """The ``grid-modes`` and ``grid-replay`` sub-commands."""
    p = sub.add_parser("grid-modes", help="derive a grid_impact mode set from an ANDES case by linearizing it "
                                          "(needs the [grid] extra)")
    p.add_argument("case", help="ANDES case: bundled name (e.g. kundur/kundur_full.xlsx) or a path")
    p.add_argument("--bus", required=True, help="the PCC bus's idx in the case (the load-power input)")
    p.add_argument("--observe", required=True, help="the observed generator's idx (GENROU or GENCLS)")
    p.add_argument("--out", type=Path, required=True, help="mode set file to write (.toml)")
    p.add_argument("--name", default=None, help="the set's name (default: the file's stem)")
    p.add_argument("--min-hz", type=_positive, default=0.05, help="lowest electromechanical mode [Hz] (0.05)")
    p.add_argument("--max-hz", type=_positive, default=4.0, help="highest electromechanical mode [Hz] (4)")
    p.add_argument("--mode-names", default=None, metavar="A,B,...",
                   help="names of the electromechanical modes in rising frequency (default m<f>, e.g. m0p673)")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")

    p = sub.add_parser("grid-replay", help="play a window of a run's PCC power into an ANDES case and compare "
                                           "the observed generator with the mode set (needs the [grid] extra)")
    p.add_argument("run_dir", type=Path, help="a `facility run`/`size` output folder (timeseries.parquet)")
    p.add_argument("--case", required=True, help="ANDES case: bundled name or a path")
    p.add_argument("--bus", required=True, help="the PCC bus's idx in the case")
    p.add_argument("--observe", required=True, help="the observed generator's idx")
    p.add_argument("--window", type=_window, required=True, metavar="START:END",
                   help="the stretch of the run to play [s of the run], e.g. 0:30")
    p.add_argument("--mode-set", default=None,
                   help="compare with this mode set (bundled name or a grid-modes file); default: derived "
                        "from --case/--bus/--observe now")
    p.add_argument("--step-s", type=_positive, default=None,
                   help="ANDES's time step [s] (default: the run's dt, at least 1 ms, at most 20 ms)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for grid_replay.{json,csv,png} (default: RUN_DIR, whose report.html then "
                        "shows the replay in its grid-impact section)")


def cmd_grid_modes(args) -> int:
    """``facility grid-modes``: derive and write a mode set."""
    import tomli_w

    from facility.grid_impact.dynamics.derive import derive_mode_set
    from facility.grid_impact.library import mode_set_from_dict
    from facility.report.outdir import check_out_file
    from facility.report.staging import atomic_file

    full = check_out_file(args.out, force=args.force, suffixes=(".toml",))
    if args.min_hz >= args.max_hz:
        raise ScenarioError(f"--min-hz {args.min_hz:g} must be below --max-hz {args.max_hz:g} [Hz]")
    name = args.name or full.stem
    names = dict(enumerate(x.strip() for x in args.mode_names.split(","))) if args.mode_names else None
    table = derive_mode_set(args.case, args.bus, args.observe, name, min_hz=args.min_hz, max_hz=args.max_hz,
                            mode_names=names)
    ms = mode_set_from_dict(table)
    cmd = [args.case, "--bus", str(args.bus), "--observe", str(args.observe), "--out", full.name, "--name", name,
           "--min-hz", f"{args.min_hz:g}", "--max-hz", f"{args.max_hz:g}"]
    if args.mode_names:
        cmd += ["--mode-names", args.mode_names]
    head = ("# Mode set derived by facility from an ANDES case (docs/grid_impact.md, 'Mode sets from ANDES').\n"
            f"# Command: facility grid-modes {shlex.join(cmd)}\n"
            "# Each [[modes]] row is a pole pair (f_hz natural frequency, damping_ratio) with complex residues\n"
            "# [re, im] to the observed generator's power (residue_mw, MW per MW per s), the PCC bus frequency\n"
            "# (residue_hz) and the generator's speed (residue_speed_pu); [rest] holds the feedthrough d_* and\n"
            "# every other pole, so the rows sum to the case's linear response. Loading it needs no ANDES.\n")
    with atomic_file(full, force=args.force, command="grid-modes", suffixes=(".toml",)) as tmp:
        tmp.write_text(head + tomli_w.dumps(table))
    print(f"wrote {args.out}: {len(ms.modes)} electromechanical mode(s) of {table['derived']['n_states']} states"
          f" ({len(table['rest']['poles'])} other poles in the rest)")
    for m in ms.modes:
        print(f"  {m.name:10s} {m.f_hz:7.3f} Hz  zeta {100 * m.damping_ratio:6.2f} %  "
              f"resonant gain {m.gain_mw_per_mw / (2 * m.damping_ratio):.3g} MW/MW")
    return EXIT_OK


def cmd_grid_replay(args) -> int:
    """``facility grid-replay``: ANDES time domain against the mode set's prediction."""
    from facility.grid_impact.dynamics.replay import replay_run

    out = replay_run(args.run_dir, args.case, args.bus, args.observe, args.window, mode_set=args.mode_set,
                     step_s=args.step_s, out_dir=args.out)
    s = out["summary"]
    print(f"replayed {s['window_s'][0]:g}-{s['window_s'][1]:g} s of {args.run_dir} at bus {args.bus} of {args.case}"
          f" (ANDES {s['andes_version']}, {s['n_steps']} steps): generator {args.observe} power swing "
          f"{s['pe_peak_andes_mw']:.4g} MW (ANDES) / {s['pe_peak_modes_mw']:.4g} MW (mode set {s['mode_set']}), "
          f"speed {s['speed_peak_andes_pu']:.3g} / {s['speed_peak_modes_pu']:.3g} pu; wrote {out['dir']}",
          file=sys.stdout)
    return EXIT_OK
