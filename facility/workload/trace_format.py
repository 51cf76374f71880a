"""What a measured GPU power file holds: header spellings, layout, units and sensor.

One table (:data:`SPELLINGS`) maps every accepted header to its role at this boundary.
Headers are compared after :func:`normalize_header`: case and surrounding spaces ignored,
inner spaces and hyphens read as ``_``, a trailing unit in brackets or parentheses
(``power.draw [W]``, ``Power (mW)``, ``time [ms]``) split off and applied.

Layouts (:func:`classify_columns`):

``long``
    one power column; each row is one GPU (or one node) at one time. Rows of one poll of a
    multi-GPU log are grouped by the GPU id column(s) (nvidia-smi ``index``, DCGM ``gpu``,
    ``uuid``, ``pci.bus_id``, with ``hostname`` for multi-node files), or, without one, by
    their position in nvidia-smi's fixed GPU order (:mod:`facility.workload.trace_polls`).
``wide``
    one power column per GPU (``gpu0_power_W``, ``gpu_3_power``, ``power_gpu2``,
    ``power.draw [W]`` repeated once per GPU); each row is one poll.

Sensor (:func:`column_sensor`, :func:`gpu_averages_power`): NVML's ``power.draw`` /
``nvmlDeviceGetPowerUsage`` / ``DCGM_FI_DEV_POWER_USAGE`` is a 1-second average on Ampere and
newer GPUs and an instantaneous reading on older ones; ``power.draw.instant`` /
``DCGM_FI_DEV_POWER_USAGE_INSTANT`` are instantaneous, ``power.draw.average`` averaged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from facility.config.files import shown
from facility.errors import ScenarioError

__all__ = [
    "SPELLINGS",
    "UNIT_FACTORS",
    "CELL_POWER_UNITS",
    "CELL_TIME_UNITS",
    "Column",
    "Layout",
    "normalize_header",
    "classify_columns",
    "column_sensor",
    "column_unit",
    "split_cell_units",
    "first_bad_cell",
    "gpu_averages_power",
    "parse_header_block",
    "polls_by_id",
    "spellings_table",
]

#: Accepted headers (normalized) -> (role, detail). Roles: ``time`` (detail: seconds per unit),
#: ``power`` (detail: (W per unit, 'gpu' | 'node' | 'any', sensor)), ``frac`` (fraction of TDP),
#: ``gpu_id`` (part of the key that names a GPU), ``gpu_name`` (model name, for the sensor).
#: sensor: 'instant', 'average_1s', 'by_generation' (NVML power.draw: averaged on Ampere and
#: newer) or None (the name does not say).
SPELLINGS: dict[str, tuple[str, object]] = {
    # time [s]
    **{n: ("time", 1.0) for n in (
        "t_s", "time_s", "time_sec", "time_seconds", "seconds", "elapsed_s", "elapsed",
        "time", "t", "timestamp", "datetime", "date_time", "date", "ts", "time_stamp")},
    **{n: ("time", 1e-3) for n in ("t_ms", "time_ms", "timestamp_ms", "elapsed_ms")},
    # power [W]
    "p_gpu_w": ("power", (1.0, "gpu", None)),
    "p_node_w": ("power", (1.0, "node", None)),
    "node_power_w": ("power", (1.0, "node", None)),
    "node_power": ("power", (1.0, "node", None)),
    **{n: ("power", (1.0, "any", None)) for n in (
        "p_w", "power_w", "power_watts", "power", "watts", "gpu_power", "gpu_power_w",
        "gpu_power_watts", "power_draw", "power_draw_w")},
    # nvmlDeviceGetPowerUsage, as pynvml scripts log it (mW, or W when converted)
    **{n: ("power", (1e-3, "any", "by_generation")) for n in ("power_usage_mw", "power_mw")},
    "power_usage": ("power", (1.0, "any", "by_generation")),
    "power.draw": ("power", (1.0, "gpu", "by_generation")),
    "power.draw.instant": ("power", (1.0, "gpu", "instant")),
    "power.draw.average": ("power", (1.0, "gpu", "average_1s")),
    # DCGM fields are per device, but node totals are often logged under the same name
    "dcgm_fi_dev_power_usage": ("power", (1.0, "any", "by_generation")),
    "dcgm_fi_dev_power_usage_instant": ("power", (1.0, "any", "instant")),
    # fraction of TDP
    "p_frac": ("frac", None),
    "power_frac": ("frac", None),
    # what names a GPU (several together form the key: hostname + index)
    **{n: ("gpu_id", None) for n in (
        "index", "gpu", "gpu_index", "gpu_id", "gpuid", "device", "device_index", "device_id",
        "entity_id", "entityid", "uuid", "gpu_uuid", "pci.bus_id", "pci_bus_id", "bus_id",
        "minor_number", "hostname", "host")},
    # what model it is
    **{n: ("gpu_name", None) for n in ("name", "gpu_name", "model_name", "modelname", "product_name")},
}

#: Units accepted in brackets after a header, as written (W per unit or s per unit).
UNIT_FACTORS = {"W": 1.0, "w": 1.0, "watt": 1.0, "watts": 1.0, "Watts": 1.0, "mW": 1e-3, "kW": 1e3,
                "MW": 1e6, "s": 1.0, "sec": 1.0, "ms": 1e-3}
_TIME_UNITS = {"s", "sec", "ms"}
_POWER_UNITS = set(UNIT_FACTORS) - _TIME_UNITS
#: How messages name a power factor (W per unit): the first power unit of UNIT_FACTORS with it.
_POWER_UNIT_NAMES = {f: u for u, f in reversed(UNIT_FACTORS.items()) if u in _POWER_UNITS}

#: Unit suffixes a power cell may carry (``312.45 W``, ``0.650 kW``), W per unit, case as
#: written: ``mW`` is a milliwatt, ``MW`` a megawatt; ``mw`` / ``Mw`` say neither and are refused.
#: A cell without a suffix is in the header's unit (``power.draw [W]``, ``power_mw``).
CELL_POWER_UNITS = {"W": 1.0, "w": 1.0, "watt": 1.0, "watts": 1.0, "Watt": 1.0, "Watts": 1.0,
                    "mW": 1e-3, "kW": 1e3, "kw": 1e3, "KW": 1e3, "MW": 1e6}
#: Unit suffixes a numeric time cell may carry (``0.5 s``), s per unit.
CELL_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0}
#: a number, then optionally a unit (anything not starting like a number)
_CELL_RE = r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(\S.*?)?\s*$"

_UNIT_RE = re.compile(r"^(.*?)\s*[\[(]\s*([A-Za-z]+)\s*[\])]\s*$")
_WIDE_RES = (re.compile(r"^gpu_?(\d+)[_.](.+)$"), re.compile(r"^(.+?)[_.]gpu_?(\d+)$"))


def normalize_header(raw: str) -> tuple[str, str | None]:
    """``(normalized name, unit as written or None)`` of one header cell."""
    s = str(raw).strip()
    unit = None
    m = _UNIT_RE.match(s)
    if m:
        s, unit = m.group(1), m.group(2)
    s = re.sub(r"[\s\-]+", "_", s.strip().lower())
    return s, unit


@dataclass(frozen=True)
class Column:
    """One header cell mapped to its role."""

    position: int
    raw: str
    role: str                 # time | power | frac | gpu_id | gpu_name
    factor: float = 1.0       # s per unit (time), W per unit (power)
    per: str = "any"          # power: gpu | node | any
    sensor: str | None = None  # power: instant | average_1s | by_generation | None
    gpu: int | None = None    # wide layout: GPU number


@dataclass(frozen=True)
class Layout:
    """The columns of a file that matter and how its rows are laid out."""

    kind: str                      # long | wide
    time: Column
    power: tuple[Column, ...]      # long: one; wide: one per GPU, in GPU order
    gpu_id: tuple[Column, ...]     # long only
    gpu_name: Column | None

    @property
    def is_frac(self) -> bool:
        return self.power[0].role == "frac"


def _lookup(raw: str, position: int) -> Column | None:
    name, unit = normalize_header(raw)
    entry = SPELLINGS.get(name)
    if entry is None:
        return None
    role, detail = entry
    if role == "time":
        factor = float(detail)
        if unit is not None:
            if unit not in _TIME_UNITS:
                return None
            factor = UNIT_FACTORS[unit]
        return Column(position, raw, "time", factor=factor)
    if role == "power":
        factor, per, sensor = detail
        if unit is not None:
            if unit not in _POWER_UNITS:
                return None
            factor = UNIT_FACTORS[unit]
        return Column(position, raw, "power", factor=factor, per=per, sensor=sensor)
    return Column(position, raw, role)


def _wide(raw: str, position: int) -> Column | None:
    """A per-GPU power column such as ``gpu0_power_W`` or ``power_gpu3``."""
    name, unit = normalize_header(raw)
    for i, rx in enumerate(_WIDE_RES):
        m = rx.match(name)
        if not m:
            continue
        gpu, rest = (m.group(1), m.group(2)) if i == 0 else (m.group(2), m.group(1))
        base = _lookup(rest if unit is None else f"{rest} [{unit}]", position)
        if base is not None and base.role == "power":
            return Column(position, raw, "power", factor=base.factor, per="gpu", sensor=base.sensor, gpu=int(gpu))
    return None


def classify_columns(header: list[str]) -> tuple[Layout | None, str]:
    """Map a file's header row to a :class:`Layout`.

    Returns
    -------
    layout : Layout or None
        None when no time or no power column is found, or the columns contradict each other.
    problem : str
        Why not (empty when a layout was found).
    """
    cols = [_lookup(h, i) for i, h in enumerate(header)]
    times = [c for c in cols if c is not None and c.role == "time"]
    order = {n: k for k, n in enumerate(SPELLINGS)}
    times.sort(key=lambda c: order[normalize_header(c.raw)[0]])
    ids = tuple(c for c in cols if c is not None and c.role == "gpu_id")
    names = [c for c in cols if c is not None and c.role == "gpu_name"]
    powers = [c for c in cols if c is not None and c.role in ("power", "frac")]
    wide = [c for c in (_wide(h, i) for i, h in enumerate(header)) if c is not None]
    if not times:
        return None, "no time column"
    time = times[0]
    # the same power header repeated (one per GPU, as nvidia-smi-like loggers paste them)
    by_name: dict[str, list[Column]] = {}
    for c in powers:
        by_name.setdefault(normalize_header(c.raw)[0], []).append(c)
    repeated = [v for v in by_name.values() if len(v) > 1]
    if len(repeated) > 1:   # e.g. power.draw and power.draw.instant, each once per GPU
        instant = [v for v in repeated if v[0].sensor == "instant"]
        repeated = instant if len(instant) == 1 else repeated
    if wide or repeated:
        if wide and repeated:
            return None, "both numbered per-GPU power columns and a repeated power column"
        if ids:
            return None, (f"per-GPU power columns ({len(wide) or len(repeated[0])}) and a GPU id column "
                          f"({ids[0].raw!r}) at once: a file is either one row per GPU or one column per GPU")
        if repeated:
            if len(repeated) > 1:
                return None, "several power columns repeated"
            group = tuple(Column(c.position, c.raw, c.role, c.factor, "gpu", c.sensor, k)
                          for k, c in enumerate(repeated[0]))
        else:
            nums = [c.gpu for c in wide]
            if len(set(nums)) != len(nums):
                return None, f"per-GPU power columns name a GPU twice ({sorted(nums)})"
            group = tuple(sorted(wide, key=lambda c: c.gpu))
        if len({(c.factor, c.sensor) for c in group}) > 1:
            return None, "the per-GPU power columns differ in unit or sensor"
        return Layout("wide", time, group, (), names[0] if names else None), ""
    if not powers:
        return None, "no power column"
    # an instantaneous reading wins over an averaged one when a file holds both
    power = sorted(powers, key=lambda c: (c.sensor != "instant", order[normalize_header(c.raw)[0]]))[0]
    return Layout("long", time, (power,), ids, names[0] if names else None), ""


def column_unit(col: Column) -> str:
    """The unit a cell of a power column without a suffix is read in, as messages name it."""
    if col.role == "frac":
        return "fraction of TDP (a bare number)"
    unit = normalize_header(col.raw)[1]
    if unit is not None:
        return unit
    return _POWER_UNIT_NAMES.get(col.factor, f"{col.factor:g} W")


def split_cell_units(text: pd.Series, factor: float, units: dict[str, float] | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numbers of text cells converted by their own unit suffix, else by the column's.

    Parameters
    ----------
    text : pandas.Series
        The cells, stripped.
    factor : float
        Base units per unit of a cell without a suffix (the header's unit).
    units : dict or None
        Accepted suffixes -> base units per unit (:data:`CELL_POWER_UNITS`,
        :data:`CELL_TIME_UNITS`); None: no suffix is accepted (a fraction).

    Returns
    -------
    values : numpy.ndarray
        In base units (W, s); NaN where a cell is not a number (with or without a suffix).
    unknown : numpy.ndarray of bool
        Cells that are a number followed by a suffix that is not in ``units``.
    suffix : numpy.ndarray of object
        The suffix of each cell as written ('' where none).
    """
    parts = text.str.extract(_CELL_RE)
    num = pd.to_numeric(parts[0], errors="coerce").to_numpy(dtype=float)
    suffix = parts[1].fillna("").to_numpy(dtype=object)
    has = suffix != ""
    mult = np.full(num.shape, float(factor))
    unknown = np.zeros(num.shape, dtype=bool)
    if has.any():
        for u in pd.unique(suffix[has]):
            at = suffix == u
            f = (units or {}).get(u)
            if f is None:
                unknown |= at & np.isfinite(num)
                mult[at] = np.nan
            else:
                mult[at] = f
    return num * mult, unknown, suffix


