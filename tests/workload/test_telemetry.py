"""Measured GPU telemetry as loggers write it: poll grouping, wide files, header spellings,
sensor, validate-time checks and warnings (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from facility.cli import main
from facility.errors import ScenarioError
from facility.workload import generate_load
from facility.workload.trace import load_trace
from facility.workload.trace_format import classify_columns, gpu_averages_power, normalize_header
from tests.workload import telemetry_files as tf
from tests.workload.conftest import make_scenario

LAYOUTS = {
    "nvidia_smi_8gpu_jitter_stall": (tf.nvidia_smi_long, 8, "grouped by 'index'"),
    "nvidia_smi_2xtitanx": (tf.FILES["nvidia_smi_2xtitanx.csv"], 2, "grouped by 'index'"),
    "nvidia_smi_no_index_column": (tf.nvidia_smi_no_index, 8, "grouped by timestamp gaps"),
    "nvml_wide_gpu_i_power_W": (tf.nvml_wide, 8, "one column per GPU"),
    "power_draw_repeated": (tf.repeated_columns, 4, "one column per GPU"),
    "datetime_power_watts_time_seconds": (tf.datetime_watts_seconds, 1, "one row per poll"),
    "Time_Power": (tf.time_power, 1, "one row per poll"),
    "dcgm_two_nodes": (tf.dcgm_two_nodes, 8, "grouped by 'hostname' + 'gpu' + 'UUID'"),
}


def _write(tmp_path, text, name="trace.csv"):
    f = tmp_path / name
    f.write_text(text)
    return f


def _toml(tmp_path, trace, *, spec="", job="", dt_s=0.02, horizon_s=10.0):
    f = tmp_path / "s.toml"
    f.write_text(f"""name = "t"
