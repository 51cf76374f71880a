"""Named exceptions of ``facility`` and the exit codes the CLI maps them to.

=================== ========= =============================================
exception           exit code meaning
=================== ========= =============================================
(none)              0         success
``ScenarioError``   2         bad input: schema, physics checks, files
``NoDeviceError``   2         no GPU / driver / NVML for ``facility record``
``InfeasibleError`` 3         the optimizer cannot meet the limits
``PowerFlowError``  4         a power flow did not converge
(sweep)             5         a sweep finished, but some of its cases failed
anything else       1         unexpected failure
=================== ========= =============================================
"""

from __future__ import annotations

__all__ = [
    "FacilityError",
    "ScenarioError",
    "NotSupportedError",
    "NoDeviceError",
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