def first_bad_cell(values: np.ndarray, unknown: np.ndarray, suffix: np.ndarray,
                   unit_refused: str) -> tuple[int, str] | None:
    """The first cell of :func:`split_cell_units`'s result that is refused, and why.

    Parameters
    ----------
    values, unknown, suffix : numpy.ndarray
        What :func:`split_cell_units` returned.
    unit_refused : str
        How a refusal of a unit goes on after ``unit 'x'`` (e.g. ``"is not a unit of time"``).

    Returns
    -------
    tuple of (int, str) or None
        ``(i, why)``: the first cell that is no number or has a unit not accepted (its index,
        0-based) and ``"unit 'x' <unit_refused>"`` or ``"not a number"``; None when every cell
        is a number.
    """
    bad = unknown | ~np.isfinite(values)
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    return i, (f"unit {suffix[i]!r} {unit_refused}" if unknown[i] else "not a number")


def column_sensor(col: Column) -> str | None:
    """What the column's name says about the sensor: 'instant', 'average_1s', 'by_generation' or None."""
    return col.sensor


#: Model-name patterns of GPUs whose NVML power.draw is a 1-s average (Ampere and newer) and of
#: those that report it instantaneously (Volta, Turing, Pascal and older).
_AVERAGING = re.compile(
    r"(\b|_)(a100|a800|a40|a30|a10g?|a16|a2|rtx\s?a\d{4}|rtx\s?30\d\d|h100|h200|h800|h20|gh200|l4|l40s?|"
    r"rtx\s?40\d\d|ada|b100|b200|b300|gb200|gb300|rtx\s?50\d\d|rtx\s?pro|ampere|hopper|blackwell)(\b|_)")
