"""Synthetic GPU telemetry files in the layouts real loggers write, with their true poll means.

Each builder returns ``(text, expected)``: the CSV text as the logger would write it and the
per-poll mean power of one GPU computed here from the values as written (rounded as the tool
rounds them), independent of the reader. ``python -m tests.workload.telemetry_files`` rewrites
the copies in tests/data/ (documented in tests/data/README.md).

Layouts reproduced:

* nvidia-smi ``--query-gpu=timestamp,index,name,power.draw,utilization.gpu,memory.used
  --format=csv -lms 100`` on 8 GPUs: one row per GPU per poll, the rows of one poll a few ms
  apart (each GPU's query takes ~1-3 ms), values with a `` W`` suffix, ``[W]`` headers,
  a stalled poll whose last GPUs report ~3 s late (later polls shift by the stall);
* the same on 2 GPUs of an older generation (Titan X), no ``name`` column;
* an NVML/pynvml logging script: ``timestamp, gpu0_power_W, ..., gpu7_power_W`` (ISO times);
* ``datetime, power_watts, time_seconds`` and ``Time, Power`` single-GPU logs;
* DCGM long format ``timestamp, hostname, gpu, DCGM_FI_DEV_POWER_USAGE`` for 2 nodes x 4 GPUs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

T0 = datetime(2025, 3, 14, 9, 26, 53, 589000)


def _smi_time(t_s: float) -> str:
    """nvidia-smi's timestamp: local date-time with milliseconds."""
    return (T0 + timedelta(seconds=t_s)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def _gpu_power(rng, n_polls: int, n_gpus: int, t: np.ndarray, base_w=560.0, swing_w=380.0,
               period_s=2.0) -> np.ndarray:
    """(n_polls, n_gpus) per-GPU power: a training-like square wave + per-GPU offset and noise."""
    high = (np.mod(t, period_s) < 0.7 * period_s)[:, None]
    level = np.where(high, base_w, base_w - swing_w)
    return level + rng.normal(0, 6.0, n_gpus)[None, :] + rng.normal(0, 4.0, (n_polls, n_gpus))


def nvidia_smi_long(n_gpus=8, n_polls=80, interval_s=0.1, stall_at=30, stall_s=2.9, seed=1,
                    name="NVIDIA H100 80GB HBM3", with_name=True):
    """nvidia-smi -lms long format with per-row jitter and one stalled poll."""
    rng = np.random.default_rng(seed)
    starts = np.arange(n_polls) * interval_s
    starts[stall_at + 1:] += stall_s                  # everything after the stall is late
    p = np.round(_gpu_power(rng, n_polls, n_gpus, starts), 2)
    head = "timestamp, index, " + ("name, " if with_name else "") + \
        "power.draw [W], utilization.gpu [%], memory.used [MiB]"
    lines = [head]
    for k in range(n_polls):
        offs = np.cumsum(rng.uniform(0.0008, 0.0031, n_gpus)) - 0.0008   # first GPU at the poll start
        offs[0] = 0.0
        if k == stall_at and n_gpus > 5:              # GPUs 5.. stall: they answer ~3 s late
            offs[5:] += stall_s * np.linspace(0.6, 1.0, n_gpus - 5)
        for i in range(n_gpus):
            util = 100 if p[k, i] > 400 else 35
            cols = [_smi_time(starts[k] + offs[i]), str(i)] + ([name] if with_name else []) + \
                [f"{p[k, i]:.2f} W", f"{util} %", f"{61000 + 13 * i} MiB"]
            lines.append(", ".join(cols))
    return "\n".join(lines) + "\n", {"t_s": starts - starts[0], "p_mean_w": p.mean(axis=1), "p_w": p}


def nvidia_smi_no_index(n_gpus=8, n_polls=40, seed=8):
    """nvidia-smi ``--query-gpu=timestamp,power.draw`` (no index column, no stall): rows of a
    poll are told apart from the next poll only by the timestamp gap."""
    text, exp = nvidia_smi_long(n_gpus=n_gpus, n_polls=n_polls, stall_s=0.0, seed=seed, with_name=False)
    lines = text.splitlines()
    out = ["timestamp, power.draw [W]"] + [", ".join(ln.split(", ")[0:1] + ln.split(", ")[2:3]) for ln in lines[1:]]
    return "\n".join(out) + "\n", exp


def nvml_wide(n_gpus=8, n_polls=120, interval_s=0.05, seed=2):
    """A pynvml logging script: ISO timestamp and one power column per GPU [W]."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_polls) * interval_s + rng.uniform(0, 0.002, n_polls)
    t[0] = 0.0
    p = np.round(_gpu_power(rng, n_polls, n_gpus, t), 3)
    lines = ["timestamp," + ",".join(f"gpu{i}_power_W" for i in range(n_gpus))]
    for k in range(n_polls):
        stamp = (T0 + timedelta(seconds=float(t[k]))).isoformat(timespec="microseconds")
        lines.append(stamp + "," + ",".join(f"{v:.3f}" for v in p[k]))
    return "\n".join(lines) + "\n", {"t_s": t, "p_mean_w": p.mean(axis=1), "p_w": p}


def repeated_columns(n_gpus=4, n_polls=50, interval_s=0.1, seed=3):
    """``time, power.draw [W]`` repeated once per GPU (a logger pasting nvidia-smi's header)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_polls) * interval_s
    p = np.round(_gpu_power(rng, n_polls, n_gpus, t), 2)
    lines = ["time [s]," + ",".join(["power.draw.instant [W]"] * n_gpus)]
    lines += [f"{t[k]:.3f}," + ",".join(f"{v:.2f}" for v in p[k]) for k in range(n_polls)]
    return "\n".join(lines) + "\n", {"t_s": t, "p_mean_w": p.mean(axis=1), "p_w": p}


def datetime_watts_seconds(n_polls=60, interval_s=0.02, seed=4):
    """``datetime, power_watts, time_seconds`` of one GPU."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_polls) * interval_s
    p = np.round(_gpu_power(rng, n_polls, 1, t, period_s=0.25), 1)[:, 0]
    lines = ["datetime,power_watts,time_seconds"]
    lines += [f"{(T0 + timedelta(seconds=float(t[k]))).isoformat(sep=' ')},{p[k]:.1f},{t[k]:.2f}"
              for k in range(n_polls)]
    return "\n".join(lines) + "\n", {"t_s": t, "p_mean_w": p, "p_w": p[:, None]}


def time_power(n_polls=40, interval_s=0.25, seed=5):
    """``Time, Power`` of one GPU (seconds, watts)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_polls) * interval_s
    p = np.round(_gpu_power(rng, n_polls, 1, t), 1)[:, 0]
    lines = ["Time, Power"] + [f"{t[k]:.2f}, {p[k]:.1f}" for k in range(n_polls)]
    return "\n".join(lines) + "\n", {"t_s": t, "p_mean_w": p, "p_w": p[:, None]}


def dcgm_two_nodes(n_polls=40, interval_s=0.1, seed=6):
    """DCGM long format of 2 nodes x 4 GPUs: (hostname, gpu) names a GPU; epoch seconds."""
    rng = np.random.default_rng(seed)
    t = 1.7e9 + np.arange(n_polls) * interval_s
    p = np.round(_gpu_power(rng, n_polls, 8, t - t[0]), 3)
    lines = ["timestamp,hostname,gpu,UUID,DCGM_FI_DEV_POWER_USAGE"]
    for k in range(n_polls):
        for i in range(8):
            host, g = f"node{i // 4}", i % 4
            lines.append(f"{t[k] + 0.0004 * i:.4f},{host},{g},GPU-{i:04d}-aaaa,{p[k, i]:.3f}")
    return "\n".join(lines) + "\n", {"t_s": t - t[0], "p_mean_w": p.mean(axis=1), "p_w": p}


FILES = {
    "nvidia_smi_8xh100_jitter_stall.csv": nvidia_smi_long,
    "nvidia_smi_2xtitanx.csv": lambda: nvidia_smi_long(n_gpus=2, n_polls=40, stall_at=10, stall_s=0.0, seed=7,
                                                       name="NVIDIA GeForce GTX TITAN X"),
    "nvml_wide_8gpu.csv": nvml_wide,
}


def main(out: Path | None = None) -> None:  # pragma: no cover - regenerates the checked-in copies
    out = out or Path(__file__).resolve().parents[1] / "data"
    for name, build in FILES.items():
        (out / name).write_text(build()[0])
        print(f"wrote {out / name}")


if __name__ == "__main__":  # pragma: no cover
    main()
