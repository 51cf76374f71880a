"""``facility record``: sample every GPU's power through NVML while a command runs.

::

    python -m facility record --out trace.csv [--interval-ms 20] -- python train.py ...

The recorder starts COMMAND, polls every GPU every ``interval_ms`` until it exits, and writes a
file the trace workload reads unchanged: a ``# key: value`` header block (GPU model, driver,
NVML version, sensor, interval, command, exit status) and one row per poll,
``t_s, gpu0_power_W, ..., gpu{n-1}_power_W`` (seconds from the first poll, W per GPU).

Sensor: the instantaneous reading ``NVML_FI_DEV_POWER_INSTANT`` through
``nvmlDeviceGetFieldValues`` (drivers from the R530 series on). Where a GPU or driver does not
offer it, the recorder falls back to ``nvmlDeviceGetPowerUsage`` and says so in the header and
on stderr: that is a 1-s average on Ampere and newer GPUs (``# sensor: average_1s``), which the
replay then treats as such. NVML comes from the ``nvidia-ml-py`` package (``pip install
"facility[record]"``, module ``pynvml``); without it, without an NVIDIA driver or without a GPU
the command stops with exit code 2 and says which.

Timing: polls are scheduled on a fixed grid from the first one (``time.monotonic``); a poll
that falls behind skips the missed ticks rather than bunching up, and each row carries the
time its poll started. One poll of 8 GPUs through Python takes well under 1 ms, so 20 ms
(50 Hz, Nyquist 25 Hz, above the 0.1-20 Hz band of grid limits) is a sound default.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from facility.errors import NoDeviceError, ScenarioError
from facility.workload.trace_format import gpu_averages_power

__all__ = ["RecordResult", "record", "import_nvml"]

_FI_POWER_INSTANT = 186   # NVML_FI_DEV_POWER_INSTANT [mW]; nvml.h (R530+)


@dataclass
class RecordResult:
    """What :func:`record` wrote."""

    path: Path
    n_gpus: int
    n_polls: int
    median_interval_s: float
    sensor: str
    gpu_names: list
    exit_status: int


def import_nvml():
    """The ``pynvml`` module of ``nvidia-ml-py``; :class:`NoDeviceError` (exit 2) without it."""
    try:
        import pynvml
    except ImportError:
        raise NoDeviceError("facility record needs NVIDIA's NVML bindings: pip install 'facility[record]' "
                            "(the nvidia-ml-py package, module pynvml)") from None
    return pynvml


def _text(v) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _field_w(v) -> float:
    """An NVML field value (mW) in W."""
    kinds = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(v.value, kinds.get(int(v.valueType), "uiVal"))) / 1e3


class _Sampler:
    """Reads every GPU's power the same way each poll (instant field, or PowerUsage)."""

    def __init__(self, nvml):
        self.nvml = nvml
        err = getattr(nvml, "NVMLError", Exception)
        try:
            nvml.nvmlInit()
        except err as exc:
            raise NoDeviceError(f"facility record: NVML cannot start ({exc}): no NVIDIA driver or GPU on "
                                "this machine?") from None
        except OSError as exc:
            raise NoDeviceError(f"facility record: NVML library not found ({exc}): no NVIDIA driver?") from None
        try:
            n = int(nvml.nvmlDeviceGetCount())
        except err as exc:
            self.close()
            raise NoDeviceError(f"facility record: NVML cannot count the GPUs ({exc})") from None
        if n == 0:
            self.close()
            raise NoDeviceError("facility record: NVML sees no GPU on this machine")
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        self.names = [_text(nvml.nvmlDeviceGetName(h)) for h in self.handles]
        self.field = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", _FI_POWER_INSTANT)
        self.instant = all(self._instant_ok(h) for h in self.handles)
        if self.instant:
            self.sensor, self.method = "instant", "NVML field NVML_FI_DEV_POWER_INSTANT (nvmlDeviceGetFieldValues)"
        else:
            avg = [gpu_averages_power(nm) for nm in self.names]
            self.sensor = "instant" if all(a is False for a in avg) else "average_1s"
            self.method = ("nvmlDeviceGetPowerUsage (this driver or GPU offers no instantaneous field; "
                           + ("instantaneous on GPUs older than Ampere)" if self.sensor == "instant"
                              else "a 1-s average on Ampere and newer)"))

    def _instant_ok(self, h) -> bool:
        try:
            v = self.nvml.nvmlDeviceGetFieldValues(h, [self.field])[0]
        except Exception:  # noqa: BLE001 - any NVML failure means: not offered here
            return False
        return int(getattr(v, "nvmlReturn", 0)) == 0

    def read_w(self) -> list[float]:
        if self.instant:
            return [_field_w(self.nvml.nvmlDeviceGetFieldValues(h, [self.field])[0]) for h in self.handles]
        return [float(self.nvml.nvmlDeviceGetPowerUsage(h)) / 1e3 for h in self.handles]

    def facts(self) -> dict:
        nv = self.nvml
        out = {}
        for key, fn in (("driver", "nvmlSystemGetDriverVersion"), ("nvml", "nvmlSystemGetNVMLVersion")):
            try:
                out[key] = _text(getattr(nv, fn)())
            except Exception:  # noqa: BLE001 - informative only
                out[key] = "unknown"
        try:
            out["power_limit_w"] = ", ".join(f"{nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3:g}" for h in self.handles)
        except Exception:  # noqa: BLE001
            out["power_limit_w"] = "unknown"
        try:
            out["uuid"] = ", ".join(_text(nv.nvmlDeviceGetUUID(h)) for h in self.handles)
        except Exception:  # noqa: BLE001
            pass
        return out

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down is best effort
            pass


