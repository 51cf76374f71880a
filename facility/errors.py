"""Named exceptions of ``facility`` and the exit codes the CLI maps them to.

=================== ========= =============================================
exception           exit code meaning
=================== ========= =============================================
(none)              0         success
``ScenarioError``   2         bad input: schema, physics checks, files
``NoDeviceError``   2         no GPU / driver / NVML for ``facility record``
``ResourceError``   2         the machine lacks what the command needs: disk
                              space for ``--out``, memory for the estimate
(closed stdout)     0         the reader of the output went away (``| head``)
``InfeasibleError`` 3         the optimizer cannot meet the limits
``PowerFlowError``  4         a power flow did not converge
(sweep)             5         a sweep finished, but some of its cases failed
anything else       1         unexpected failure
=================== ========= =============================================
"""

from __future__ import annotations

import errno

__all__ = [
    "FacilityError",
    "ScenarioError",
    "NotSupportedError",
    "NoDeviceError",
    "ResourceError",
    "is_no_space",
    "bounded",
    "InfeasibleError",
    "PowerFlowError",
    "EXIT_OK",
    "EXIT_ERROR",
    "EXIT_BAD_INPUT",
    "EXIT_INFEASIBLE",
    "EXIT_POWER_FLOW",
    "EXIT_CASES_FAILED",
    "exit_code_for",
    "GapWarning",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_INFEASIBLE = 3
EXIT_POWER_FLOW = 4
#: ``facility sweep``: the sweep finished and wrote its table, but some cases failed.
EXIT_CASES_FAILED = 5


class FacilityError(Exception):
    """Base class of every error ``facility`` raises on purpose."""

    exit_code = EXIT_ERROR


class ScenarioError(FacilityError, ValueError):
    """The scenario (or a file it names) is invalid; the message names file, key, unit and range."""

    exit_code = EXIT_BAD_INPUT


class NotSupportedError(ScenarioError):
    """A scenario section whose behaviour is not implemented (yet)."""


class NoDeviceError(FacilityError):
    """A command needs hardware or drivers this machine lacks (``facility record`` without NVML,
    an NVIDIA driver or a GPU); exit code 2, like bad input."""

    exit_code = EXIT_BAD_INPUT


class ResourceError(ScenarioError):
    """The machine lacks a resource the command needs: space on the file system of ``--out``
    (``ENOSPC``, a quota), or the memory a scenario's estimate asks for; exit code 2. The
    message names the path or figure and what to change."""


#: ``errno`` values of a write that found no room: a full disk, a full quota, a file too large.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_NO_SPACE_TEXT = ("No space left on device", "Disk quota exceeded", "File too large")


def is_no_space(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a write that found no room.

    An ``OSError`` with ``errno`` ENOSPC, EDQUOT or EFBIG; libraries that raise an
    ``OSError`` without ``errno`` (pyarrow's writers) are recognised by the system's text.
    """
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError):
            if exc.errno in NO_SPACE_ERRNOS or any(t in str(exc) for t in _NO_SPACE_TEXT):
                return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


#: Characters kept of a cut run of a message (:func:`bounded`; the value itself is cut by
#: :func:`facility.config.files.shown` where it is echoed). [-]
SHOWN_MAX_CHARS = 80
#: Most characters of one whitespace-free run of a message, and of a whole message
#: (:func:`bounded`). [-]
BOUNDED_RUN_CHARS = 200
BOUNDED_MESSAGE_CHARS = 4000


def bounded(message: str, run: int = BOUNDED_RUN_CHARS, total: int = BOUNDED_MESSAGE_CHARS) -> str:
    """A message with every whitespace-free run over ``run`` characters cut (to
    :data:`SHOWN_MAX_CHARS` with ``… (N characters)``) and the whole cut to ``total`` characters:
    the last guard of the CLI against an unbounded user value echoed somewhere."""
    import re

    def cut(m):
        t = m.group(0)
        return f"{t[:SHOWN_MAX_CHARS]}… ({len(t):,} characters)"

    out = re.sub(r"\S{%d,}" % (run + 1), cut, message)
    if len(out) > total:
        out = f"{out[:total]}… (message of {len(out):,} characters cut)"
    return out


class InfeasibleError(FacilityError):
    """The optimization problem has no solution under the requested limits.

    Parameters
    ----------
    message : str
        Human-readable diagnosis.
    diagnosis : dict, optional
        Machine-readable diagnosis (e.g. the largest slack of each limit family).
    """

    exit_code = EXIT_INFEASIBLE

    def __init__(self, message: str, diagnosis: dict | None = None):
        super().__init__(message)
        self.diagnosis = diagnosis or {}


class SolverTimeLimit(InfeasibleError):
    """The solver stopped at ``optimize.time_limit_s`` before it proved an optimum (exit 3).

    ``diagnosis["termination"]`` holds the solver's termination string; ``lower_bound_usd``
    a proven lower bound when one is known (else None)."""

    def __init__(self, message: str, diagnosis: dict | None = None, lower_bound_usd: float | None = None):
        super().__init__(message, diagnosis)
        self.lower_bound_usd = lower_bound_usd


class PowerFlowError(FacilityError):
    """A power flow did not converge; the message names the step and the largest mismatch."""

    exit_code = EXIT_POWER_FLOW


def exit_code_for(exc: BaseException) -> int:
    """Exit code of the CLI for an exception (0 ok, 2 input, 3 infeasible, 4 power flow, 1 other)."""
    if isinstance(exc, FacilityError):
        return exc.exit_code
    return EXIT_ERROR


class GapWarning(UserWarning):
    """A plan is returned verified but proven only within a gap wider than
    ``optimize.max_gap_frac`` (the message says why: ``SolveInfo.gap_reason``). ``facility
    size`` prints its own line for it; the other commands print the message once."""
