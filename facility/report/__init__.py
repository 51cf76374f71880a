"""Run outputs: metrics.json, timeseries.parquet, report.html with PNG plots, manifest.

The names below load on first use (PEP 562): the CLI's output checks need only the light
modules (:mod:`facility.report.outdir`, :mod:`~facility.report.staging`,
:mod:`~facility.report.claim`), which must not wait for the report's writers (pandas, the
metrics, the electrical and grid-impact rows).
"""

import importlib

_WHERE = {
    "atomic_dir": "io",
    "write_outputs": "io",
    "write_json": "io",
    "render_report": "html",
}

__all__ = ["atomic_dir", "write_outputs", "write_json", "render_report"]


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"facility.report.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'facility.report' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
