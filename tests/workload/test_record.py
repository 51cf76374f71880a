"""`facility record` with a fake NVML module: the file it writes replays unchanged; no GPU -> exit 2."""

from __future__ import annotations

import sys
import time
import types

import numpy as np
import pytest

from facility.cli import main
from facility.workload.trace import load_trace


class _Err(Exception):
    pass


def fake_nvml(n_gpus=2, *, instant=True, init_error=None, name="NVIDIA H100 80GB HBM3"):
    """A stand-in for ``pynvml``: GPU i draws 300 + 100 i W, plus 200 W while the wall clock's
    tenth of a second is even (a 5 Hz square wave), through the API calls the recorder uses.
    The phase is read when GPU 0 is, and every GPU of that poll sees it (one job's GPUs move
    together; reading the clock per GPU let an edge fall between two reads of one poll, a
    poll of 450 W that the test below could not expect, now and then on a busy machine)."""
    m = types.ModuleType("pynvml")
    m.NVMLError = _Err
    m.NVML_FI_DEV_POWER_INSTANT = 186
    m.calls = {"fields": 0, "usage": 0, "shutdown": 0}

    def init():
        if init_error:
            raise _Err(init_error)

    phase = {"high": True}

    def power_mw(i):
        if i == 0:
            phase["high"] = int(time.monotonic() * 10) % 2 == 0
        return int(1000 * (300 + 100 * i + (200 if phase["high"] else 0)))

    def fields(h, ids):
        m.calls["fields"] += 1
        assert ids == [186]
        ok = 0 if instant else 3      # 3 = NVML_ERROR_NOT_SUPPORTED
        return [types.SimpleNamespace(nvmlReturn=ok, valueType=1, value=types.SimpleNamespace(uiVal=power_mw(h)))]

    def usage(h):
        m.calls["usage"] += 1
        return power_mw(h)

    def shutdown():
        m.calls["shutdown"] += 1

    m.nvmlInit = init
    m.nvmlShutdown = shutdown
    m.nvmlDeviceGetCount = lambda: n_gpus
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: name.encode()
    m.nvmlDeviceGetUUID = lambda h: f"GPU-{h:08d}"
    m.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    m.nvmlSystemGetNVMLVersion = lambda: "12.550.54.15"
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700000
    m.nvmlDeviceGetFieldValues = fields
    m.nvmlDeviceGetPowerUsage = usage
    return m


SLEEP = [sys.executable, "-c", "import time; time.sleep(0.6)"]


def test_record_writes_a_trace_that_replays(tmp_path, monkeypatch, capsys):
    nv = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    out = tmp_path / "rec.csv"
    assert main(["record", "--out", str(out), "--interval-ms", "20", "--", *SLEEP]) == 0
    text = out.read_text()
    assert "# gpu: NVIDIA H100 80GB HBM3 (x2)" in text and "# driver: 550.54.15" in text
    assert "# sensor: instant (NVML field NVML_FI_DEV_POWER_INSTANT" in text
    assert "t_s,gpu0_power_W,gpu1_power_W" in text and nv.calls["shutdown"] == 1
    tr = load_trace(out, tdp_w=700.0, gpu_model="h100")
    assert tr.info.n_gpus == 2 and tr.info.sensor == "instant" and tr.info.sensor_reason.startswith("'# sensor")
    assert tr.info.n_polls >= 15 and tr.info.median_interval_s == pytest.approx(0.02, rel=0.25)
    # per poll: mean of 300 + 0/200 and 400 + 0/200 W -> 350 or 550 W, nothing in between
    w = np.round(tr.p_frac * 700.0, 6)
    assert set(w) <= {350.0, 550.0} and {350.0, 550.0} <= set(w)
    assert tr.t_s[-1] >= 0.6
    # and `facility trace` replays it on a scenario
    scen = tmp_path / "s.toml"
    scen.write_text(f'name = "rec"\n[time]\nhorizon_s = 2.0\ndt_s = 0.01\n[[jobs]]\nname = "j"\nn_gpus = 8\n'
                    f'gpu = "h100"\nworkload = "trace"\ntrace_file = "{out}"\n')
    assert main(["trace", str(scen), "--out", str(tmp_path / "t.csv")]) == 0
    import pandas as pd
    p_gpu_w = pd.read_csv(tmp_path / "t.csv")["p_gpu_mw"].to_numpy() * 1e6 / 8
    assert p_gpu_w.min() >= 350.0 - 1e-6 and p_gpu_w.max() <= 550.0 + 1e-6
    assert "wrote" in capsys.readouterr().out


def test_fallback_to_power_usage_is_an_averaged_sensor(tmp_path, monkeypatch):
    nv = fake_nvml(instant=False)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    out = tmp_path / "rec.csv"
    assert main(["record", "--out", str(out), "--", sys.executable, "-c", "pass"]) == 0
    assert nv.calls["usage"] > 0
    assert "# sensor: average_1s (nvmlDeviceGetPowerUsage" in out.read_text()
    assert load_trace(out, tdp_w=700.0).info.sensor == "average_1s"


def test_failing_command_still_writes_the_trace_and_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    out = tmp_path / "rec.csv"
    assert main(["record", "--out", str(out), "--", sys.executable, "-c", "import sys; sys.exit(3)"]) == 1
    assert "# exit_status: 3" in out.read_text()
    assert "exited with status 3" in capsys.readouterr().err


@pytest.mark.parametrize("module, match", [
    (None, "pip install 'facility\\[record\\]'"),
    (fake_nvml(init_error="NVML Shared Library Not Found"), "NVML cannot start \\(NVML Shared Library Not Found\\)"),
    (fake_nvml(init_error="Driver Not Loaded"), "no NVIDIA driver or GPU"),
    (fake_nvml(n_gpus=0), "NVML sees no GPU"),
])
def test_no_gpu_or_driver_exits_2(tmp_path, monkeypatch, capsys, module, match):
    monkeypatch.setitem(sys.modules, "pynvml", module)   # None: `import pynvml` raises ImportError
    out = tmp_path / "rec.csv"
    assert main(["record", "--out", str(out), "--", sys.executable, "-c", "pass"]) == 2
    import re
    assert re.search(match, capsys.readouterr().err)
    assert not out.exists()


def test_record_needs_a_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    assert main(["record", "--out", str(tmp_path / "r.csv")]) == 2
    assert "give the command to run after --" in capsys.readouterr().err
    assert main(["record", "--out", str(tmp_path / "r.csv"), "--", "no-such-program-xyz"]) == 2
    assert "cannot start 'no-such-program-xyz'" in capsys.readouterr().err


def test_existing_out_file_is_refused_before_the_command_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    out = tmp_path / "rec.csv"
    out.write_text("keep me\n")
    marker = tmp_path / "ran"
    cmd = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    assert main(["record", "--out", str(out), "--", *cmd]) == 2
    assert "the file exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "keep me\n" and not marker.exists()
    # a user's file is not replaced, also with --force (no sidecar says facility wrote it)
    assert main(["record", "--out", str(out), "--force", "--", *cmd]) == 2
    assert "facility did not write it" in capsys.readouterr().err
    assert out.read_text() == "keep me\n" and not marker.exists()
    out.unlink()
    assert main(["record", "--out", str(out), "--", *cmd]) == 0
    marker.unlink()
    assert main(["record", "--out", str(out), "--force", "--", *cmd]) == 0   # facility's own: replaced
    assert marker.exists() and out.read_text().startswith("# facility record")
