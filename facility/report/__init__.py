"""Run outputs: metrics.json, timeseries.parquet, report.html with PNG plots, manifest."""

from facility.report.io import atomic_dir, write_outputs, write_json
from facility.report.html import render_report

__all__ = ["atomic_dir", "write_outputs", "write_json", "render_report"]
