"""Turning ``--set`` items and a ``--cases`` CSV into a list of cases (override dicts).

A case is an ordered ``{key: value_text}`` dict; ``key=value_text`` is what
:func:`facility.config.apply_overrides` receives, so every value form it accepts (numbers,
bools, bare words, quoted strings, TOML arrays) works here too.

Value forms of one ``--set key=…`` item:

* ``key=v`` — one value (applied to every case);
* ``key=v1,v2,v3`` — a list; commas inside ``[…]``, ``{…}`` or quotes do not split;
* ``key=start:stop:n`` — ``n`` evenly spaced points from ``start`` to ``stop``, **both
  ends included** (``numpy.linspace``): ``1:20:5`` → 1, 5.75, 10.5, 15.25, 20. Integers
  stay integers when every point is whole (``0:20:5`` → 0, 5, 10, 15, 20).

Several ``--set`` items form their Cartesian product (the last item varies fastest). A
``--cases`` CSV adds explicit rows: its header names keys, each row is a case, an empty cell
leaves that key at the scenario's value, and an optional ``case_id`` column names the case.
CSV rows and ``--set`` lists combine as a product too (each CSV row × each ``--set`` combination).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np

from facility.config.files import MAX_CSV_BYTES, read_text
from facility.config.load import apply_overrides, parse_override
from facility.scenario import scenario_from_dict
from facility.errors import ScenarioError

__all__ = ["split_values", "expand_values", "expand_cases", "case_ids", "validate_cases", "CASE_ID_COLUMN"]

#: Optional column of a ``--cases`` CSV that names each case.
CASE_ID_COLUMN = "case_id"


def split_values(text: str) -> list[str]:
    """Split ``v1,v2,…`` at top-level commas (not inside brackets, braces or quotes).

    Examples
    --------
    >>> split_values('1,2,[3,4],"a,b"')
    ['1', '2', '[3,4]', '"a,b"']
    """
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    cur: list[str] = []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _format(v: float, as_int: bool) -> str:
    if as_int:
        return str(int(round(v)))
    out = f"{v:.12g}"
    return out if any(c in out for c in ".en") else out + ".0"


def _range(text: str, key: str) -> list[str] | None:
    """``start:stop:n`` → n points, both ends included; None when ``text`` is not a range."""
    bits = text.split(":")
    if len(bits) != 3:
        return None
    start, stop, n = (_number(b.strip()) for b in bits)
    if start is None or stop is None or n is None:
        return None
    if n != int(n) or n < 1:
        raise ScenarioError(f"--set {key}={text}: the number of points n in start:stop:n must be a "
                            f"whole number ≥ 1, got {bits[2]!r}")
    n = int(n)
    if n == 1 and start != stop:
        raise ScenarioError(f"--set {key}={text}: n = 1 point cannot include both ends "
                            f"{bits[0]} and {bits[1]}; use n ≥ 2 or a single value")
    pts = np.linspace(start, stop, n)
    ints = all("." not in b and "e" not in b.lower() for b in bits[:2])
    as_int = ints and bool(np.all(np.abs(pts - np.round(pts)) < 1e-9))
    return [_format(float(p), as_int) for p in pts]


_RANGE_HINT = ("a range is START:STOP:N — N evenly spaced points, both ends included, e.g. "
               "{key}=10:30:5 gives 10, 15, 20, 25, 30; a list is v1,v2,v3")


def _looks_like_range(text: str) -> bool:
    """``text`` has a colon and starts with two numbers (``10:30``, ``0:1:3,5``): a range meant."""
    bits = text.split(":")
    return len(bits) >= 2 and _number(bits[0].strip()) is not None and _number(bits[1].split(",")[0].strip()) is not None


def expand_values(item: str) -> tuple[str, list[str]]:
    """One ``--set key=…`` item → ``(key, [value_text, …])``.

    Raises
    ------
    ScenarioError
        No ``=``, an empty key, an empty value list or a malformed range. Text with colons
        that is not ``START:STOP:N`` of numbers stays one value (``10:00``); where the key
        needs a number, :func:`validate_cases` rejects it and shows the range form.
    """
    if "=" not in item:
        raise ScenarioError(f"--set {item!r}: expected KEY=VALUE[,VALUE…] or KEY=START:STOP:N, "
                            f"e.g. rack_storage.e_rated_mwh=0.01,0.02")
    key, _, text = item.partition("=")
    key = key.strip()
    parse_override(f"{key}=0")  # validates the key syntax
    text = text.strip()
    values = _range(text, key)
    if values is None:
        values = split_values(text)
    if any(v == "" for v in values):
        raise ScenarioError(f"--set {item!r}: empty value in the list")
    return key, values


def _read_cases_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a ``--cases`` CSV, read through the shared reader (:mod:`facility.config.files`):
    a missing, unreadable or non-UTF-8 file and malformed CSV are :class:`ScenarioError`
    naming the file and ``--cases``."""
    text = read_text(path, key="--cases", what="cases CSV", max_bytes=MAX_CSV_BYTES,
                     hint="; give --cases a readable CSV file (header = scenario keys)")
    if "\x00" in text:
        raise ScenarioError(f"--cases {path}: holds NUL bytes, so it is not a text CSV; save it "
                            "as a UTF-8 CSV (header = scenario keys)")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise ScenarioError(f"--cases {path}: empty file; expected a header row of scenario keys")
        names = [n.strip() for n in reader.fieldnames]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ScenarioError(f"--cases {path}: header repeats {', '.join(dup)}; name each key once")
        for n in names:
            if n != CASE_ID_COLUMN:
                try:
                    parse_override(f"{n}=0")
                except ScenarioError:
                    raise ScenarioError(f"--cases {path}: header cell {n!r} is not a scenario key "
                                        "(e.g. bess.e_rated_mwh)") from None
        rows = []
        for i, row in enumerate(reader, start=2):
            if None in row:
                raise ScenarioError(f"--cases {path}: line {i} has more cells than the header")
            case = {k.strip(): (v or "").strip() for k, v in row.items()}
            rows.append({k: v for k, v in case.items() if v != ""})
    except csv.Error as exc:
        raise ScenarioError(f"--cases {path}: not a readable CSV ({exc}); fix the file") from None
    if not rows:
        raise ScenarioError(f"--cases {path}: no case rows under the header")
    return rows


