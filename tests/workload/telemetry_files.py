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


#: Start of the id-less logs (nvidia-smi prints local time with milliseconds).
T0_QUERY = datetime(2024, 5, 14, 10, 21, 33, 115000)

#: GPU models of the id-less logs: TDP [W] (datasheets: NVIDIA H100 Tensor Core GPU datasheet,
#: SXM5 700 W; NVIDIA GeForce GTX TITAN X specifications page, 250 W graphics card power),
#: the levels of a training iteration [W] (compute, communication; plausible for each card,
#: unverified, chosen here), per-GPU spread [W], reading noise [W], memory.used per GPU [MiB].
QUERY_GPUS = {
    "h100": {"tdp_w": 700.0, "high_w": 655.0, "low_w": 290.0, "spread_w": 14.0, "noise_w": 4.0,
             "mem_mib": 71_000, "mem_step_mib": 1_283, "period_s": 1.8},
    "titanx": {"tdp_w": 250.0, "high_w": 228.0, "low_w": 112.0, "spread_w": 7.0, "noise_w": 2.5,
               "mem_mib": 11_873, "mem_step_mib": -412, "period_s": 1.3},
}


def _iteration_w(t_s: np.ndarray, g: dict, offset_w: np.ndarray, rng) -> np.ndarray:
    """Power of each GPU at its own read time t_s (K, n): the square wave of a training
    iteration (70 % compute), a steady per-GPU offset and reading noise. [W]"""
    high = np.mod(t_s, g["period_s"]) < 0.7 * g["period_s"]
    p = np.where(high, g["high_w"], g["low_w"]) + offset_w[None, :] + rng.normal(0, g["noise_w"], t_s.shape)
    return np.clip(p, 0.0, g["tdp_w"])


def nvidia_smi_query(gpu="h100", n_gpus=8, n_polls=120, interval_s=0.1, same_timestamp=False,
                     first_spread_s=0.013, stall_at=55, stall_s=3.0, units=True, na=(), seed=11):
    """``nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,memory.used --format=csv
    -lms 100`` as it comes: no GPU index, one row per GPU per poll in a fixed GPU order.

    The rows of one poll share one timestamp (``same_timestamp``) or lie 1-3 ms apart; the
    first poll is spread over ``first_spread_s``; poll ``stall_at`` stalls: its GPUs from the
    third on answer late, spread over ``stall_s``, and the next poll waits for them;
    ``units = False`` writes ``--format=csv,nounits`` values (``231.45``, not ``231.45 W``);
    ``na`` lists (poll, gpu) whose power reads ``[N/A]``.

    Returns ``(text, expected)``; ``expected``: ``t_s`` (poll times), ``p_w`` (K, n) the
    generating signal at each row's read time [W], ``p_mean_w`` its per-poll mean [W],
    ``plateau`` (K,) polls whose every row reads well inside one phase of the iteration,
    ``tdp_w``.
    """
    g = QUERY_GPUS[gpu]
    rng = np.random.default_rng(seed)
    offset = rng.normal(0.0, g["spread_w"], n_gpus)
    offs = np.zeros((n_polls, n_gpus))
    if not same_timestamp:
        offs[:, 1:] = np.cumsum(rng.uniform(0.001, 0.003, (n_polls, n_gpus - 1)), axis=1)
    offs[0] = np.linspace(0.0, first_spread_s, n_gpus)
    if stall_at is not None and n_gpus > 2:
        offs[stall_at, 2:] += stall_s * np.linspace(0.35, 1.0, n_gpus - 2)
    elif stall_at is not None:
        offs[stall_at, 1:] += stall_s
    starts = np.zeros(n_polls)
    for k in range(1, n_polls):                    # the next poll waits for the last row of this one
        starts[k] = starts[k - 1] + offs[k - 1, -1] + interval_s + rng.uniform(0.0002, 0.0015)
    t_row = starts[:, None] + offs
    p = np.round(_iteration_w(t_row, g, offset, rng), 2)
    phase = np.mod(t_row, g["period_s"]) / g["period_s"]
    edge = np.minimum(np.abs(phase - 0.7), np.minimum(phase, 1.0 - phase)) * g["period_s"]
    plateau = (edge > 0.15).all(axis=1)
    na_set = set(na)
    lines = ["timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    for k in range(n_polls):
        for i in range(n_gpus):
            util = 100 if p[k, i] > 0.5 * (g["high_w"] + g["low_w"]) else int(rng.integers(58, 96))
            mem = g["mem_mib"] + g["mem_step_mib"] * i
            power = "[N/A]" if (k, i) in na_set else (f"{p[k, i]:.2f} W" if units else f"{p[k, i]:.2f}")
            stamp = T0_QUERY + timedelta(seconds=float(t_row[k, 0 if same_timestamp and k else i]))
            stamp = stamp.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            lines.append(", ".join([stamp, power, f"{util} %" if units else str(util),
                                    f"{mem} MiB" if units else str(mem)]))
    # the poll time is its first row's timestamp, as written (ms)
    t_ms = np.round(1e3 * starts).astype(np.int64)
    return "\n".join(lines) + "\n", {"t_s": (t_ms - t_ms[0]) / 1e3, "p_w": p, "p_mean_w": p.mean(axis=1),
                                     "plateau": plateau, "tdp_w": g["tdp_w"]}


def h100_query_log():
    """8 x H100 SXM: rows 1-3 ms apart, the first poll over 13 ms, a 3-s stall at poll 55."""
    return nvidia_smi_query()


def titanx_query_log():
    """2 x GeForce GTX TITAN X, ``nounits``: both rows of a poll share one timestamp, the first
    poll over 13 ms, a 3-s stall at poll 70."""
    return nvidia_smi_query(gpu="titanx", n_gpus=2, n_polls=150, same_timestamp=True, stall_at=70,
                            units=False, seed=12)


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
    "nvidia_smi_8xh100_jitter_stall.csv": h100_query_log,
    "nvidia_smi_2xtitanx.csv": titanx_query_log,
    "nvml_wide_8gpu.csv": nvml_wide,
}


def main(out: Path | None = None) -> None:  # pragma: no cover - regenerates the checked-in copies
    out = out or Path(__file__).resolve().parents[1] / "data"
    for name, build in FILES.items():
        (out / name).write_text(build()[0])
        print(f"wrote {out / name}")


if __name__ == "__main__":  # pragma: no cover
    main()
