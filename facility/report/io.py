"""Writing a run's files atomically: everything goes to a temporary folder, then moves into place.

Which folder may be written or replaced is :mod:`facility.report.outdir`'s policy: never a
folder holding anything facility did not write.
"""

from __future__ import annotations

import contextlib
import json
import math
import platform
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from facility.config.load import dump_scenario_toml
from facility.report.claim import check_before_swap, target_state
from facility.report.html import render_report
from facility.report.outdir import MANIFEST_FILE, check_out_dir
from facility.report.staging import TMP_MARKER, atomic_file, make_temp_dir, no_space_as_error, swap_into_place

if TYPE_CHECKING:
    from facility.cosim.results import Results

__all__ = ["atomic_dir", "atomic_file", "write_json", "write_outputs", "manifest", "git_revision"]

_VERSIONED = ("facility", "numpy", "scipy", "pandas", "pyarrow", "pydantic", "pandapower", "pyomo",
              "highspy", "numba", "matplotlib")


@contextlib.contextmanager
def atomic_dir(final: Path, *, replace_result: bool = True) -> Iterator[Path]:
    """Yield a temporary folder beside ``final``; on success replace ``final`` with it.

    A failure leaves ``final`` untouched (an earlier result stays whole) and removes the
    temporary folder, so a failed run never leaves half a result; the temporary folders of an
    earlier run that was killed are removed first (:func:`facility.report.staging.remove_stale`).
    The folder gets the umask's permissions. ``final`` is checked with
    :func:`facility.report.outdir.check_out_dir` before and again after the body ran (the
    folder may have changed meanwhile): only a new or empty folder, or an earlier facility
    run/size result when ``replace_result`` is set, is ever replaced. The last check
    (:func:`facility.report.claim.check_before_swap`) also refuses a target that is not what
    this command's claim on it recorded at its start (another command wrote it meanwhile),
    and a new or empty target is filled by one ``rename`` that the kernel refuses once
    something else is there.

    Raises
    ------
    ScenarioError
        ``final`` may not be replaced (a file, a folder with foreign content, the current
        directory, an unwritable place, another command's result); nothing is written then.
    ResourceError
        The file system of ``final`` is full (or a quota is reached); the temporary folder is
        removed.
    """
    final, _ = check_out_dir(final, force=replace_result, kinds=("run", "size"))
    entry = target_state(final)
    with no_space_as_error(final):
        tmp = make_temp_dir(final)   # also removes what a killed earlier run left beside final
    try:
        with no_space_as_error(final, cleanup=lambda: shutil.rmtree(tmp, ignore_errors=True)):
            yield tmp
        check_out_dir(final, force=replace_result, kinds=("run", "size"))
        now = check_before_swap(final, entry_state=entry)
        swap_into_place(tmp, final, expect=now)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as indented JSON (numpy scalars converted, NaN/inf as null)."""
    Path(path).write_text(json.dumps(_clean(obj), indent=2, sort_keys=False) + "\n")


def git_revision() -> str | None:
    """The git revision of the facility checkout, if it is one."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def manifest(res: "Results", files: list[str] | None = None) -> dict:
    """Versions, seed, timings, git revision and the command line of a run.

    ``facility_output`` (``"run"`` or ``"size"``) and ``files`` (every file of the folder)
    mark the folder as a facility result that a later ``--out … --force`` may replace.
    """
    versions = {}
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "facility_output": "size" if res.sizing is not None else "run",
        "files": sorted(set(files or []) | {MANIFEST_FILE}),
        "scenario": res.scenario.name,
        "seed": res.scenario.seed,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_revision": git_revision(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "argv": sys.argv,
        "versions": versions,
        "timings_s": res.timings_s,
        "n_steps": int(len(res.timeseries)),
        "dt_s": res.scenario.time.dt_s,
    }


def write_outputs(res: "Results", out_dir: Path, *, plots: bool = True, replace_result: bool = True) -> Path:
    """Write every file of a run into ``out_dir`` atomically.

    Files: ``metrics.json``, ``timeseries.parquet``, ``events.json``, ``report.html`` with PNG
    plots, ``scenario.resolved.toml``, ``manifest.json`` and, for a sizing, ``sizing.json``.
    ``replace_result``: an earlier facility result in ``out_dir`` may be replaced (the CLI
    asks for ``--force``); a folder with anything else in it never is (see :func:`atomic_dir`).
    """
    with atomic_dir(out_dir, replace_result=replace_result) as tmp:
        write_json(tmp / "metrics.json", res.metrics)
        res.timeseries.to_parquet(tmp / "timeseries.parquet", index=False)
        write_json(tmp / "events.json", res.events)
        (tmp / "scenario.resolved.toml").write_text(dump_scenario_toml(res.scenario))
        if res.sizing is not None:
            write_json(tmp / "sizing.json", res.sizing)
        images = []
        if plots:
            # a run without plots (--no-plots) never loads matplotlib
            from facility.report.plots import write_plots  # lazy: matplotlib (~0.4 s), only to draw plots

            images = write_plots(res, tmp)
        (tmp / "report.html").write_text(render_report(res, images))
        files = [p.name for p in tmp.iterdir() if p.name != TMP_MARKER]
        write_json(tmp / MANIFEST_FILE, manifest(res, files))
    return Path(out_dir)
