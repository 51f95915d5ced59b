"""A stored baseline as ``baselines/<gpu>/<workload>.json`` holds it (``harness.judging.baseline`` makes, checks and
reads it): the workload it was recorded for, the environment, its provenance, its thresholds and per decomposition the
timed runs, the first run's losses and the census runs.

Every type has one field per key of its JSON object, of the same name, and ``details`` for the keys it does not name
(an imported baseline's notes, say). ``from_json`` trusts the shapes (the loader checks them first,
:mod:`harness.judging.baseline_schema`); ``to_json`` writes the fields in their order, then ``details``, leaving out
the keys listed in ``OPTIONAL`` where they are None, so that a baseline made from runs writes the same bytes as it
always did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

SCHEMA = 1  # the baseline file's version (its ``schema`` key)


def _plain(value: Any) -> Any:
    """``value`` as JSON: a part as its ``to_json()``, tuples as lists, mappings as dicts (walked)."""
    if isinstance(value, _Entry):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Entry:
    """A frozen part of a baseline file whose fields are its JSON keys."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # keys written only when not None
    TUPLES: ClassVar[tuple[str, ...]] = ()  # list keys read as tuples where not None
    details: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The part in ``data``: its fields from the keys of their names (the lists in ``TUPLES`` as tuples, the
        nested parts as :meth:`_parts` reads them), the other keys in ``details``."""
        names = {f.name for f in fields(cls)} - {"details"}  # type: ignore[arg-type]
        given = {k: v for k, v in data.items() if k in names}
        for k in cls.TUPLES:
            if given.get(k) is not None:
                given[k] = tuple(given[k])
        rest = {k: v for k, v in data.items() if k not in names}
        return cls(**cls._parts(given), details=rest)  # type: ignore[call-arg]  # every part is a dataclass with details

    @classmethod
    def _parts(cls, given: dict[str, Any]) -> dict[str, Any]:
        """``given`` with its nested parts read into their types (none here)."""
        return given

    def to_json(self) -> dict[str, Any]:
        out = {
            f.name: _plain(v)
            for f in fields(self)  # type: ignore[arg-type]
            if f.name != "details" and ((v := getattr(self, f.name)) is not None or f.name not in self.OPTIONAL)
        }
        return {**out, **_plain(self.details)}


@dataclass(frozen=True)
class BaselineRun(_Entry):
    """A timed run as a baseline keeps it: its ids, host and machine, its headline figures, the host's speed, its
    steady step times and its median time per phase (ms per optimizer step)."""

    run_id: str | None = None
    session_id: str | None = None
    host: str | None = None
    machine: str | None = None
    step_time_median_ms: float | None = None
    train_runtime_s: float | None = None
    peak_reserved_bytes: float | None = None
    peak_allocated_bytes: float | None = None
    tokens_per_s: float | None = None
    host_probe: Mapping[str, Any] | None = None
    steady_step_times_ms: tuple[float, ...] | None = None
    phases_ms: Mapping[str, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("phases_ms",)
    TUPLES: ClassVar[tuple[str, ...]] = ("steady_step_times_ms",)


@dataclass(frozen=True)
class BaselineCensus(_Entry):
    """A census run as a baseline keeps it: its id, machine, library versions and census (as the run recorded it),
    and its peak memory where it has one."""

    run_id: str | None = None
    machine: str | None = None
    versions: Mapping[str, Any] | None = None
    census: Mapping[str, Any] | None = None
    peak_reserved_bytes: float | None = None
    peak_allocated_bytes: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("peak_reserved_bytes", "peak_allocated_bytes")


@dataclass(frozen=True)
class BaselineDecomposition(_Entry):
    """One decomposition of a baseline: its split, its timed runs, the first run's losses and its census runs."""

    decomposition: Mapping[str, Any] | None = None
    runs: tuple[BaselineRun, ...] = ()
    losses: tuple[float | None, ...] | None = None
    census: tuple[BaselineCensus, ...] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("census",)
    TUPLES: ClassVar[tuple[str, ...]] = ("losses",)

    @classmethod
    def _parts(cls, given: dict[str, Any]) -> dict[str, Any]:
        given["runs"] = tuple(BaselineRun.from_json(r) for r in given.get("runs") or ())
        if given.get("census") is not None:
            given["census"] = tuple(BaselineCensus.from_json(c) for c in given["census"])
        return given


@dataclass(frozen=True)
class BaselineWorkload(_Entry):
    """The workload a baseline was recorded for: its name, its hash and its spec."""

    name: str = ""
    hash: str = ""
    spec: Mapping[str, Any] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("spec",)


@dataclass(frozen=True)
class Provenance(_Entry):
    """Where a baseline comes from: ``kind`` (``measured`` by this suite or ``imported`` from a published source),
    when and by which command, over which sessions, hosts and machines, and a note."""

    kind: str | None = None
    recorded_at: str | None = None
    command: str | None = None
    sessions: tuple[str, ...] | None = None
    hosts: tuple[str, ...] | None = None
    machines: tuple[str, ...] | None = None
    note: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("kind", "recorded_at", "command", "sessions", "hosts", "machines", "note")

    TUPLES: ClassVar[tuple[str, ...]] = ("sessions", "hosts", "machines")


@dataclass(frozen=True)
class BaselineFile(_Entry):
    """A baseline file: ``schema`` (:data:`SCHEMA`), the ``gpu`` it was recorded on, its ``workload``, the ``env`` of
    its first timed run, its ``provenance``, its ``thresholds`` (the keys it sets) and its ``decompositions`` by id."""

    gpu: str
    workload: BaselineWorkload
    provenance: Provenance
    decompositions: Mapping[str, BaselineDecomposition]
    schema: int = SCHEMA
    env: Mapping[str, Any] | None = None
    thresholds: Mapping[str, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("env", "thresholds")

    def to_json(self) -> dict[str, Any]:
        """The file's JSON, its keys in the order the baseline has always written them."""
        out = super().to_json()
        order = ("schema", "gpu", "workload", "env", "provenance", "thresholds", "decompositions")
        return {**{k: out.pop(k) for k in order if k in out}, **out}

    @classmethod
    def _parts(cls, given: dict[str, Any]) -> dict[str, Any]:
        """A baseline file's parts, its shape checked by the loader."""
        given["workload"] = BaselineWorkload.from_json(given["workload"])
        given["provenance"] = Provenance.from_json(given["provenance"])
        given["decompositions"] = {k: BaselineDecomposition.from_json(v) for k, v in given["decompositions"].items()}
        return given