def expand_cases(set_items: list[str] | None, cases_csv: Path | None = None) -> list[dict[str, str]]:
    """All cases of a sweep: the Cartesian product of the ``--set`` lists (× the CSV rows).

    Parameters
    ----------
    set_items : list of str
        ``key=v1,v2`` / ``key=start:stop:n`` / ``key=v`` items (see the module docstring).
    cases_csv : pathlib.Path, optional
        CSV of explicit cases (header = keys; optional ``case_id`` column).

    Returns
    -------
    list of dict
        One ``{key: value_text}`` dict per case, CSV keys first, then ``--set`` keys in the
        order given; the last ``--set`` item varies fastest. No items and no CSV → ``[{}]``
        (one case: the scenario itself). A CSV ``case_id`` stays in the dict (it names the
        case folder, it is not an override); with several ``--set`` combinations it gets the
        combination's number appended (``base-0``, ``base-1``, …).

    Raises
    ------
    ScenarioError
        Malformed items, a key given twice, or a bad CSV.

    Examples
    --------
    >>> expand_cases(["a.x=1,2", "b.y=0:1:3"])  # doctest: +NORMALIZE_WHITESPACE
    [{'a.x': '1', 'b.y': '0.0'}, {'a.x': '1', 'b.y': '0.5'}, {'a.x': '1', 'b.y': '1.0'},
     {'a.x': '2', 'b.y': '0.0'}, {'a.x': '2', 'b.y': '0.5'}, {'a.x': '2', 'b.y': '1.0'}]
    """
    axes: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for item in set_items or ():
        key, values = expand_values(item)
        if key in seen:
            raise ScenarioError(f"--set {key}: given twice; put all its values in one item, "
                                f"e.g. {key}=v1,v2")
        seen.add(key)
        axes.append((key, values))
    rows = _read_cases_csv(cases_csv) if cases_csv is not None else [{}]
    both = seen & {k for r in rows for k in r}
    if both:
        raise ScenarioError(f"--set and --cases both set {', '.join(sorted(both))}; set each key in one place")
    keys = [k for k, _ in axes]
    combos = list(itertools.product(*(v for _, v in axes)))
    width = len(str(len(combos) - 1))
    out = []
    for row in rows:
        for j, combo in enumerate(combos):
            case = {**row, **dict(zip(keys, combo))}
            if CASE_ID_COLUMN in row and len(combos) > 1:  # one CSV row, several --set combinations
                case[CASE_ID_COLUMN] = f"{row[CASE_ID_COLUMN]}-{j:0{width}d}"
            out.append(case)
    return out


