"""One case's row of a suite report (``report.json``'s ``rows``): its split, its runs and what they measured, the
baseline's, its runtime verdict, and the readings drawn from them (where its step moved, its work verdict, its census
and the diagnosis drawn from that). The reporting builds each row once (:mod:`harness.reporting.report`); the
renderers, the plots and the report's head read its fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from harness.results.run import plain


def _frozen_map(value: Mapping | None) -> Mapping | None:
    return MappingProxyType(dict(value)) if value is not None else None


@dataclass(frozen=True)
class Spread:
    """A measurement over runs: its ``median``, ``min``, ``max``, ``n`` runs and coefficient of variation ``cv``;
    ``fmt``: the format spec its numbers are printed with (``.1f``)."""

    median: float
    min: float
    max: float
    n: int
    cv: float
    fmt: str

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping | None) -> Spread | None:
        return cls(**{f.name: data[f.name] for f in fields(cls)}) if data else None

    def text(self, unit: str = "") -> str:
        """``130.0 [128.7-131.3]``: the median and, over more than one run, the range."""
        f = self.fmt
        return f"{self.median:{f}}{unit} [{self.min:{f}}-{self.max:{f}}]" if self.n > 1 else f"{self.median:{f}}{unit}"


@dataclass(frozen=True)
class RowCensus:
    """What a row keeps of its case's census: counts per optimizer step (``ops``, ``kernels``, ``python_calls``),
    times per step in ms (``kernel_ms``, ``cpu_op_ms``), the synchronising and allocator calls by name (``syncs``,
    ``alloc``), the ``attention_backend`` that ran and the window's first and last step (``steps``)."""

    ops: float | None = None
    kernels: float | None = None
    kernel_ms: float | None = None
    cpu_op_ms: float | None = None
    python_calls: float | None = None
    syncs: Mapping[str, float] | None = None
    alloc: Mapping[str, float] | None = None
    attention_backend: str | None = None
    steps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "syncs", _frozen_map(self.syncs))
        object.__setattr__(self, "alloc", _frozen_map(self.alloc))
        object.__setattr__(self, "steps", tuple(self.steps) if self.steps is not None else None)

    def to_json(self) -> dict:
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping | None) -> RowCensus | None:
        """The row's census of a census as a run record holds it (its other keys left out); None for none."""
        return cls(**{f.name: data.get(f.name) for f in fields(cls)}) if data else None


@dataclass(frozen=True)
class RowWork:
    """A row's work verdict: its ``outcome`` and the ``lines`` that say what changed."""

    outcome: str
    lines: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "lines": list(self.lines)}

    @classmethod
    def from_json(cls, data: Mapping | None) -> RowWork | None:
        return cls(str(data.get("outcome")), tuple(data.get("lines") or ())) if data else None


# the diagnosis's keys written whatever it found; the others only where it found them
DIAGNOSIS_HEAD = ("step_ms", "kernel_ms", "kernels", "ops")


