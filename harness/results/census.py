"""One census as a run record holds it (``harness.measuring.census``): the work of one optimizer step, counted under
the profiler over a window of whole logging periods. Every count is per optimizer step; a count the device lacks (the
kernels, launches, syncs and allocator calls of a CPU run, its device memory peaks) is None, as is every count of a
census whose window did not fit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

# The census's keys that its typed fields hold, with the field of each where the names differ; ``memory`` and
# ``tokens`` are objects in the record, whose parts are fields here.
RENAMED = {"attention_backend": "attention", "syncs": "sync_calls", "alloc": "alloc_calls"}
BACK = {v: k for k, v in RENAMED.items()}
MEMORY = ("peak_reserved_bytes", "peak_allocated_bytes", "allocated_per_step", "allocated_by_op")
TOKENS = {"real": "real_tokens", "padded": "padded_tokens"}
HEAD = ("fits", "device", "logging_steps", "steps", "n")  # written by every census, fitted or not
MAPS = (  # the fields that break a count down by name
    "ops_by_name",
    "kernels_by_name",
    "sync_calls",
    "alloc_calls",
    "kernel_ms_by_name",
    "cpu_op_ms_by_name",
    "allocated_by_op",
)
# The keys in the order the census writes them; a key not listed here goes after them, in the order it was read.
ORDER = (
    *HEAD,
    "reason",
    "ops",
    "ops_by_name",
    "kernels",
    "kernels_by_name",
    "launch_calls",
    "syncs",
    "alloc",
    "kernel_ms",
    "kernel_ms_by_name",
    "comm_kernel_ms",
    "cpu_op_ms",
    "cpu_op_ms_by_name",
    "attention_backend",
    "attention_names",
    "timeline",
    "window",
    "memory",
    "counters",
    "tokens",
    "python_calls",
    "python_method",
    "python_steps",
    "python_reason",
    "overhead",
    "window_probe",
    "config",
    "host_probe",
)
_RANK = {k: i for i, k in enumerate(ORDER)}
SYNCHRONIZING = "ynchronize"  # cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize


def _counts(value: object) -> Mapping[str, float] | None:
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class Census:
    """``fits``: whether the profiled window fitted in the run (else ``reason`` says why and no count was made);
    ``device``: ``cuda`` or ``cpu``; ``steps``: the window's first and last optimizer step; ``n``: its steps.

    Counts per step: ``ops`` (aten operators, nested ones included), ``kernels`` (CUDA kernels), ``launch_calls``,
    ``syncs`` (synchronising runtime calls), ``d2h_copies``, ``cuda_malloc``, ``python_calls``; times per step in ms:
    ``kernel_ms``, ``comm_kernel_ms`` (collective communication), ``cpu_op_ms`` (the aten ops' self time on a CPU);
    ``attention``: the SDPA backend that ran; memory: ``peak_reserved_bytes``, ``peak_allocated_bytes`` (the run's
    device peaks), ``allocated_per_step`` (bytes); tokens per step: ``real_tokens``, ``padded_tokens``. The
    ``*_by_name``, ``sync_calls``, ``alloc_calls`` and ``allocated_by_op`` maps break a count down by name.
    ``details``: every other key of the census as written (its timeline, window totals, counters, resolved
    configuration, ...)."""

    fits: bool
    device: str
    steps: tuple[int, int] | None = None
    n: int | None = None
    logging_steps: int | None = None
    reason: str | None = None
    ops: float | None = None
    ops_by_name: Mapping[str, float] | None = None
    kernels: float | None = None
    kernels_by_name: Mapping[str, float] | None = None
    launch_calls: float | None = None
    sync_calls: Mapping[str, float] | None = None
    alloc_calls: Mapping[str, float] | None = None
    kernel_ms: float | None = None
    kernel_ms_by_name: Mapping[str, float] | None = None
    comm_kernel_ms: float | None = None
    cpu_op_ms: float | None = None
    cpu_op_ms_by_name: Mapping[str, float] | None = None
    attention: str | None = None
    attention_names: tuple[str, ...] = ()
    peak_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    allocated_per_step: float | None = None
    allocated_by_op: Mapping[str, float] | None = None
    real_tokens: float | None = None
    padded_tokens: float | None = None
    python_calls: float | None = None
    python_method: str | None = None
    python_steps: tuple[int, int] | None = None
    python_reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    # the keys of a fitted census that the census read lacked (one written before they existed): left out when written
    absent: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in MAPS:
            object.__setattr__(self, name, _counts(getattr(self, name)))
        for name in ("steps", "python_steps", "attention_names"):
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def syncs(self) -> float | None:
        """The synchronising CUDA runtime calls per step (stream, device and event synchronizes); None on a CPU."""
        if self.sync_calls is None:
            return None
        return round(sum(v for k, v in self.sync_calls.items() if SYNCHRONIZING in k), 4)

    @property
    def d2h_copies(self) -> float | None:
        """The device-to-host memcpys per step; None on a CPU."""
        return None if self.sync_calls is None else self.sync_calls.get("memcpy_dtoh", 0)

    @property
    def cuda_malloc(self) -> float | None:
        """The ``cudaMalloc`` calls per step; None on a CPU."""
        return None if self.alloc_calls is None else self.alloc_calls.get("cudaMalloc", 0)

    def to_json(self) -> dict:
        """The census as a run record holds it, its keys in the census's order."""
        out = self._written()
        extra = [k for k in out if k not in _RANK]
        return {k: out[k] for k in sorted(out, key=lambda k: _RANK[k] if k in _RANK else len(ORDER) + extra.index(k))}

    def _written(self) -> dict:
        out: dict[str, Any] = {k: getattr(self, k) for k in HEAD}
        out["steps"] = list(self.steps) if self.steps is not None else None
        if not self.fits:
            return {**out, "reason": self.reason, **self.details}
        for name in _COUNTS:
            value = getattr(self, name)
            out[BACK.get(name, name)] = (
                dict(value) if isinstance(value, Mapping) else list(value) if isinstance(value, tuple) else value
            )
        if self.python_reason is None:
            del out["python_reason"]
        memory = {k: getattr(self, k) for k in MEMORY}
        memory["allocated_by_op"] = dict(self.allocated_by_op) if self.allocated_by_op is not None else None
        out["memory"] = memory if any(v is not None for v in memory.values()) else None
        tokens = {k: getattr(self, f) for k, f in TOKENS.items()}
        out["tokens"] = tokens if any(v is not None for v in tokens.values()) else None
        return {**{k: v for k, v in out.items() if k not in self.absent}, **self.details}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Census:
        """The census of a run record's ``census`` object."""
        rest = dict(data)
        given: dict[str, Any] = {k: rest.pop(k) for k in (*HEAD, "reason") if k in rest}
        given["fits"] = bool(given.get("fits"))
        given["device"] = str(given.get("device") or "cpu")
        if given["fits"]:
            given["absent"] = tuple(sorted(_WRITTEN - set(rest)))
            for key in list(rest):
                if RENAMED.get(key, key) in _READ:
                    given[RENAMED.get(key, key)] = rest.pop(key)
            memory = rest.pop("memory", None) or {}
            given.update({k: memory.get(k) for k in MEMORY})
            tokens = rest.pop("tokens", None) or {}
            given.update({f: tokens.get(k) for k, f in TOKENS.items()})
        return cls(**given, details=rest)


# The census's fields, looked up once (dataclasses.fields walks the class at each call): those a fitted census's keys
# hold, its counts among them (in the order they are written), and the keys a fitted census writes.
_READ = frozenset(f.name for f in fields(Census)) - {"details", "absent", *MEMORY, *TOKENS.values()}
_COUNTS = tuple(sorted(_READ - {*HEAD, "reason"}))
_WRITTEN = frozenset({*(BACK.get(n, n) for n in _COUNTS), "memory", "tokens"})
