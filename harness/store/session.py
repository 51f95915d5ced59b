"""A stored session record as types: :class:`Session`, its :class:`Case` entries with their :class:`StoredRun` runs,
step-time summary, :class:`Census` and :class:`Baseline`, its :class:`Environment`, its :class:`Workload` specs and its
:class:`StoredVerdict` verdicts (``docs/store.md`` describes every key).

Every type has one field per key of its JSON object, of the same name. ``from_json`` is the one reader of the keys (it
takes a record :func:`harness.store.record.loads` has upgraded and checked against :mod:`harness.store.check`, so it
trusts the shapes) and ``to_json`` the one writer: a key whose value is None is left out, except the keys
``store add`` writes as null (:attr:`_Part.ALWAYS`), so that a record written by ``store add`` reads back into itself
and writes the same bytes. Per-name tables (kernels, ops, library versions, phases) and the objects read as a whole
(a resolved configuration, a workload spec, a census's tokens and memory) stay mappings: their keys are names, not
fields. Nothing here imports torch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, ClassVar

Scalar = str | int | float | bool


def _plain(value: Any) -> Any:
    """``value`` as JSON: a part as its ``to_json()``, tuples as lists, mappings as dicts (walked)."""
    if isinstance(value, _Part):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Part:
    """A frozen part of a record whose fields are its JSON keys: :meth:`from_json` reads them, :meth:`to_json` writes
    them."""

    ALWAYS: ClassVar[tuple[str, ...]] = ()  # keys written even when null (store add writes them so)
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {}  # how a key's JSON value becomes the field's

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]):
        keys, unset = _keys(cls)
        given = dict(unset)  # a key absent or null is None, also where the field's default is not
        for k, v in obj.items():  # the record's keys, fewer than the fields: most are absent
            if v is not None and k in keys:
                given[k] = v if (read := keys[k]) is None else read(v)
        return cls(**given)

    def to_json(self) -> dict[str, Any]:
        return {k: _plain(v) for k in _keys(type(self))[0] if (v := getattr(self, k)) is not None or k in self.ALWAYS}


@cache
def _keys(part: type[_Part]) -> tuple[dict[str, Callable[[Any], Any] | None], dict[str, None]]:
    """A part's keys (its fields, in order), each with how its JSON value becomes the field's (None: as it is), and
    those whose field's default is not None, as None; found once per class, as :func:`dataclasses.fields` looks them up
    at each call."""
    found = fields(part)  # type: ignore[arg-type]
    return {f.name: part.NESTED.get(f.name) for f in found}, {f.name: None for f in found if f.default is not None}


def _items(part: type[_Part]) -> Callable[[list], tuple]:
    return lambda values: tuple(part.from_json(v) for v in values)


@dataclass(frozen=True)
class RunFlags(_Part):
    """What made a run other than a plain timed run (only the values that differ from a plain run's)."""

    inject_slowdown: float | None = None
    inject_work: int | None = None
    profile_steps: int | None = None
    phases_enabled: bool | None = None


@dataclass(frozen=True)
class CensusCounts(_Part):
    """A census run's own counts per optimizer step (None where its device has none: no kernels on a CPU)."""

    fits: bool | None = None
    ops: float | None = None
    kernels: float | None = None
    python_calls: float | None = None
    kernel_ms: float | None = None
    cpu_op_ms: float | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("fits", "ops", "kernels", "python_calls", "kernel_ms", "cpu_op_ms")


@dataclass(frozen=True)
class StoredRun(_Part):
    """One run, compact: its outcome and headline figures, what made it other than a plain timed run, its steady step
    times in whole microseconds, a census run's counts."""

    run_id: str | None = None
    repeat: int | None = None
    status: str | None = None
    machine: str | None = None
    median_ms: float | None = None
    train_runtime_s: float | None = None
    tokens_per_s: float | None = None
    peak_reserved_bytes: float | None = None
    peak_allocated_bytes: float | None = None
    warmup_steps: int | None = None
    phases_ms: Mapping[str, float] | None = None
    steady_us: tuple[int, ...] | None = None
    flags: RunFlags | None = None
    error: str | None = None
    census: CensusCounts | None = None
    kernel_ms: float | None = None
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "steady_us": tuple,
        "flags": RunFlags.from_json,
        "census": CensusCounts.from_json,
    }


@dataclass(frozen=True)
class StepTime(_Part):
    """The median, min and max of a case's timed runs' median step times (ms), and their number."""

    median: float | None = None
    min: float | None = None
    max: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class Census(_Part):
    """A case's census (the first census run's whose window fitted): counts per optimizer step, per-name tables, how it
    was taken."""

    fits: bool | None = None
    reason: str | None = None
    device: str | None = None
    logging_steps: float | None = None
    steps: tuple[float, ...] | None = None
    n: float | None = None
    ops: float | None = None
    ops_by_name: Mapping[str, float] | None = None
    kernels: float | None = None
    kernels_by_name: Mapping[str, float] | None = None
    launch_calls: float | None = None
    syncs: Mapping[str, float] | None = None
    alloc: Mapping[str, float] | None = None
    kernel_ms: float | None = None
    kernel_ms_by_name: Mapping[str, float] | None = None
    cpu_op_ms: float | None = None
    cpu_op_ms_by_name: Mapping[str, float] | None = None
    attention_backend: str | None = None
    python_calls: float | None = None
    python_method: str | None = None
    config: Mapping[str, Any] | None = None
    tokens: Mapping[str, float] | None = None
    memory: Mapping[str, Any] | None = None
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {"steps": tuple}