@dataclass(frozen=True)
class Diagnosis:
    """What limits a case's step, from its census and median step time (``step_ms``, ``kernel_ms``, ``kernels``,
    ``ops``): ``launches_per_sample``, ``gpu_busy`` (kernel time / step time), ``host_us_per_launch``, ``bound``
    (``host-bound``, ``mixed``, ``GPU-bound``), ``flops_per_step`` (LoRA-correct), ``peak_flops_of`` (the GPU model
    whose peak it is held against; None for a GPU the table does not know) and ``mfu``. None where it could not be
    told."""

    step_ms: float | None = None
    kernel_ms: float | None = None
    kernels: float | None = None
    ops: float | None = None
    launches_per_sample: float | None = None
    gpu_busy: float | None = None
    host_us_per_launch: float | None = None
    bound: str | None = None
    flops_per_step: float | None = None
    peak_flops_of: str | None = None
    mfu: float | None = None

    def to_json(self) -> dict:
        """The head's keys, then each other one it found (``peak_flops_of`` with the FLOPs, even when unknown)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in DIAGNOSIS_HEAD
            or getattr(self, f.name) is not None
            or (f.name == "peak_flops_of" and self.flops_per_step is not None)
        }

    @classmethod
    def from_json(cls, data: Mapping | None) -> Diagnosis | None:
        return cls(**{f.name: data.get(f.name) for f in fields(cls)}) if data else None


# the fields of a row that are spreads over runs
SPREADS = (
    "step_time_ms",
    "train_runtime_s",
    "peak_reserved_gib",
    "tokens_per_s",
    "baseline_step_time_ms",
    "baseline_train_runtime_s",
)
PARTS = (Spread, RowWork, Diagnosis, RowCensus)  # the typed parts of a row, each written as its JSON


@dataclass(frozen=True)
class ReportRow:
    """One case of a suite report. Its split: ``workload``, ``decomposition`` (``MxG``), ``micro_batch``,
    ``grad_accum``, ``world_size``, ``effective_batch``, ``steps``; its timed runs: ``runs``, ``ok`` and the statuses of
    the failed ones (``failures``); over its ok runs: the spreads of ``step_time_ms``, ``train_runtime_s``,
    ``peak_reserved_gib`` and ``tokens_per_s``, the median ``phases_ms``, ``gpu_busy``, ``kernel_ms_per_step`` and
    ``host_launch_us``, every run's ``step_traces_ms`` and the ``warmup_steps`` they skip; the baseline's
    (``baseline_*``); its runtime ``verdict`` (outcome), ``ratio`` and interval (``ratio_lo``, ``ratio_hi``). The
    readings: ``where`` its step moved (one line), its ``work`` verdict, its ``diagnosis`` and its ``census``."""

    workload: str
    decomposition: str
    micro_batch: int
    grad_accum: int
    world_size: int
    effective_batch: int
    steps: int
    runs: int
    ok: int
    failures: tuple[str, ...] = ()
    step_time_ms: Spread | None = None
    train_runtime_s: Spread | None = None
    peak_reserved_gib: Spread | None = None
    tokens_per_s: Spread | None = None
    phases_ms: Mapping[str, float] | None = None
    gpu_busy: float | None = None
    kernel_ms_per_step: float | None = None
    host_launch_us: float | None = None
    baseline_host_launch_us: float | None = None
    baseline_step_time_ms: Spread | None = None
    baseline_train_runtime_s: Spread | None = None
    baseline_phases_ms: Mapping[str, float] | None = None
    verdict: str | None = None
    ratio: float | None = None
    ratio_lo: float | None = None
    ratio_hi: float | None = None
    step_traces_ms: tuple[tuple[float, ...], ...] = ()
    warmup_steps: int | None = None
    where: str | None = None
    work: RowWork | None = None
    diagnosis: Diagnosis | None = None
    census: RowCensus | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "failures", tuple(self.failures))
        object.__setattr__(self, "phases_ms", _frozen_map(self.phases_ms))
        object.__setattr__(self, "baseline_phases_ms", _frozen_map(self.baseline_phases_ms))
        object.__setattr__(self, "step_traces_ms", tuple(tuple(t) for t in self.step_traces_ms))

    @property
    def case(self) -> str:
        """``W-MxG``: the case's id, as its verdicts name it."""
        return f"{self.workload}-{self.decomposition}"

    def to_json(self) -> dict:
        """The row as ``report.json`` holds it: every field in order, each typed part as its JSON."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_json() if isinstance(value, PARTS) else plain(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> ReportRow:
        """The row of a ``report.json`` row; a key an older report lacks is None (or empty)."""
        given: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls) if data.get(f.name) is not None}
        given.update({name: Spread.from_json(given.get(name)) for name in SPREADS})
        given["work"] = RowWork.from_json(given.get("work"))
        given["diagnosis"] = Diagnosis.from_json(given.get("diagnosis"))
        given["census"] = RowCensus.from_json(given.get("census"))
        return cls(**given)
