"""The sweep engine: cases → tasks → executor → case folders → ``sweep.parquet`` + study outputs.

Layout of a sweep folder::

    OUT/sweep.json          what was swept (scenario file and its hash, mode, --set, ids)
    OUT/cases/<case_id>/    one folder per finished case (case.json + the case's own files)
    OUT/sweep.parquet       one row per case (+ sweep.csv)
    OUT/pareto.png/.html    Pareto front, cheapest compliant design per spec, strategy table
    OUT/cheapest.csv, OUT/strategies.csv
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd
from tqdm.auto import tqdm

from facility.config.load import parse_override, read_toml
from facility.errors import ScenarioError
from facility.report.outdir import MANIFEST_FILE as RESULT_MANIFEST
from facility.report.outdir import (RESULT_FILES, SWEEP_MANIFEST_FILE, _PNG, _is_facility_temp, _read_json,
                                    check_out_dir, foreign_entries)
from facility.report.staging import TMP_MARKER, make_temp_dir, pid_alive, remove_stale, swap_into_place
from facility.sweep.cases import CASE_ID_COLUMN, case_ids, expand_cases, validate_cases
from facility.sweep.executors import run_tasks
from facility.sweep.study import write_study_outputs
from facility.sweep.table import build_table, write_table
from facility.sweep.worker import CASE_FILE, CaseTask

__all__ = ["run_sweep", "MODES", "MANIFEST_FILE", "load_records"]

log = logging.getLogger(__name__)

MODES = ("run", "size")
MANIFEST_FILE = SWEEP_MANIFEST_FILE


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _case_fn_name(case_fn) -> str | None:
    if case_fn is None or isinstance(case_fn, str):
        return case_fn
    return f"{getattr(case_fn, '__module__', '?')}:{getattr(case_fn, '__qualname__', repr(case_fn))}"


def _check_target(out_dir: Path, resume: bool, force: bool) -> str | None:
    """The ``--out`` policy of a sweep (:mod:`facility.report.outdir`); what the folder holds now.

    New or empty: a fresh sweep. An earlier sweep: ``--resume`` finishes it, ``--force``
    replaces it. An earlier run/size result: ``--force`` replaces it. Anything else, the
    current directory or a parent of it, or an unwritable place: refused.
    """
    if resume and force:
        raise ScenarioError("--resume and --force exclude each other: --resume finishes the sweep in --out, "
                            "--force replaces it")
    _, held = check_out_dir(out_dir, force=resume or force,
                            kinds=("sweep",) if resume else ("sweep", "run", "size"),
                            how_to_replace="pass --resume to finish it or --force to replace it",
                            keep_foreign=resume)
    if resume and held is not None:
        extra = foreign_entries(out_dir)
        if extra:
            log.warning("--resume: %s in %s %s not the sweep's; left as %s", ", ".join(extra[:4])
                        + (f", … ({len(extra)} entries)" if len(extra) > 4 else ""), out_dir,
                        "is" if len(extra) == 1 else "are", "it is" if len(extra) == 1 else "they are")
    return held


def _check_resume(out_dir: Path, manifest: dict, resume: bool) -> None:
    path = out_dir / MANIFEST_FILE
    if not resume or not path.exists():
        return
    old = json.loads(path.read_text())
    for key, what in (("scenario_sha256", "the scenario file changed"), ("mode", "--mode differs"),
                      ("base_overrides", "the base overrides differ"), ("case_fn", "the case function differs")):
        if old.get(key) != manifest.get(key):
            raise ScenarioError(f"--resume {out_dir}: {what} since the sweep started "
                                f"({key}: {old.get(key)!r} → {manifest.get(key)!r}); use a new --out")


def _write_manifest(out_dir: Path, manifest: dict) -> None:
    tmp = out_dir / f".{MANIFEST_FILE}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, out_dir / MANIFEST_FILE)


def _clean_stale(cases_dir: Path) -> int:
    """Delete the temporary folders a killed sweep left in ``cases/``; nothing else.

    Only facility's own: ``.tmp-<case>-XXXXXXXX`` folders of its workers, folders carrying the
    temporary marker of a process that no longer runs, ``.NAME.old-PID`` folders of a swap
    (:func:`facility.report.outdir._is_facility_temp`). A user's hidden files stay.
    """
    n = 0
    for p in cases_dir.iterdir():
        if not p.name.startswith(".") or not _is_facility_temp(p):
            continue
        try:
            pid = json.loads((p / TMP_MARKER).read_text()).get("pid")
        except (OSError, ValueError, AttributeError):
            pid = None
        if isinstance(pid, int) and pid_alive(pid):
            continue
        shutil.rmtree(p, ignore_errors=True)
        n += 1
    return n


def _read_record(path: Path) -> dict | None:
    """A ``case.json`` record, or None when it is damaged (truncated, not a record, or the
    record of another case than its folder's)."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if (not isinstance(rec, dict) or rec.get("case_id") != Path(path).parent.name
            or not isinstance(rec.get("status"), str)):
        return None
    return rec