_INSTANT = re.compile(
    r"(\b|_)(v100|p100|p40|p4|t4|k80|k40|m60|titan\s?x[p]?|titan\s?v|titan\s?rtx|rtx\s?20\d\d|gtx|quadro|"
    r"volta|turing|pascal|maxwell|kepler)(\b|_)")


def gpu_averages_power(name: str | None) -> bool | None:
    """Whether NVML's ``power.draw`` of this GPU model is a 1-s average (None: unknown model)."""
    if not name:
        return None
    s = str(name).lower()
    if _AVERAGING.search(s):
        return True
    if _INSTANT.search(s):
        return False
    return None


def parse_header_block(lines: list[str]) -> dict[str, str]:
    """``# key: value`` comment lines above the header (as ``facility record`` writes) -> dict."""
    out = {}
    for line in lines:
        s = line.lstrip("#").strip()
        if ":" in s:
            k, v = s.split(":", 1)
            out[k.strip().lower()] = v.strip()
    return out


def spellings_table() -> str:
    """The header table as Markdown (docs/workload.md shows it)."""
    rows: dict[str, list[str]] = {}
    for name, (role, detail) in SPELLINGS.items():
        if role == "time":
            label = "time [s]" if detail == 1.0 else "time [ms]"
        elif role == "power":
            factor, per, sensor = detail
            whose = {"gpu": "one GPU", "node": "one node", "any": "GPU or node (trace_scale)"}[per]
            label = f"power [{'W' if factor == 1.0 else 'mW'}] of {whose}" + (f"; sensor: {sensor}" if sensor else "")
        else:
            label = {"frac": "power [frac of TDP]", "gpu_id": "GPU id (key of a GPU's rows)",
                     "gpu_name": "GPU model (sensor)"}[role]
        rows.setdefault(label, []).append(f"`{name}`")
    return "\n".join(["| role | accepted names |", "|---|---|"]
                     + [f"| {k} | {', '.join(v)} |" for k, v in rows.items()])