[time]
horizon_s = {horizon_s}
dt_s = {dt_s}
[[jobs]]
name = "llm"
n_gpus = 64
gpu = "h100"
workload = "trace"
trace_file = "{trace}"
{job}
[spec]
{spec}
""")
    return f


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_per_poll_mean_of_every_layout(tmp_path, name):
    build, n_gpus, grouping = LAYOUTS[name]
    text, exp = build()
    tr = load_trace(_write(tmp_path, text), tdp_w=700.0, idle_w=75.0, gpu_model="h100")
    assert tr.info.n_gpus == n_gpus and tr.info.grouping == grouping
    assert tr.info.n_polls == exp["p_mean_w"].size
    np.testing.assert_allclose(tr.p_frac * 700.0, exp["p_mean_w"], rtol=0, atol=1e-9 * 700.0)
    np.testing.assert_allclose(tr.t_s, exp["t_s"], rtol=0, atol=1e-6)   # ISO micro-seconds round


def test_checked_in_copies_match_their_builders(data_dir):
    for name, build in tf.FILES.items():
        assert (data_dir / name).read_text() == build()[0], f"rerun python -m tests.workload.telemetry_files ({name})"


def test_jittered_rows_are_grouped_by_gpu_not_by_timestamp(data_dir):
    """The rows of one poll carry different timestamps: grouping by identical time (the old
    reader) would make ~8x too many samples mixing subsets of GPUs."""
    tr = load_trace(data_dir / "nvidia_smi_8xh100_jitter_stall.csv", tdp_w=700.0)
    text = (data_dir / "nvidia_smi_8xh100_jitter_stall.csv").read_text().splitlines()[1:]
    assert len({ln.split(",")[0] for ln in text}) > 6 * tr.info.n_polls   # timestamps nearly all differ
    assert tr.info.n_polls == 80 and tr.info.median_interval_s == pytest.approx(0.1)
    # the stalled poll: 2.9 s late, reported as the longest gap
    assert tr.info.max_gap_s == pytest.approx(3.0) and tr.info.max_gap_at_s == pytest.approx(3.0)


def test_replay_equals_poll_means_at_the_poll_times(data_dir):
    text, exp = tf.nvidia_smi_long()
    s = make_scenario({"name": "tr", "n_gpus": 8, "gpu": "h100", "workload": "trace", "trace_loop": False,
                       "trace_file": str(data_dir / "nvidia_smi_8xh100_jitter_stall.csv")},
                      horizon_s=10.0, dt_s=0.1)
    prof = generate_load(s)
    k = np.rint(exp["t_s"] / 0.1).astype(int)
    k = k[k < prof.n_steps]
    got = prof.p_gpu_w[0, k]
    np.testing.assert_allclose(got / 700.0, exp["p_mean_w"][: k.size] / 700.0, rtol=0, atol=1e-9)
    assert prof.meta["jobs"]["tr"]["trace"]["n_gpus"] == 8


def test_incomplete_final_poll_is_dropped_and_reported(tmp_path):
    text, exp = tf.nvidia_smi_long(n_polls=20)
    text += "2025/03/14 09:27:10.000, 0, NVIDIA H100 80GB HBM3, 300.00 W, 100 %, 61000 MiB\n"
    tr = load_trace(_write(tmp_path, text), tdp_w=700.0)
    assert tr.info.n_polls == 20 and tr.info.dropped_rows == 1
    np.testing.assert_allclose(tr.p_frac * 700.0, exp["p_mean_w"], atol=1e-9)


def _drop_line(text, i):
    lines = text.splitlines()
    return "\n".join(lines[:i] + lines[i + 1:]) + "\n"


def _swap_lines(text, i, j):
    lines = text.splitlines()
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("make, match", [
    # GPU 3 misses poll 5: 8 GPUs, one with a row fewer, not at the end
    (lambda: _drop_line(tf.nvidia_smi_long(n_polls=20)[0], 1 + 5 * 8 + 3), r"GPU rows are inconsistent: GPU '3'.*19 rows"),
    # the same GPU twice in a poll (and another missing): rows out of order
    (lambda: _swap_lines(tf.nvidia_smi_long(n_polls=20)[0], 1 + 5 * 8 + 7, 1 + 6 * 8 + 0),
     r"GPU rows are inconsistent at data row 48: GPU '0' reports again before GPU '7' reported"),
    # no index column and polls of changing size
    (lambda: _drop_line("\n".join(ln.split(", ", 2)[0] + ", " + ln.split(", ")[3] for ln in
                                  tf.nvidia_smi_long(n_polls=20, stall_s=0.0)[0].splitlines()), 1 + 5 * 8 + 3),
     "rows do not form polls of a fixed number of GPUs.*add the GPU index column"),
    (lambda: "timestamp,index,gpu0_power_W\n0,0,100\n1,0,100\n", "a file is either one row per GPU or one column"),
    (lambda: "t_s,power.draw.average [W]\n0,100\n1,200\n", "contradicts column 'power.draw.average \\[W\\]'"),
    (lambda: "t_s,p_gpu_w [V]\n0,100\n1,200\n", "no power column"),
])
def test_inconsistent_files_exit_2_at_validate(tmp_path, capsys, make, match):
    trace = _write(tmp_path, make())
    job = 'trace_sensor = "instant"' if "average" in match else ""
    rc = main(["validate", str(_toml(tmp_path, trace, job=job))])
    err = capsys.readouterr().err
    assert rc == 2
    assert "jobs.0.trace_file" in err and "trace.csv" in err
    import re
    assert re.search(match, err), err


def test_run_gives_the_same_message_as_validate(tmp_path, capsys):
    trace = _write(tmp_path, _drop_line(tf.nvidia_smi_long(n_polls=20)[0], 1 + 5 * 8 + 3))
    scen = str(_toml(tmp_path, trace))
    assert main(["validate", scen]) == 2
    msg_validate = capsys.readouterr().err
    assert main(["trace", scen, "--out", str(tmp_path / "t.csv")]) == 2
    assert capsys.readouterr().err == msg_validate


@pytest.mark.parametrize("scale, gpn, text, match", [
    ("per_node", 4, tf.nvidia_smi_long(n_polls=10)[0], "holds 8 GPUs' power.*gpus_per_node = 4"),
    ("per_node", 8, "timestamp, power.draw [W]\n2025/01/01 00:00:00.000, 300 W\n2025/01/01 00:00:00.100, 310 W\n",
     "is one GPU's power; trace_scale = 'per_node'"),
    ("per_gpu", 8, "t_s,p_node_w\n0,4000\n1,2000\n", "is a node's power; set trace_scale = 'per_node'"),
    ("per_gpu", 8, "t_s,power [mW]\n0,300\n1,200\n", "below half the GPU's idle power"),
])
def test_scale_must_fit_the_columns(tmp_path, scale, gpn, text, match):
    with pytest.raises(ScenarioError, match=match):
        load_trace(_write(tmp_path, text), tdp_w=700.0, idle_w=75.0, scale=scale, gpus_per_node=gpn)


def test_per_node_sums_a_whole_node(tmp_path):
    text, exp = tf.nvidia_smi_long(n_polls=10)
    tr = load_trace(_write(tmp_path, text), tdp_w=700.0, scale="per_node", gpus_per_node=8)
    np.testing.assert_allclose(tr.p_frac * 700.0, exp["p_mean_w"], atol=1e-9)


@pytest.mark.parametrize("raw, name, unit", [
    ("power.draw [W]", "power.draw", "W"), (" Power (mW) ", "power", "mW"), ("Time", "time", None),
    ("time [ms]", "time", "ms"), ("GPU0 Power W", "gpu0_power_w", None), ("utilization.gpu [%]", "utilization.gpu_[%]", None),
])
def test_normalize_header(raw, name, unit):
    assert normalize_header(raw) == (name, unit)


def test_units_in_headers_are_applied(tmp_path):
    tr = load_trace(_write(tmp_path, "time [ms],power [mW]\n0,300000\n100,200000\n"), tdp_w=700.0)
    assert np.allclose(tr.t_s, [0.0, 0.1]) and np.allclose(tr.p_frac * 700.0, [300.0, 200.0])
    tr = load_trace(_write(tmp_path, "t_s,gpu_0_power,gpu_1_power\n0,100,300\n1,200,400\n"), tdp_w=700.0)
    assert tr.info.n_gpus == 2 and np.allclose(tr.p_frac * 700.0, [200.0, 300.0])


def test_instant_column_wins_over_averaged():
    lay, _ = classify_columns(["timestamp", "index", "power.draw [W]", "power.draw.instant [W]"])
    assert lay.power[0].raw == "power.draw.instant [W]"


@pytest.mark.parametrize("name, avg", [
    ("NVIDIA H100 80GB HBM3", True), ("NVIDIA A100-SXM4-40GB", True), ("gb200", True), ("NVIDIA L40S", True),
    ("NVIDIA GeForce GTX TITAN X", False), ("Tesla V100-SXM2-32GB", False), ("Tesla T4", False), ("Mystery GPU", None),
])
def test_gpu_generation(name, avg):
    assert gpu_averages_power(name) is avg


@pytest.mark.parametrize("text, kwargs, sensor", [
    ("timestamp, index, name, power.draw [W]\n2025/01/01 00:00:00.000, 0, NVIDIA H100 80GB HBM3, 300 W\n"
     "2025/01/01 00:00:00.100, 0, NVIDIA H100 80GB HBM3, 310 W\n", {}, "average_1s"),
    ("timestamp, power.draw [W]\n2025/01/01 00:00:00.000, 300 W\n2025/01/01 00:00:00.100, 310 W\n",
     {"gpu_model": "titan x"}, "instant"),
    ("timestamp, power.draw [W]\n2025/01/01 00:00:00.000, 300 W\n2025/01/01 00:00:00.100, 310 W\n",
     {"gpu_model": "h100"}, "average_1s"),
    ("t_s,power.draw.instant [W]\n0,300\n0.1,310\n", {"gpu_model": "h100"}, "instant"),
    ("# gpu: NVIDIA H100 80GB HBM3\n# sensor: instant (NVML_FI_DEV_POWER_INSTANT)\nt_s,gpu0_power_W\n0,300\n0.1,310\n",
     {}, "instant"),
    ("t_s,p_gpu_w\n0,300\n0.1,310\n", {"sensor": "average_1s"}, "average_1s"),
])
def test_sensor_auto_and_explicit(tmp_path, text, kwargs, sensor):
    assert load_trace(_write(tmp_path, text), tdp_w=700.0, **kwargs).info.sensor == sensor


BAND = "max_band_peak_mw = 1.0\nband_min_hz = 0.1\nband_max_hz = 20.0"


def test_averaged_trace_under_band_limit_warns_at_validate(data_dir, tmp_path, capsys):
    scen = _toml(tmp_path, data_dir / "nvidia_smi_8xh100_jitter_stall.csv", spec=BAND)
    assert main(["validate", str(scen)]) == 0
    out = capsys.readouterr()
    assert "8 GPU(s), grouped by 'index'; 80 polls, median interval 100 ms" in out.out
    assert "sensor average_1s" in out.out
    assert "content above ~0.5 Hz cannot be seen" in out.err and "max_band_peak_mw (0.1-20 Hz)" in out.err


def test_instant_trace_and_slow_limits_do_not_warn_about_the_sensor(data_dir, tmp_path, capsys):
    scen = _toml(tmp_path, data_dir / "nvidia_smi_2xtitanx.csv", spec=BAND)
    assert main(["validate", str(scen)]) == 0
    assert "0.5 Hz" not in capsys.readouterr().err
    scen = _toml(tmp_path, data_dir / "nvidia_smi_8xh100_jitter_stall.csv", spec="max_ramp_mw_per_min = 5.0")
    assert main(["validate", str(scen)]) == 0
    assert "0.5 Hz" not in capsys.readouterr().err


def test_sampling_gap_and_coverage_warnings(tmp_path, capsys):
    trace = _write(tmp_path, tf.time_power()[0])              # 250 ms polls, 10 s
    scen = _toml(tmp_path, trace, spec=BAND, job="trace_loop = false", horizon_s=20.0)
    assert main(["validate", str(scen)]) == 0
    err = capsys.readouterr().err
    assert "polls every 250 ms, so content above 2 Hz cannot be seen" in err
    assert "covers 10 s of the 20 s the job runs" in err and "idle after its end" in err


def test_run_lists_the_sensor_warning_in_events_and_report(data_dir, tmp_path):
    from facility.config import load_scenario
    from facility.simulate import run_scenario

    scen = _toml(tmp_path, data_dir / "nvidia_smi_8xh100_jitter_stall.csv", spec=BAND, horizon_s=10.0, dt_s=0.025)
    res = run_scenario(load_scenario(scen), out_dir=tmp_path / "out", plots=False)
    warn = [e for e in res.events if e["kind"] == "warning"]
    assert any("content above ~0.5 Hz cannot be seen" in e["detail"] for e in warn)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "content above ~0.5 Hz cannot be seen" in html


def test_calibrated_h100_archetype_reproduces_the_measured_levels():
    """llm_pretrain_h100: iteration mean near 0.78 TDP (what the 1-s-averaged H100 logs show),
    checkpoints near 160 W, not idle; an explicit p_high_frac still wins."""
    job = {"name": "llm", "n_gpus": 8, "gpu": "h100", "workload": "square", "archetype": "llm_pretrain_h100",
           "checkpoint_every_s": 5.0, "checkpoint_s": 1.0}
    prof = generate_load(make_scenario(job, horizon_s=10.0, dt_s=0.005))
    p, t = prof.p_gpu_w[0], prof.t_s
    ckpt = ((t >= 5.0) & (t < 6.0)) | (t >= 10.0)
    assert p[~ckpt].mean() / 700.0 == pytest.approx(0.78, abs=0.005)
    assert np.allclose(p[(t >= 5.0) & (t < 6.0 - 1e-9)], 0.23 * 700.0)
    assert p.max() == pytest.approx(0.82 * 700.0)
    prof = generate_load(make_scenario(dict(job, p_high_frac=1.0), horizon_s=10.0, dt_s=0.005))
    assert prof.p_gpu_w.max() == pytest.approx(700.0)


def test_docs_list_the_header_table():
    from pathlib import Path

    from facility.workload.trace_format import spellings_table

    doc = (Path(__file__).resolve().parents[2] / "docs" / "workload.md").read_text()
    assert spellings_table() in doc, "docs/workload.md: paste facility.workload.trace_format.spellings_table()"
