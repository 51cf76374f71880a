"""Units per cell of a measured trace: a suffix is converted, or refused by name; never dropped.

Issue 52, item 2: an nvidia-smi log headed ``power.draw [W]`` with a row reading ``0.650 kW``
was read as 0.65 W (validate and run exit 0, mean 363 W instead of ~425 W).
"""

from __future__ import annotations

import datetime as dtm

import numpy as np
import pytest
import tomli_w

from facility.errors import ScenarioError
from tests.conftest import cli_in_process
from facility.workload.trace import load_trace


def _smi_log(path, cells, dt_s=0.1):
    """An id-less nvidia-smi log of one GPU whose power cells are ``cells`` (as written)."""
    t0 = dtm.datetime(2024, 5, 14, 10, 21, 33)
    rows = ["timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    for i, c in enumerate(cells):
        t = t0 + dtm.timedelta(seconds=dt_s * i)
        rows.append(f"{t:%Y/%m/%d %H:%M:%S.%f}"[:-3] + f", {c}, 100 %, 71000 MiB")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_kw_cell_in_a_watt_column_is_converted(tmp_path):
    # every other row 0.650 kW (= 650 W), the others 200 W: mean 425 W, not (0.65 + 200) / 2
    cells = ["0.650 kW" if i % 2 == 0 else "200.00 W" for i in range(200)]
    tr = load_trace(_smi_log(tmp_path / "smi.csv", cells), tdp_w=700.0)
    assert tr.info.p_mean_w == pytest.approx(425.0)
    assert tr.info.p_max_w == pytest.approx(650.0)


@pytest.mark.parametrize("cell, watts", [("312.45 W", 312.45), ("312.45W", 312.45), ("0.31245 kW", 312.45),
                                         ("312450 mW", 312.45), ("0.00031245 MW", 312.45),
                                         ("312.45 watts", 312.45), ("312.45", 312.45)])
def test_each_power_unit_is_converted(tmp_path, cell, watts):
    tr = load_trace(_smi_log(tmp_path / "smi.csv", [cell] * 20), tdp_w=700.0)
    assert tr.info.p_mean_w == pytest.approx(watts)


def test_bare_cells_take_the_headers_unit(tmp_path):
    # a [kW] header: a bare 0.3 is 300 W, a cell with its own W suffix stays in W
    f = tmp_path / "kw.csv"
    f.write_text("t_s,p_gpu_w [kW]\n" + "".join(f"{0.1 * i:.1f},{'0.3' if i % 2 else '500 W'}\n"
                                                 for i in range(20)))
    tr = load_trace(f, tdp_w=700.0)
    np.testing.assert_allclose(tr.p_frac * 700.0, [500.0 if i % 2 == 0 else 300.0 for i in range(20)])


def test_milliwatt_header_and_cells(tmp_path):
    f = tmp_path / "mw.csv"
    f.write_text("t_s,power_usage_mw\n" + "".join(f"{0.1 * i:.1f},{400000 + i}\n" for i in range(20)))
    assert load_trace(f, tdp_w=700.0).info.p_mean_w == pytest.approx(400.0095)


@pytest.mark.parametrize("cell, unit", [("650 V", "V"), ("650 A", "A"), ("650 %", "%"), ("650 mw", "mw"),
                                        ("650 kWh", "kWh")])
def test_a_unit_that_is_not_power_is_refused_by_name(tmp_path, cell, unit):
    cells = ["300 W"] * 10 + [cell] + ["300 W"] * 9
    f = _smi_log(tmp_path / "smi.csv", cells)
    with pytest.raises(ScenarioError) as exc:
        load_trace(f, tdp_w=700.0, key="jobs.0")
    msg = str(exc.value)
    for part in ("jobs.0.trace_file", "smi.csv", "data row 11", "'power.draw [W]'", repr(cell),
                 repr(unit), "in W (the header's unit)", "kW"):
        assert part in msg, (part, msg)


def test_a_unit_in_a_fraction_column_is_refused(tmp_path):
    f = tmp_path / "frac.csv"
    f.write_text("t_s,p_frac\n" + "".join(f"{0.1 * i:.1f},{'0.5 W' if i == 3 else '0.5'}\n" for i in range(10)))
    with pytest.raises(ScenarioError, match=r"data row 4 reads '0.5 W'.*unit 'W'.*fraction of TDP"):
        load_trace(f, tdp_w=700.0, scale="normalized")


def test_wide_and_dcgm_files_convert_their_cells(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text("timestamp,gpu0_power_W,gpu1_power_W\n" + "".join(
        f"2025-03-14T09:26:{i:02d},0.5 kW,300 W\n" for i in range(10)))
    assert load_trace(wide, tdp_w=700.0).info.p_mean_w == pytest.approx(400.0)
    dcgm = tmp_path / "dcgm.csv"
    dcgm.write_text("time,DCGM_FI_DEV_POWER_USAGE\n" + "".join(f"{i},{'4 kW' if i % 2 else '4000'}\n"
                                                                 for i in range(10)))
    tr = load_trace(dcgm, tdp_w=700.0, scale="per_node", gpus_per_node=8)
    assert tr.info.p_mean_w == pytest.approx(500.0)


def test_time_cells_with_units(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("t_s,p_gpu_w\n" + "".join(f"{100 * i} ms,300\n" for i in range(10)))
    np.testing.assert_allclose(load_trace(f, tdp_w=700.0).t_s, 0.1 * np.arange(10))
    f.write_text("t_s,p_gpu_w\n" + "".join(f"{i} {'kg' if i == 4 else 's'},300\n" for i in range(10)))
    with pytest.raises(ScenarioError, match=r"data row 5 reads '4 kg': unit 'kg' is not a unit of time"):
        load_trace(f, tdp_w=700.0)


def test_validate_and_run_read_the_kw_row(tmp_path):
    """The issue's case end to end: validate and run exit 0 with the converted mean; a volt
    cell makes validate exit 2 naming file, row, column, value and the unit expected."""
    cells = ["0.650 kW" if i % 2 == 0 else "200.00 W" for i in range(200)]
    trace = _smi_log(tmp_path / "smi.csv", cells)
    scen = {"name": "kw", "time": {"horizon_s": 2.0, "dt_s": 0.01},
            "jobs": [{"name": "tr", "n_gpus": 8, "gpu": "h100", "workload": "trace",
                      "trace_file": str(trace), "trace_sensor": "instant"}]}
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(scen))
    rc, err = cli_in_process(["validate", str(f)])
    assert rc == 0, err
    assert "mean 425 W" in err, err       # the trace summary validate prints
    rc, err = cli_in_process(["run", str(f), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress"])
    assert rc == 0, err
    _smi_log(trace, cells[:50] + ["650 V"] + cells[51:])
    rc, err = cli_in_process(["validate", str(f)])
    assert rc == 2 and "Traceback" not in err
    for part in ("jobs.0.trace_file", "smi.csv", "data row 51", "'power.draw [W]'", "'650 V'", "'V'", "in W"):
        assert part in err, (part, err)


def test_voltage_trace_cells_with_units(tmp_path):
    """A recorded sag (grid_events.N.trace_file) takes 'pu' and '%' per cell; other units and
    text are refused by row and value."""
    from facility.electrical.grid_events import read_voltage_trace

    f = tmp_path / "v.csv"
    f.write_text("t_s,vm_pu\n0,1\n50 ms,70 %\n0.2,0.5 pu\n0.4,0.9\n")
    t, v = read_voltage_trace(str(f), "grid_events.0.trace_file")
    np.testing.assert_allclose(t, [0.0, 0.05, 0.2, 0.4])
    np.testing.assert_allclose(v, [1.0, 0.7, 0.5, 0.9])
    f.write_text("t_s,vm_pu\n0,1\n0.05,7 kV\n0.2,0.5\n")
    with pytest.raises(ScenarioError, match=r"grid_events.0.trace_file.*vm_pu at data row 2 reads '7 kV': "
                                            r"unit 'kV' is not accepted.*in pu"):
        read_voltage_trace(str(f), "grid_events.0.trace_file")
