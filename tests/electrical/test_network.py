"""Network builder: topology, default ratings, types, errors, export."""

import numpy as np
import pandapower as pp
import pytest

from facility.electrical.checks import check_grid as _check_grid
from facility.scenario.resolve import loaded_library
from facility.electrical.network import build_network, export_network
from facility.errors import ScenarioError

from .conftest import scenario


def test_topology_and_default_ratings():
    net = build_network(scenario(grid={"n_trafos": 2}), np.array([10.0, 30.0]))
    n = net.net
    assert len(n.bus) == 2 + 1 + 2  # source, pcc, mv, 2 lv
    assert len(n.trafo) == 2 + 2 and len(n.load) == 2 and len(n.ext_grid) == 1 and len(n.impedance) == 1
    assert net.trafo_sn_mva == pytest.approx(1.25 * 40.0 / 2)
    assert net.lv_trafo_sn_mva == pytest.approx([12.5, 37.5])
    assert net.ups_sn_mva == pytest.approx([12.5, 37.5])
    # iron losses default: 0.05 % of the rating
    assert n.trafo.pfe_kw.iat[0] == pytest.approx(0.0005 * 25.0 * 1e3)
    assert not net.has_bess and net.storage_index is None


def test_bess_on_its_own_transformer():
    sc = scenario(bess={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 20.0})
    net = build_network(sc, np.array([50.0]))
    assert net.has_bess and net.bess_trafo_sn_mva == pytest.approx(50.0)
    tr = net.net.trafo
    row = tr[tr.name == "bess"].iloc[0]
    assert row.hv_bus == net.bus["mv"] and row.lv_bus == net.bus["bess"]


def test_types_supply_ratings():
    sc = scenario(grid={"trafo_type": "sub_230_34p5_200mva", "lv_trafo_type": "pad_34p5_0p48_3mva"})
    net = build_network(sc, np.array([10.0, 2.0]))
    assert net.trafo_sn_mva == 200.0
    # 1.25 x 10 MW / 3 MVA -> 5 parallel units; 1.25 x 2 / 3 -> 1
    assert net.lv_trafo_sn_mva == pytest.approx([15.0, 3.0])
    assert list(net.net.trafo.parallel.iloc[1:3]) == [5, 1]


def check_grid(s):
    """The grid's checks on the entries the scenario names, loaded as resolve loads them."""
    return _check_grid(s, loaded_library(s))


def test_type_conflict_and_unknown_type():
    with pytest.raises(ScenarioError, match="conflicts with grid.trafo_type"):
        build_network(scenario(grid={"trafo_type": "sub_230_34p5_200mva", "trafo_sn_mva": 50.0}), np.array([10.0]))
    with pytest.raises(ScenarioError, match="unknown transformer type"):
        build_network(scenario(grid={"trafo_type": "nope"}), np.array([10.0]))


def test_rating_far_below_peak_fails_to_build():
    with pytest.raises(ScenarioError, match="cannot carry the peak site load"):
        build_network(scenario(grid={"trafo_sn_mva": 10.0}), np.array([30.0]))
    with pytest.raises(ScenarioError, match="lv_trafo_sn_mva"):
        build_network(scenario(grid={"lv_trafo_sn_mva": 5.0}), np.array([30.0]))


def test_check_grid_catches_small_ratings():
    big = {"n_gpus": 100_000, "gpu": "h100"}  # ~ 100k x 700 W x 1.3 x 1.2 = 109 MW
    from facility.config.schema import Scenario

    s = Scenario(jobs=[big], grid={"trafo_sn_mva": 20.0})
    assert any("trafo_sn_mva" in p for p in check_grid(s))
    s = Scenario(jobs=[big], grid={"lv_trafo_sn_mva": 20.0})
    assert any("lv_trafo_sn_mva" in p for p in check_grid(s))
    s = Scenario(jobs=[big], grid={"trafo_type": "sub_230_34p5_100mva", "trafo_vkr_percent": 1.0})
    assert any("conflicts" in p for p in check_grid(s))
    assert check_grid(Scenario(jobs=[big], grid={"trafo_sn_mva": 150.0})) == []


def test_tables_keep_pandapower_dtypes(site_net):
    """Built with vectorized creators (and the ext_grid shim): the element tables carry the
    dtypes pandapower's own creators give, under pandas 2 and 3 alike."""
    n = site_net.net
    for table in ("bus", "ext_grid", "impedance", "trafo", "load", "storage"):
        if len(n[table]):
            assert n[table]["in_service"].dtype == bool, table
            assert n[table]["in_service"].all(), table
    assert n.trafo.hv_bus.dtype.kind in "iu" and n.load.bus.dtype.kind in "iu"
    assert list(n.bus.name[:3]) == ["source", "pcc", "mv"]
    assert n.ext_grid.bus.iat[0] == site_net.bus["source"]
    # the source impedance is symmetric, as create_impedance makes it by default
    assert n.impedance.rtf_pu.iat[0] == n.impedance.rft_pu.iat[0]
    assert n.impedance.xtf_pu.iat[0] == n.impedance.xft_pu.iat[0]


def test_export_names_pandas_classes_every_pandapower_reads(tmp_path, site_net):
    """pandas 3 says DataFrame.__module__ == "pandas"; pandapower <= 3.1 reads only
    "pandas.core.frame" and would silently load dicts: the export always writes the latter."""
    import json

    path = tmp_path / "net.json"
    export_network(site_net, path)
    text = path.read_text()
    mods = {(d["_class"], d["_module"]) for d in _objects(json.loads(text)) if d.get("_class") in ("DataFrame", "Series")}
    assert ("DataFrame", "pandas.core.frame") in mods
    assert all(m != "pandas" for _, m in mods)
    back = pp.from_json_string(text)
    assert type(back.bus).__name__ == "DataFrame" and len(back.bus) == len(site_net.net.bus)


def _objects(obj):
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _objects(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _objects(v)


def test_export_roundtrip(tmp_path, site_net):
    path = tmp_path / "sub" / "net.json"
    export_network(site_net, path)
    back = pp.from_json(str(path))
    assert len(back.bus) == len(site_net.net.bus)
    pp.runpp(back, numba=False)
    # exported loads are the UPS input at the feeders' peak: PCC draws more than 4 x 30 MW
    assert -back.res_impedance.p_to_mw.iat[0] > 120.0


def test_exported_network_is_the_peak_step(tmp_path, site_net):
    """runpp on the exported network reproduces run_power_flow at the feeders' peaks."""
    from facility.electrical.powerflow import run_power_flow

    path = tmp_path / "net.json"
    export_network(site_net, path)
    back = pp.from_json(str(path))
    pp.runpp(back, tolerance_mva=1e-10, numba=False)
    res = run_power_flow(site_net, np.full((1, 4), 30.0))
    assert -back.res_impedance.p_to_mw.iat[0] == pytest.approx(res.p_pcc_mw[0], abs=1e-6)
    assert back.res_bus.vm_pu.drop(index=site_net.bus["source"]).min() == pytest.approx(res.vm_min_pu[0], abs=1e-8)


def test_validation_does_not_import_pandapower():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from facility.config.schema import Scenario\n"
        "from facility.electrical.checks import check_grid\n"
        "from facility.scenario import resolve\n"
        "from facility.scenario.resolve import loaded_library\n"
        "s = Scenario(jobs=[{'n_gpus': 10}], grid={'trafo_type': 'sub_230_34p5_100mva', 'ups_type': 'none'})\n"
        "assert check_grid(s, loaded_library(s)) == [], check_grid(s, loaded_library(s))\n"
        "resolve(s)\n"
        "assert 'pandapower' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