def polls_by_id(t: np.ndarray, p: np.ndarray, key: np.ndarray, id_name: str, where: str):
    """Rows -> polls by GPU id: (poll times (K,), power (K, n), n, dropped rows)."""
    codes, uniques = pd.factorize(key)
    n = len(uniques)
    counts = np.bincount(codes, minlength=n)
    poll = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    k_full = int(counts.min())
    dropped = 0
    if counts.max() > k_full:
        few, many = int(np.argmin(counts)), int(np.argmax(counts))
        last = poll >= k_full
        if counts.max() - k_full > 1 or np.flatnonzero(last).min() < np.flatnonzero(~last).max():
            raise ScenarioError(
                f"{where}: GPU rows are inconsistent: GPU {shown(uniques[few])} ({id_name}) has {counts[few]:,} "
                f"rows, GPU {shown(uniques[many])} has {counts[many]:,}; every poll must hold one row per GPU "
                f"({n} GPUs)")
        dropped = int(last.sum())
        keep = ~last
        t, p, codes, poll = t[keep], p[keep], codes[keep], poll[keep]
    if k_full < 2:
        raise ScenarioError(f"{where}: a trace needs at least 2 polls, found {k_full} ({n} GPUs)")
    pos = np.arange(t.size)
    first = np.full(k_full, t.size)
    last_pos = np.full(k_full, -1)
    np.minimum.at(first, poll, pos)
    np.maximum.at(last_pos, poll, pos)
    bad = np.flatnonzero(first[1:] < last_pos[:-1])
    if bad.size:
        k = int(bad[0])                       # poll k+1 starts before poll k ended
        r = int(first[k + 1])
        late = sorted({repr(str(uniques[c])) for c in codes[(poll == k) & (pos > r)]})
        raise ScenarioError(
            f"{where}: GPU rows are inconsistent at data row {r + 1}: GPU {shown(uniques[codes[r]])} reports "
            f"again before GPU {', '.join(late[:4])} reported in the poll before (a GPU missing from a "
            f"poll, or rows out of order); every poll must hold one row per GPU ({n} GPUs by {id_name})")
    mat = np.empty((k_full, n))
    mat[poll, codes] = p
    t_poll = t[first]
    return t_poll, mat, n, dropped
