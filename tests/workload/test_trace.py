"""Trace replay: column mapping, scaling, resampling without aliasing, looping, errors."""

from __future__ import annotations

import numpy as np
import pytest

from facility.errors import ScenarioError
from facility.workload import generate_load, read_trace
from tests.workload.conftest import make_scenario


def _trace_job(path, **kw):
    job = {"name": "tr", "n_gpus": 64, "gpu": "h100", "workload": "trace",
           "trace_file": str(path)}
    job.update(kw)
    return job


def test_read_our_columns(data_dir):
    t, p = read_trace(data_dir / "synthetic_trace_p_gpu_w.csv", tdp_w=700.0)
    assert t.size == 800 and t[0] == 0 and t[-1] == pytest.approx(7.99)
    assert set(np.round(p * 700, 6)) == {650.0, 150.0}


def test_read_nvidia_smi_with_units_and_two_gpus(data_dir):
    t, p = read_trace(data_dir / "synthetic_nvidia_smi.csv", tdp_w=700.0)
    assert t.size == 40                                  # two GPUs per timestamp averaged
    assert np.allclose(np.diff(t), 0.1)
    assert np.allclose(p[:10] * 700, 600.0) and np.allclose(p[10:20] * 700, 200.0)


def test_read_dcgm_per_node(data_dir):
    t, p = read_trace(data_dir / "synthetic_dcgm_node.csv", tdp_w=1000.0, scale="per_node",
                      gpus_per_node=8)
    assert np.allclose(p * 1000, 100.0 + 100.0 * t)       # 100 W -> 600 W over 5 s


def test_normalized_scale(tmp_path):
    f = tmp_path / "n.csv"
    f.write_text("time,p_frac\n0,0.5\n1,0.25\n")
    t, p = read_trace(f, tdp_w=700.0, scale="normalized")
    assert np.array_equal(p, [0.5, 0.25])
    with pytest.raises(ScenarioError, match="normalized"):
        read_trace(f, tdp_w=700.0, scale="per_gpu")


def test_replay_exact_at_native_step_and_looped(data_dir):
    s = make_scenario(_trace_job(data_dir / "synthetic_trace_p_gpu_w.csv"), horizon_s=20.0)
    prof = generate_load(s)
    p = prof.p_gpu_w[0]
    t = prof.t_s
    expected = np.where(np.mod(t + 1e-9, 2.0) < 1.4, 650.0, 150.0)
    assert np.allclose(p, expected)                       # looped past 8 s
    assert np.all(prof.p_gpu_w == p)
    assert prof.compute[0].mean() == pytest.approx(0.7)


def test_replay_without_loop_goes_idle(data_dir):
    s = make_scenario(_trace_job(data_dir / "synthetic_trace_p_gpu_w.csv", trace_loop=False,
                                 start_s=1.0), horizon_s=12.0)
    prof = generate_load(s)
    t, p = prof.t_s, prof.p_gpu_w[0]
    assert np.all(p[t < 1.0 - 1e-9] == 75.0)
    assert np.all(p[t >= 9.0 - 1e-9] == 75.0)             # 8 s trace from 1 s
    assert np.allclose(p[(t >= 1.0 - 1e-9) & (t < 2.4 - 1e-9)], 650.0)
    assert not prof.running[0, t >= 9.0 - 1e-9].any()


def test_upsampling_interpolates_linearly(data_dir):
    s = make_scenario(_trace_job(data_dir / "synthetic_dcgm_node.csv", trace_scale="per_node",
                                 gpu="b200", trace_loop=False), horizon_s=5.0, dt_s=0.01)
    p = generate_load(s).p_gpu_w[0]
    t = np.arange(500) * 0.01
    assert np.allclose(p, 100.0 + 100.0 * t)


def test_downsampling_does_not_alias(tmp_path):
    # 70 Hz at 1 kHz replayed at 10 ms (Nyquist 50 Hz): plain sampling would show it at 30 Hz
    tt = np.arange(20_000) * 0.001
    pw = 400.0 + 200.0 * np.sin(2 * np.pi * 70.0 * tt)
    f = tmp_path / "fast.csv"
    np.savetxt(f, np.column_stack([tt, pw]), delimiter=",", header="t_s,p_gpu_w", comments="")
    s = make_scenario(_trace_job(f), horizon_s=20.0, dt_s=0.01)
    p = generate_load(s).p_gpu_w[0]
    core = p[200:-200]
    assert core.mean() == pytest.approx(400.0, rel=1e-3)
    assert np.ptp(core) < 0.02 * 400.0                    # naive sampling: 2 x 200 W
    # a 5 Hz component passes
    pw2 = 400.0 + 200.0 * np.sin(2 * np.pi * 5.0 * tt)
    np.savetxt(f, np.column_stack([tt, pw2]), delimiter=",", header="t_s,p_gpu_w", comments="")
    p2 = generate_load(s).p_gpu_w[0][200:-200]
    assert np.ptp(p2) == pytest.approx(400.0, rel=0.02)


@pytest.mark.parametrize("text, match", [
    ("a,b\n1,2\n3,4\n", "no time column; found 'a', 'b'"),
    ("t_s,volts\n1,2\n3,4\n", "no power column"),
    ("t_s,p_gpu_w\n0,100\n", "at least 2 samples"),
    ("t_s,p_gpu_w\n0,100\n1,abc\n", "'p_gpu_w' has 1 non-numeric"),
    ("t_s,p_gpu_w\n1,100\n0,100\n", "decreases"),
    ("t_s,p_gpu_w\n0,100\n1,-5\n", "negative power"),
    ("t_s,p_gpu_w\n0,100\n1,5000\n", "check trace_scale"),
    ("", "not a readable CSV"),
])
def test_malformed_traces_name_file_and_problem(tmp_path, text, match):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(ScenarioError, match=match) as exc:
        read_trace(f, tdp_w=700.0)
    assert "bad.csv" in str(exc.value)


def test_missing_trace_file(tmp_path):
    with pytest.raises(ScenarioError, match="nope.csv'?: no such trace file"):
        read_trace(tmp_path / "nope.csv", tdp_w=700.0)


def test_trace_with_phase_offsets_shifts_groups(data_dir):
    s = make_scenario(_trace_job(data_dir / "synthetic_trace_p_gpu_w.csv", n_gpus=320,
                                 phase_offset_s=0.05), horizon_s=10.0, seed=2)
    prof = generate_load(s)
    p = prof.p_gpu_w
    assert p.shape[0] == 10 and not np.all(p == p[0])
    assert p.min() >= 150.0 - 1e-6 and p.max() <= 650.0 + 1e-6   # linear interpolation only
    # every group keeps the trace's duty (70 % of the time above the midpoint)
    assert np.allclose(prof.compute.mean(axis=1), 0.7, atol=0.02)