def _drop_damaged(cases_dir: Path, ids: list[str]) -> tuple[list[str], list[str]]:
    """Case folders of ``ids`` whose ``case.json`` is damaged: remove the files the case wrote.

    Returns ``(rerun, kept)``: the ids whose folder is gone (their cases run again) and those
    whose folder still holds files facility did not write (left alone; the case is not run).
    """
    rerun, kept = [], []
    for cid in ids:
        folder = cases_dir / cid
        f = folder / CASE_FILE
        if not f.is_file() or _read_record(f) is not None:
            continue
        m = _read_json(folder / RESULT_MANIFEST)
        ours = {CASE_FILE} | set(RESULT_FILES)
        if isinstance(m, dict) and isinstance(m.get("files"), list):
            ours |= {str(x) for x in m["files"]}
        for q in folder.iterdir():
            if q.is_file() and not q.is_symlink() and (q.name in ours or _PNG.match(q.name)):
                q.unlink()
        try:
            folder.rmdir()
            rerun.append(cid)
        except OSError:
            kept.append(cid)
    return rerun, kept


_AUTO_ID = re.compile(r"^c\d+-([0-9a-f]{8})$")


def _adopt_moved(cases_dir: Path, ids: list[str]) -> int:
    """Rename finished case folders whose case moved to another position in the list.

    Automatic ids are ``c<index>-<hash>``; the hash identifies the case, the index only orders
    the folders. Inserting a value into a ``--set`` list shifts the indices; a resumed sweep
    then renames the existing folders instead of running their cases again.
    """
    wanted = set(ids)
    by_hash: dict[str, Path] = {}
    for p in cases_dir.iterdir():
        m = _AUTO_ID.match(p.name)
        if m and p.name not in wanted and _read_record(p / CASE_FILE) is not None:
            by_hash.setdefault(m.group(1), p)
    n = 0
    for k, cid in enumerate(ids):
        m = _AUTO_ID.match(cid)
        if not m or (cases_dir / cid).exists() or m.group(1) not in by_hash:
            continue
        old = by_hash.pop(m.group(1))
        rec = _read_record(old / CASE_FILE)   # names the old folder; checked when collected
        os.rename(old, cases_dir / cid)
        f = cases_dir / cid / CASE_FILE
        rec.update(case_id=cid, index=k)
        tmp = f.with_name(f".{CASE_FILE}.tmp")
        tmp.write_text(json.dumps(rec, indent=2) + "\n")
        os.replace(tmp, f)
        n += 1
    return n


def load_records(out_dir: Path, ids: list[str] | None = None) -> list[dict]:
    """The ``case.json`` records of a sweep folder (all, or those of ``ids`` that exist)."""
    cases_dir = Path(out_dir) / "cases"
    names = ids if ids is not None else sorted(p.name for p in cases_dir.iterdir() if not p.name.startswith("."))
    out = []
    for name in names:
        rec = _read_record(cases_dir / name / CASE_FILE)
        if rec is not None:
            out.append(rec)
    return out