@dataclass(frozen=True)
class Baseline(_Part):
    """The suite's verdict row of a case against its baseline (a ratio without an interval where one run was timed)."""

    verdict: str | None = None
    ratio: float | None = None
    ratio_lo: float | None = None
    ratio_hi: float | None = None


@dataclass(frozen=True)
class Case(_Part):
    """One workload x decomposition of a session: its runs and their summaries, its census, its baseline verdict."""

    workload: str
    decomposition: str
    runs: tuple[StoredRun, ...] = ()
    workload_hash: str | None = None
    split: Mapping[str, Any] | str | None = None
    step_time_ms: StepTime | None = None
    peak_reserved_bytes: float | None = None
    peak_allocated_bytes: float | None = None
    failed: int | None = None
    census: Census | None = None
    census_runs: int | None = None
    kernel_ms: float | None = None
    baseline: Baseline | None = None
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "runs": _items(StoredRun),
        "step_time_ms": StepTime.from_json,
        "census": Census.from_json,
        "baseline": Baseline.from_json,
    }

    @property
    def median_ms(self) -> float | None:
        """The median of the timed runs' median step times; None without a positive one."""
        m = self.step_time_ms.median if self.step_time_ms else None
        return m if m and m > 0 else None


@dataclass(frozen=True)
class StoredVerdict(_Part):
    """A verdict of one of the session's reports, with the report it came from; an interleaved one with its ratio,
    interval and pairs."""

    source: str | None = None
    kind: str | None = None
    case: str | None = None
    outcome: str | None = None
    message: str | None = None
    ratio: float | None = None
    lo: float | None = None
    hi: float | None = None
    pairs: float | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("kind", "case", "outcome")

    def interval(self) -> tuple[float, float, float] | None:
        """``(ratio, lo, hi)`` where the verdict has all three."""
        if all(isinstance(x, (int, float)) for x in (self.ratio, self.lo, self.hi)):
            return self.ratio, self.lo, self.hi  # type: ignore[return-value]
        return None


@dataclass(frozen=True)
class Environment(_Part):
    """What the session ran on (several values of one field joined by `` | ``): the fields
    :data:`harness.store.environment.ENVIRONMENT` compares, the attention implementation, the machines of its runs."""

    driver: Scalar | None = None
    cuda: Scalar | None = None
    torch: Scalar | None = None
    python: Scalar | None = None
    image: Scalar | None = None
    runner: Scalar | None = None
    hostname: Scalar | None = None
    gpu_name: Scalar | None = None
    gpu_count: Scalar | None = None
    gpu_clocks: Scalar | None = None
    interconnect: Scalar | None = None
    platform: Scalar | None = None
    cpu: Scalar | None = None
    cpu_count: Scalar | None = None
    harness: Scalar | None = None
    attn_implementation: Scalar | None = None
    machines: tuple[str, ...] | None = None
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {"machines": tuple}

    def value(self, name: str) -> Scalar | None:
        """The field ``name`` (one of :data:`harness.store.environment.ENVIRONMENT`)."""
        return getattr(self, name)


@dataclass(frozen=True)
class Workload(_Part):
    """A workload the session ran, by its hash: its name and its spec."""

    name: str | None = None
    spec: Mapping[str, Any] | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("name", "spec")


def _workloads(table: Mapping[str, Any]) -> dict[str, Workload]:
    return {h: Workload.from_json(w) for h, w in table.items()}


@dataclass(frozen=True)
class Session(_Part):
    """One session's compact record: what it ran on, every case it measured, every verdict of its reports, and what
    was trimmed to fit it in its size bound. ``schema`` is :data:`harness.store.record.SCHEMA`."""

    session_id: str
    gpu: str
    schema: int | None = None
    started_at: str | None = None
    track: str | None = None
    runner: str | None = None
    environment: Environment | None = None
    versions: Mapping[str, Scalar] | None = None
    workloads: Mapping[str, Workload] | None = None
    cases: tuple[Case, ...] = ()
    verdicts: tuple[StoredVerdict, ...] | None = None
    source: Mapping[str, Any] | None = None
    trimmed: tuple[str, ...] | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("started_at",)
    NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "environment": Environment.from_json,
        "workloads": _workloads,
        "cases": _items(Case),
        "verdicts": _items(StoredVerdict),
        "trimmed": tuple,
    }

    @property
    def env(self) -> Environment:
        """The environment (an empty one where the record has none)."""
        return self.environment or Environment()

    @property
    def series_track(self) -> str:
        """The track, empty where there is none (a series' key)."""
        return self.track or ""

    @property
    def series_runner(self) -> str:
        return self.runner or ""
