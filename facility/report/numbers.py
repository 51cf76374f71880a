"""How report.html writes a number (:func:`fmt_number`): one format for every section.

A leaf below :mod:`facility.report.html` (which re-exports it) and
:mod:`facility.report.grid_replay` (which html imports, so it cannot import html).
"""

from __future__ import annotations

__all__ = ["fmt_number"]


def fmt_number(v: float, sig: int = 4) -> str:
    """A number for a table: ``sig`` significant digits, thousands separators from 10,000 on,
    scientific notation with one digit before the point below 0.001 (``-6.42e-4``, not the
    engineering ``-642e-6`` a reader has to count), 0 below 1e-12 (round-off), never
    ``3.16879e+06``.

    >>> fmt_number(3168793.2), fmt_number(12.34567), fmt_number(2.5e-5), fmt_number(-6.42e-4)
    ('3,168,793', '12.35', '2.5e-5', '-6.42e-4')
    """
    if v != v:
        return "n/a"
    if v in (float("inf"), float("-inf")):
        return "∞" if v > 0 else "−∞"
    a = abs(v)
    if a < 1e-12:  # round-off (e.g. a stored energy returned to its start)
        return "0"
    if a >= 1e4:
        return f"{v:,.0f}"
    if a >= 1e-3:
        return f"{v:.{sig}g}"
    mant, exp = f"{v:.{min(sig, 3) - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}e{int(exp)}"
