"""How the report words a run's events: what happened, and whether the limits held.

A controller event such as ``mpc_slack`` (a re-plan that needed penalized slacks) says what the
controller did at one instant, not how the run ended: in a compliant run the controller
recovered and every limit held. :func:`event_text` words such events by what happened and,
where the run is compliant, that the limits held; :func:`events_summary` counts them by kind
for the line above the events table.
"""

from __future__ import annotations

__all__ = ["RECOVERABLE", "event_text", "events_summary"]

#: Event kinds a controller recovers from: what happened, in words (the event's own detail
#: follows where it adds a number or a reason).
RECOVERABLE = {
    "mpc_slack": "re-plan with penalized slacks: no plan over this horizon kept every limit's "
                 "hard row (load history or storage), so the MPC planned as close to the limits "
                 "as it could",
    "mpc_descent": "SoC target out of reach over this horizon: the PCC followed the load back at "
                   "the allowed rate, the storage took the rest",
    "mpc_soc_band_dropped": "the end-of-horizon SoC band was left out of this re-plan",
    "mpc_fallback": "the filter controller took this re-plan interval",
    "storage_saturated": "storage at a limit of its state of charge or power",
}


def _held(compliant: bool | None) -> str:
    if compliant is True:
        return "; the limits held (the run is compliant)"
    if compliant is False:
        return "; see the compliance table for the limits that did not hold"
    return ""


def event_text(event: dict, compliant: bool | None) -> str:
    """The report's words for one event. A recoverable event (:data:`RECOVERABLE`) says what
    happened and, in a compliant run, that the limits held; any other event keeps its detail."""
    kind = str(event.get("kind", ""))
    detail = str(event.get("detail", event.get("job", "")))
    if kind not in RECOVERABLE:
        return detail
    what = RECOVERABLE[kind]
    if kind == "mpc_fallback" and "(" in detail:
        what += " (" + detail.split("(", 1)[1].rstrip(")") + ")"
    elif kind == "storage_saturated":
        what = detail or what
    return what + _held(compliant)


def events_summary(events: list[dict], compliant: bool | None) -> str:
    """One sentence: the recoverable events by kind and whether the limits held ("" when there
    are none)."""
    counts: dict[str, int] = {}
    for e in events:
        k = str(e.get("kind", ""))
        if k in RECOVERABLE:
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return ""
    parts = ", ".join(f"{n} {k}" for k, n in counts.items())
    tail = {True: "the controller recovered from each: every limit held over the run (compliant).",
            False: "the run is not compliant: the compliance table names the limits that did not hold.",
            None: ""}[compliant]
    return f"Controller events: {parts}; {tail}".rstrip("; ")
