"""Run outputs: metrics.json, timeseries.parquet, report.html with PNG plots, manifest.

The names below load on first use (PEP 562): the CLI's output checks need only the light
modules (:mod:`facility.report.outdir`, :mod:`~facility.report.staging`,
:mod:`~facility.report.claim`), which must not wait for the report's writers (pandas, the
metrics, the electrical and grid-impact rows).
"""

from facility import lazy_face

_WHERE = {
    "atomic_dir": "io",
    "write_outputs": "io",
    "write_json": "io",
    "render_report": "html",
}

__all__ = ["atomic_dir", "write_outputs", "write_json", "render_report"]


__getattr__, __dir__ = lazy_face(__name__, _WHERE)