def run_sweep(scenario_path: Path, set_items: list[str] | None, out_dir: Path, *, mode: str = "run",
              executor: str = "local", scheduler: str | None = None, workers: int | None = None,
              resume: bool = False, cases_csv: Path | None = None, base_overrides: list[str] | None = None,
              progress: bool = True, case_fn: Callable | str | None = None, plots: bool = False,
              dask_processes: bool = True, study_outputs: bool = True, force: bool = False) -> pd.DataFrame:
    """Run every case of a sweep and return its table (also written to ``out_dir``).

    Parameters
    ----------
    scenario_path : pathlib.Path
        Base scenario (TOML).
    set_items : list of str
        ``key=v1,v2`` / ``key=start:stop:n`` items, swept as a Cartesian product
        (:func:`facility.sweep.expand_cases`).
    out_dir : pathlib.Path
        Sweep folder (see the module docstring).
    mode : {"run", "size"}
        Each case is a full co-simulation or an optimal sizing + verification run.
    executor : {"local", "dask"}
        Local process pool (default) or Dask (see :func:`facility.sweep.executors.run_tasks`).
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``); implies ``dask``. Its
        workers must see ``out_dir`` (a shared file system) and import ``facility``.
    workers : int, optional
        Parallel workers; default every core.
    resume : bool
        Finish the sweep already in ``out_dir``: cases with a folder are kept, the missing
        ones run. Refused when the scenario file, mode or base overrides changed.
    force : bool
        Replace an earlier sweep (or run/size result) in ``out_dir``; a folder holding anything
        facility did not write is refused regardless (:mod:`facility.report.outdir`).
    cases_csv : pathlib.Path, optional
        Explicit cases (header = keys).
    base_overrides : list of str, optional
        ``key=value`` items applied to every case before its own.
    progress : bool
        Progress bar with ETA on stderr.
    case_fn : callable or "module:function", optional
        ``case_fn(scenario, out_dir[, mode=, plots=]) -> nested metrics dict``; default: the
        real ``run_scenario`` / ``size_scenario``. Must be importable by the workers.
    plots : bool
        Ask each case for its PNG plots (off by default: they dominate small cases).
    dask_processes : bool
        LocalCluster workers as processes (default) or as threads of this process.
    study_outputs : bool
        Write the Pareto front, cheapest design per spec and strategy table.

    Returns
    -------
    pandas.DataFrame
        One row per case: case_id, index, status, error, …, the override columns, then every
        metric as a dot key (``pcc.max_window_swing_mw``, ``compliance.compliant``, ``cost.*``).

    Raises
    ------
    ScenarioError
        Bad ``--set``/``--cases`` input, a case whose overrides do not validate (every case is
        checked before any runs), unreadable scenario, or an ``--out`` that may not be written
        (another sweep without ``--resume``/``--force``, foreign files, the current directory).
    """
    if mode not in MODES:
        raise ScenarioError(f"--mode {mode!r}: expected one of {', '.join(MODES)}")
    scenario_path = Path(scenario_path)
    out_dir = Path(out_dir)
    held = _check_target(out_dir, resume, force)
    raw = read_toml(scenario_path)
    base_overrides = list(base_overrides or [])
    for item in base_overrides:
        parse_override(item)
    cases = expand_cases(set_items or [], cases_csv)
    salt = json.dumps({"mode": mode, "base": base_overrides})
    ids = case_ids(cases, salt)
    validate_cases(raw, cases, ids, source=str(scenario_path), base_dir=scenario_path.resolve().parent,
                   base_overrides=base_overrides)
    override_keys: list[str] = []
    for c in cases:  # merge the key orders of all cases (a CSV row may leave cells empty)
        pos = -1
        for k in c:
            if k == CASE_ID_COLUMN:
                continue
            if k in override_keys:
                pos = override_keys.index(k)
            else:
                pos += 1
                override_keys.insert(pos, k)

    manifest = {
        "facility_output": "sweep",
        "scenario": str(scenario_path.resolve()),
        "scenario_sha256": _sha256(scenario_path),
        "mode": mode,
        "base_overrides": base_overrides,
        "set": list(set_items or []),
        "cases_csv": str(cases_csv) if cases_csv else None,
        "case_fn": _case_fn_name(case_fn),
        "n_cases": len(cases),
        "case_ids": ids,
        "updated_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _check_resume(out_dir, manifest, resume)
    final_dir = out_dir
    if held is not None and not resume:
        # --force: the new sweep is built beside the earlier output and swapped in when it is
        # complete; a sweep killed or failing before then leaves the earlier one whole
        log.info("--force: building the new sweep beside the earlier %s in %s", held, out_dir)
        out_dir = make_temp_dir(final_dir)
    else:
        remove_stale(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    try:
        df = _run_in(out_dir, ids, cases, raw, scenario_path, base_overrides, override_keys, manifest,
                     resume=resume, mode=mode, executor=executor, workers=workers, scheduler=scheduler,
                     dask_processes=dask_processes, progress=progress, case_fn=case_fn, plots=plots,
                     study_outputs=study_outputs)
    except BaseException:
        if out_dir != final_dir:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    if out_dir != final_dir:
        try:
            check_out_dir(final_dir, force=True, kinds=("sweep", "run", "size"))  # unchanged meanwhile
        except BaseException:
            shutil.rmtree(out_dir, ignore_errors=True)
            raise
        swap_into_place(out_dir, final_dir)
    return df


def _run_in(out_dir: Path, ids, cases, raw, scenario_path: Path, base_overrides, override_keys, manifest, *,
            resume, mode, executor, workers, scheduler, dask_processes, progress, case_fn, plots,
            study_outputs) -> pd.DataFrame:
    """Run the cases of a sweep whose folder is ``out_dir`` and write its table and outputs."""
    cases_dir = out_dir / "cases"
    cases_dir.mkdir(exist_ok=True)
    n_stale = _clean_stale(cases_dir)
    if n_stale:
        log.info("removed %d unfinished case folder(s) of an interrupted sweep", n_stale)
    if resume:
        _adopt_moved(cases_dir, ids)
    _write_manifest(out_dir, manifest)
    rerun, kept = _drop_damaged(cases_dir, ids)
    if rerun:
        log.warning("--resume: %d case folder(s) had a damaged case.json (%s); running them again",
                    len(rerun), ", ".join(rerun[:4]) + (" …" if len(rerun) > 4 else ""))
    if kept:
        log.warning("--resume: case folder(s) %s have a damaged case.json and hold files facility did not "
                    "write; left alone and not run (move them away to run these cases)", ", ".join(kept[:4]))

    done = {i for i in ids if _read_record(cases_dir / i / CASE_FILE) is not None or i in kept}
    tasks = [
        CaseTask(case_id=cid, index=k, case={kk: v for kk, v in case.items() if kk != CASE_ID_COLUMN},
                 overrides=tuple(base_overrides + [f"{kk}={v}" for kk, v in case.items() if kk != CASE_ID_COLUMN]),
                 raw=raw, source=str(scenario_path), base_dir=str(scenario_path.resolve().parent),
                 cases_dir=str(cases_dir.resolve()), mode=mode, case_fn=case_fn, plots=plots)
        for k, (cid, case) in enumerate(zip(ids, cases)) if cid not in done
    ]
    records = {r["case_id"]: r for r in load_records(out_dir, sorted(done))}
    for cid in kept:
        case = dict(zip(ids, cases))[cid]
        records[cid] = {"case_id": cid, "index": 0, "mode": mode, "status": "error",
                        "overrides": {kk: v for kk, v in case.items() if kk != CASE_ID_COLUMN},
                        "error": f"cases/{cid}/case.json is damaged and the folder holds files facility did "
                                 f"not write; move the folder away to run this case",
                        "error_type": "ScenarioError", "traceback": "", "wall_s": float("nan"),
                        "case_s": float("nan"), "result": {}, "persisted": False}
    index_of = {cid: k for k, cid in enumerate(ids)}
    for r in records.values():  # a CSV row may have moved: the index follows the current list
        r["index"] = index_of[r["case_id"]]

    n_err = sum(r["status"] != "ok" for r in records.values())
    bar = tqdm(total=len(ids), initial=len(done), unit="case", desc="sweep", disable=not progress,
               dynamic_ncols=True, smoothing=0.1, mininterval=0.1 if sys.stderr.isatty() else 10.0)
    try:
        for rec in run_tasks(tasks, executor, workers=workers, scheduler=scheduler,
                             dask_processes=dask_processes):
            records[rec["case_id"]] = rec
            if rec["status"] != "ok":
                n_err += 1
                bar.set_postfix_str(f"{n_err} failed")
            bar.update()
    finally:
        bar.close()
        df = build_table(records.values(), override_keys)
        if len(df):
            write_table(df, out_dir)
    if study_outputs and len(df) and (df["status"] == "ok").any():
        try:
            write_study_outputs(df, out_dir)
        except Exception as exc:  # the table is written; a plotting failure must not hide it
            log.warning("study outputs (Pareto plot, tables) failed: %s: %s", type(exc).__name__, exc)
    return df
