"""The report's grid-impact section and the replay put into it (no ANDES needed)."""

from __future__ import annotations

import json

from facility.report.grid_replay import REPLAY_BEGIN, REPLAY_END, attach_replay, replay_html

SUMMARY = {"case": "kundur/kundur_full.xlsx", "pcc_bus": "7", "observed_generator": "1", "andes_version": "2.0.0",
           "mode_set": "kundur_two_area", "window_s": [0.0, 20.0], "step_s": 0.01, "n_steps": 2000,
           "dp_peak_mw": 3.5, "pe_peak_andes_mw": 1.171, "pe_peak_modes_mw": 1.169, "pe_peak_gap_frac": 0.002,
           "pe_rms_gap_frac": 0.01, "speed_peak_andes_pu": 6.3e-5, "speed_peak_modes_pu": 6.33e-5,
           "speed_peak_gap_frac": 0.005, "speed_rms_gap_frac": 0.01, "hz_peak_andes": 0.0123,
           "hz_peak_modes": 0.0131, "hz_peak_gap_frac": 0.06, "hz_rms_gap_frac": 0.1}


def test_the_replay_replaces_the_placeholder_and_joins_the_manifest(tmp_path):
    (tmp_path / "report.html").write_text(f"<html><body><h2>Grid impact</h2>{REPLAY_BEGIN}<p>none yet</p>"
                                          f"{REPLAY_END}<h2>Events</h2></body></html>")
    (tmp_path / "manifest.json").write_text(json.dumps({"facility_output": "run",
                                                        "files": ["report.html", "manifest.json"]}))
    attach_replay(tmp_path, SUMMARY)
    text = (tmp_path / "report.html").read_text()
    assert "none yet" not in text and "Time-domain replay in ANDES" in text and "grid_replay.png" in text
    assert "1.171" in text and "1.169" in text                      # both generator swings
    assert "0.0123" in text and "0.0131" in text                    # both PCC frequency swings
    assert text.index("Time-domain replay") < text.index("<h2>Events")
    attach_replay(tmp_path, {**SUMMARY, "pe_peak_andes_mw": 2.5})   # a second replay replaces the first
    text = (tmp_path / "report.html").read_text()
    assert text.count("Time-domain replay in ANDES") == 1 and "2.5" in text
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert {"grid_replay.json", "grid_replay.csv", "grid_replay.png"} <= set(files)


def test_a_report_without_the_section_gets_one(tmp_path):
    (tmp_path / "report.html").write_text("<html><body><h2>Events</h2></body></html>")
    attach_replay(tmp_path, SUMMARY)
    text = (tmp_path / "report.html").read_text()
    assert text.index("Events") < text.index("Time-domain replay") < text.index("</body>")
    assert replay_html(SUMMARY).startswith(REPLAY_BEGIN)


def test_the_replay_writes_its_numbers_as_the_rest_of_the_report():
    """report.html's number format (report.numbers.fmt_number) in the replay's block too:
    thousands separated, small numbers as 6.3e-5, not 12345.7 rounded to 1.235e+04."""
    text = replay_html({**SUMMARY, "pe_peak_andes_mw": 12345.67, "window_s": [0.0, 36000.0]})
    assert "<td>12,346</td>" in text and "1.235e+04" not in text
    assert "0–36,000 s" in text
    assert "<td>6.3e-5</td>" in text and "e-05" not in text