def _gpu_line(names: list[str]) -> str:
    if len(set(names)) == 1:
        return f"{names[0]} (x{len(names)})"
    return "; ".join(f"{i}: {n}" for i, n in enumerate(names))


def record(command: list[str], out: str | Path, *, interval_s: float = 0.02, nvml=None,
           stderr=None) -> RecordResult:
    """Run ``command`` and record every GPU's power until it exits.

    Parameters
    ----------
    command : list of str
        The program and its arguments.
    out : str or pathlib.Path
        CSV file to write (atomically: a temporary file renamed at the end).
    interval_s : float
        Poll interval. [s]
    nvml : module, optional
        The NVML bindings (default: ``pynvml``); the tests pass a fake.

    Returns
    -------
    RecordResult
        The command's exit status in ``exit_status`` (130 when interrupted).

    Raises
    ------
    NoDeviceError
        No NVML bindings, no driver, no GPU (exit code 2).
    ScenarioError
        No command, an interval out of range, or a command that cannot start.
    """
    if not command:
        raise ScenarioError("facility record: give the command to run after --, e.g. "
                            "facility record --out trace.csv -- python train.py")
    if not (0.001 <= interval_s <= 60.0):
        raise ScenarioError(f"--interval-ms = {1e3 * interval_s:g} ms: allowed 1 to 60,000 ms")
    out = Path(out)
    stderr = sys.stderr if stderr is None else stderr
    sampler = _Sampler(nvml if nvml is not None else import_nvml())
    try:
        facts = sampler.facts()
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        print(f"recording {len(sampler.handles)} GPU(s) ({_gpu_line(sampler.names)}) every "
              f"{1e3 * interval_s:g} ms, sensor {sampler.sensor} via {sampler.method}", file=stderr)
        try:
            child = subprocess.Popen(command)
        except OSError as exc:
            raise ScenarioError(f"facility record: cannot start {command[0]!r}: {exc.strerror or exc}") from None
        t_rows, p_rows = [], []
        status = None
        t0 = time.monotonic()
        k = 0
        try:
            while True:
                t = time.monotonic()
                p_rows.append(sampler.read_w())
                t_rows.append(t - t0)
                if status is not None:
                    break                       # one poll after the command ended
                status = child.poll()
                k += 1
                now = time.monotonic()
                k = max(k, math.ceil((now - t0) / interval_s))   # skip ticks already missed
                time.sleep(max(0.0, t0 + k * interval_s - now))
        except KeyboardInterrupt:
            try:
                status = child.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                child.kill()
                status = child.wait()
            status = 130 if status in (None, 0) else status
    finally:
        sampler.close()
    t_s = np.asarray(t_rows)
    p = np.asarray(p_rows, dtype=float)
    med = float(np.median(np.diff(t_s))) if t_s.size > 1 else float("nan")
    lines = [
        "# facility record: GPU power sampled through NVML while a command ran",
        f"# command: {' '.join(command)}",
        f"# started_utc: {started}",
        f"# gpu: {_gpu_line(sampler.names)}",
        *(f"# {k}: {v}" for k, v in facts.items()),
        f"# sensor: {sampler.sensor} ({sampler.method})",
        f"# interval_ms: {1e3 * interval_s:g} (requested), {1e3 * med:.4g} (median achieved)",
        f"# exit_status: {status}",
        "t_s," + ",".join(f"gpu{i}_power_W" for i in range(p.shape[1])),
    ]
    lines += [f"{t:.6f}," + ",".join(f"{v:.3f}" for v in row) for t, row in zip(t_s, p)]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return RecordResult(path=out, n_gpus=int(p.shape[1]), n_polls=int(t_s.size), median_interval_s=med,
                        sensor=sampler.sensor, gpu_names=list(sampler.names), exit_status=int(status))