def case_ids(cases: list[dict[str, str]], salt: str = "") -> list[str]:
    """Stable ids ``c<index>-<hash8>`` (or the CSV's ``case_id``) for the case directories.

    The hash covers the case's overrides and ``salt`` (mode and base overrides), so a resumed
    sweep only reuses a directory whose case is the same.
    """
    width = max(4, len(str(len(cases) - 1)))
    ids = []
    for i, case in enumerate(cases):
        given = case.get(CASE_ID_COLUMN)
        if given:
            if not given.replace("_", "").replace("-", "").replace(".", "").isalnum() or given.startswith("."):
                raise ScenarioError(f"--cases: case_id {given!r}: use letters, digits, '_', '-' and '.'")
            ids.append(given)
            continue
        blob = json.dumps([salt, sorted(case.items())], sort_keys=True).encode()
        ids.append(f"c{i:0{width}d}-{hashlib.sha1(blob).hexdigest()[:8]}")
    dup = sorted({x for x in ids if ids.count(x) > 1})
    if dup:
        raise ScenarioError(f"--cases: case_id values repeat: {', '.join(dup)}")
    return ids


def validate_cases(raw: dict, cases: list[dict[str, str]], ids: list[str], *, source: str,
                   base_dir: Path | None = None, base_overrides: list[str] | None = None,
                   max_shown: int = 5) -> None:
    """Build every case's scenario (schema + physics checks) before any case runs.

    Parameters
    ----------
    raw : dict
        The base scenario as read (TOML dict).
    cases : list of dict
        The cases of :func:`expand_cases`.
    ids : list of str
        Their case ids (:func:`case_ids`), for messages.
    source : str
        Scenario file name, for messages.
    base_dir : pathlib.Path, optional
        Folder relative trace files resolve against.
    base_overrides : list of str, optional
        ``key=value`` items applied to every case before its own.
    max_shown : int
        Distinct errors listed in the message.

    Raises
    ------
    ScenarioError
        One or more cases do not validate: the message says how many, and for each distinct
        error the key, value and allowed range (from the schema) and the cases it hits.
    """
    errors: dict[str, list[str]] = {}
    for cid, case in zip(ids, cases):
        items = list(base_overrides or []) + [f"{k}={v}" for k, v in case.items() if k != CASE_ID_COLUMN]
        try:
            scenario_from_dict(apply_overrides(raw, items), source=source, base_dir=base_dir)
        except ScenarioError as exc:
            msg = str(exc)
            meant = [(k, v) for k, v in case.items() if k != CASE_ID_COLUMN and _looks_like_range(v) and v in msg]
            if meant:
                msg += f"; --set {meant[0][0]}={meant[0][1]}: " + _RANGE_HINT.format(key=meant[0][0])
            errors.setdefault(msg, []).append(cid)
    if not errors:
        return
    n_bad = sum(len(v) for v in errors.values())
    lines = [f"{n_bad} of {len(cases)} sweep cases do not validate; no case was run:"]
    for msg, cids in list(errors.items())[:max_shown]:
        shown = ", ".join(cids[:3]) + (f", … ({len(cids)} cases)" if len(cids) > 3 else "")
        lines.append(f"  {msg}  [case {shown}]")
    if len(errors) > max_shown:
        lines.append(f"  … and {len(errors) - max_shown} more distinct errors")
    raise ScenarioError("\n".join(lines))
