"""What a scenario's library names stand for, looked up once: :class:`Library`.

A scenario names library entries (``jobs[i].gpu``, ``<storage>.technology`` or
``.technologies``, ``grid.trafo_type``, ``grid.lv_trafo_type``, ``grid.ups_type``,
``grid_impact.shaft_model`` and ``.mode_set``). They are resolved in two steps, each once per
scenario:

1. :func:`facility.config.load.parse_scenario` (under :func:`~facility.config.load.scenario_from_dict`)
   reads the entries of the libraries the configuration owns (GPU models, storage
   technologies: those :func:`~facility.config.technology.apply_technologies` read while
   filling the sections' defaults; the utility spec is merged into the ``spec`` section) and
   attaches a :class:`Library` to the scenario (:attr:`facility.config.schema.Scenario.library`)
   *before* the checks, which take the models from it (:func:`job_gpu`);
2. :func:`facility.scenario.resolve` loads the domain entries (transformer and UPS types from
   :mod:`facility.electrical`, the shaft and mode set from :mod:`facility.grid_impact`), runs
   every check on them (the configuration's, then each domain's ``checks`` module) and
   attaches them.

The configuration's loaders (GPU models, technologies) cache by reference, not by the key that asks
(:func:`facility.config.library.cached_by_reference`),
so a file is read once even where a check names another key in its messages.

Below :mod:`facility.config` and :mod:`facility.scenario`, nothing looks a library entry up by
name: the layers take ``scenario.library``. ``Scenario.model_copy`` keeps it (a private
attribute), so the variants a sizing makes share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from facility.config.library import load_gpu
from facility.errors import ScenarioError

if TYPE_CHECKING:
    from facility.config.library import GpuModel
    from facility.config.technology import StorageTechnology

__all__ = ["Library", "NotResolvedError", "job_gpu", "job_gpus"]


class NotResolvedError(RuntimeError):
    """A layer asked a scenario for a library entry it was not resolved with (a programming
    error: load scenarios with :func:`facility.scenario.load_scenario`, or call
    :func:`facility.scenario.resolve` on one built in code)."""


_DOMAIN_FIELDS = ("trafo", "lv_trafo", "ups", "shaft", "mode_set")


@dataclass(frozen=True)
class Library:
    """The library entries a scenario names, as objects.

    Attributes
    ----------
    gpus : mapping of str to GpuModel
        By the ``gpu`` reference of each job (a name or a path).
    technologies : mapping of str to StorageTechnology
        By every ``technology`` / ``technologies`` reference of the storage sections.
    domain : mapping of str to object, or None
        The domain entries below, filled by :func:`facility.scenario.resolve` (which runs the
        domain checks first); None until then, and asking for one raises
        :class:`NotResolvedError`.
    trafo, lv_trafo : facility.electrical.library.TrafoType or None
        ``grid.trafo_type`` and ``grid.lv_trafo_type`` (None where not set).
    ups : facility.electrical.library.UpsType or None
        ``grid.ups_type``.
    shaft : facility.grid_impact.shaft.ShaftModel or None
        ``grid_impact.shaft_model`` with ``grid_impact.mech_damping_ratio`` (None when
        ``grid_impact`` is off).
    mode_set : facility.grid_impact.modes.ModeSet or None
        ``grid_impact.mode_set`` (None when ``grid_impact`` is off).
    unresolved : mapping of str to str
        Why an entry the scenario names could not be loaded, by entry (``trafo``, ``ups``,
        ...; that entry is None): filled only on the library :func:`facility.scenario.resolve`
        hands the domain checks, which report these messages where the check of that entry
        stands. A resolved scenario's is empty.
    """

    gpus: Mapping[str, "GpuModel"] = field(default_factory=dict)
    technologies: Mapping[str, "StorageTechnology"] = field(default_factory=dict)
    domain: Mapping[str, Any] | None = None
    unresolved: Mapping[str, str] = field(default_factory=dict)

    @property
    def domains(self) -> bool:
        return self.domain is not None

    def _entry(self, name: str):
        if self.domain is None:
            raise NotResolvedError(
                f"scenario.library.{name}: the domain entries are not resolved yet; call "
                "facility.scenario.resolve(scenario) (facility.scenario.load_scenario does)")
        return self.domain.get(name)

    trafo = property(lambda self: self._entry("trafo"))
    lv_trafo = property(lambda self: self._entry("lv_trafo"))
    ups = property(lambda self: self._entry("ups"))
    shaft = property(lambda self: self._entry("shaft"))
    mode_set = property(lambda self: self._entry("mode_set"))

    def gpu(self, ref: str) -> "GpuModel":
        """The GPU model a job's ``gpu`` reference names."""
        try:
            return self.gpus[ref]
        except KeyError:
            raise NotResolvedError(f"GPU model {ref!r} was not resolved with this scenario (a job "
                                   "added after loading? resolve the scenario again)") from None

    def technology(self, ref: str) -> "StorageTechnology":
        """The storage technology a ``technology`` / ``technologies`` reference names."""
        try:
            return self.technologies[ref]
        except KeyError:
            raise NotResolvedError(f"storage technology {ref!r} was not resolved with this "
                                   "scenario (resolve the scenario again)") from None

    def with_domains(self, unresolved: Mapping[str, str] | None = None, **entries) -> "Library":
        """A copy with the domain entries filled (``trafo``, ``lv_trafo``, ``ups``, ``shaft``,
        ``mode_set``) and ``domains`` true; ``unresolved``: why an entry could not be loaded."""
        unknown = (set(entries) | set(unresolved or {})) - set(_DOMAIN_FIELDS)
        if unknown:
            raise TypeError(f"not a domain entry of Library: {sorted(unknown)}")
        return replace(self, domain={f: entries.get(f) for f in _DOMAIN_FIELDS},
                       unresolved=dict(unresolved or {}))


def job_gpu(scenario, i: int) -> "GpuModel":
    """The GPU model of ``scenario.jobs[i]``: its library's entry where the scenario has one,
    else read from the GPU library (a scenario built in code, not resolved yet).

    Raises
    ------
    ScenarioError
        An unknown or malformed GPU model; the message names ``jobs.<i>.gpu``.
    """
    job = scenario.jobs[i]
    lib = scenario._library
    if lib is not None and job.gpu in lib.gpus:
        return lib.gpus[job.gpu]
    return load_gpu(job.gpu, key=f"jobs.{i}.gpu")


def job_gpus(scenario):
    """``(index, job, GpuModel)`` of every job whose GPU model exists (:func:`job_gpu`; the
    unknown ones are reported by :func:`facility.config.checks.check_jobs`)."""
    for i, job in enumerate(scenario.jobs):
        try:
            yield i, job, job_gpu(scenario, i)
        except ScenarioError:
            continue
