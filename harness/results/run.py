"""One run as ``runs.jsonl`` holds it, one line a run: who ran what (the workload and its split, the GPU label, the
session), how it ended and what it measured. The runner writes the line (``harness.measuring.runner``); its keys are
described one by one in ``docs/measurement.md``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from statistics import median
from types import MappingProxyType
from typing import Any

from harness.record import PHASES
from harness.results import formats
from harness.results.census import Census

# The keys in the order the runner writes them (its header, then the worker's result, then what the runner adds); a
# key not listed here goes after them, in the order it was read.
ORDER = (
    formats.KEY,
    "run_id",
    "session_id",
    "workload",
    "workload_hash",
    "workload_spec",
    "decomposition",
    "decomposition_id",
    "repeat",
    "gpu",
    "started_at",
    "wall_s",
    "phases_enabled",
    "inject_slowdown",
    "inject_work",
    "profile_steps",
    "exit_code",
    "status",
    "signal",
    "error",
    "traceback",
    "train_runtime_s",
    "train_loss",
    "step_times_ms",
    "warmup_steps",
    "step_time_median_ms",
    "phases_ms",
    "losses",
    "tokens_per_s",
    "peak_reserved_bytes",
    "peak_allocated_bytes",
    "gpu_samples",
    "profile",
    "host_probe",
    "env",
    "census",
    "data_digest",
    "unk_share",
    "inject_work_fired",
    "timing_s",
    "rank",
    "ranks",
    "world_size",
    "failed_rank",
    "stderr_tail",
    "log",
    "series_of",
    "machine",
)
_RANK = {k: i for i, k in enumerate(ORDER)}


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _frozen(value: object) -> object:
    """A JSON value that cannot be changed through the run: objects as read-only mappings, arrays as tuples."""
    if type(value) in _LEAVES:  # most values of a record; checked first, as an ABC's isinstance is slow
        return value
    if isinstance(value, dict | Mapping):  # a dict told at once, before the ABC is asked
        return MappingProxyType({k: v if type(v) in _LEAVES else _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(v if type(v) in _LEAVES else _frozen(v) for v in value)
    return value


def _unset(default: object, value: object) -> bool:
    """A field's value that its key does not write: None, or the empty text of a field that is text by default."""
    return value is None or (value == "" and default == "")


def plain(value: Any) -> Any:
    """The JSON value of a run's field or a part of one: mappings as dicts, tuples as lists, a census as its JSON."""
    if type(value) in _LEAVES:
        return value
    if isinstance(value, Census):
        return value.to_json()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Run:
    """One line of ``runs.jsonl``. Identity: ``run_id``, ``session_id``, ``workload`` (its name), ``workload_hash``,
    ``workload_spec`` (the spec as run), ``decomposition`` (``{micro_batch, grad_accum, world_size}``),
    ``decomposition_id`` (``"2x2"``), ``repeat`` (1-based), ``gpu`` (the label the session was run with),
    ``started_at``, ``wall_s``, ``exit_code``; switches: ``phases_enabled``, ``inject_slowdown``, ``inject_work``,
    ``profile_steps``; outcome: ``status`` (``ok``, ``oom``, ``crash``, ``timeout`` or ``error``),
    ``error``, ``signal``, ``stderr_tail``;
    measurements: ``step_times_ms`` (every optimizer step), ``warmup_steps``, ``step_time_median_ms`` (the steady
    steps'), ``train_runtime_s``, ``train_loss``, ``phases_ms``, ``losses``, ``tokens_per_s``, ``peak_reserved_bytes``,
    ``peak_allocated_bytes``, ``unk_share``; ``host_probe``: the speed of the host, measured before
    the run; ``gpu_samples``: the GPU's utilisation sampled during the run; ``profile``: a profiled run's kernel time;
    ``census``: a census run's counts of the work per step; ``env``: the machine and versions the worker found;
    ``machine``: what a reader of several results dirs tells their machines by.

    A field is None where the record lacks its key or holds null there. ``details``: every other key as written (the
    profile, the timings of the worker, a failed run's traceback, ...), and the keys written as null, so that
    :meth:`to_json` gives back the record that was read."""

    run_id: str = ""
    session_id: str | None = None
    workload: str = ""
    workload_hash: str | None = None
    workload_spec: Mapping[str, Any] | None = None
    decomposition: Mapping[str, int] | str | None = None
    decomposition_id: str = ""
    repeat: int | None = None
    gpu: str = ""
    started_at: str | None = None
    wall_s: float | None = None
    exit_code: int | None = None
    phases_enabled: bool | None = None
    inject_slowdown: float | None = None
    inject_work: int | None = None
    profile_steps: int | None = None
    status: str = ""
    error: str | None = None
    signal: str | None = None
    stderr_tail: str | None = None
    train_runtime_s: float | None = None
    train_loss: float | None = None
    step_times_ms: tuple[float, ...] | None = None
    warmup_steps: int | None = None
    step_time_median_ms: float | None = None
    phases_ms: Mapping[str, tuple[float, ...]] | None = None
    losses: tuple[float | None, ...] | None = None
    tokens_per_s: float | None = None
    peak_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    unk_share: float | None = None
    census: Census | None = None
    host_probe: Mapping[str, Any] | None = None
    gpu_samples: tuple[Mapping[str, Any], ...] | None = None
    profile: Mapping[str, Any] | None = None
    env: Mapping[str, Any] | None = None
    log: str | None = None
    machine: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in _FROZEN:
            if type(value := getattr(self, name)) not in _LEAVES:  # a plain value is its own frozen form
                object.__setattr__(self, name, _frozen(value))

    # ---- what the record says, read from its parts -------------------------------------------------------------
    @property
    def ok(self) -> bool:
        """The run finished."""
        return self.status == "ok"

    @property
    def is_census(self) -> bool:
        """A census run: it counted the work of its steps under the profiler and ended early; never a timed run."""
        return self.census is not None

    @property
    def census_fits(self) -> bool:
        """A census run whose profiled window fitted, so that it holds counts."""
        return self.census is not None and self.census.fits

    @property
    def steady_step_times_ms(self) -> tuple[float, ...]:
        """The step times after the warm-up steps."""
        return (self.step_times_ms or ())[self.warmup_steps or 0 :]

    @property
    def versions(self) -> dict[str, Any] | None:
        """The package versions the worker found (``env.versions``)."""
        return plain((self.env or {}).get("versions"))

    @property
    def boot_id(self) -> str | None:
        """The boot id of the machine the run was made on (``env.boot_id``); None in runs made before it was kept."""
        return (self.env or {}).get("boot_id")

    @property
    def hostname(self) -> str | None:
        return (self.env or {}).get("hostname")

    @property
    def gpu_found(self) -> str | None:
        """The device the worker found (``env.gpu_short``), against ``gpu``, the label the session was run with."""
        return (self.env or {}).get("gpu_short")

    @property
    def machine_id(self) -> str | None:
        """What tells this run's machine from another's: the boot id, else ``machine``, else the session."""
        return self.boot_id or self.machine or self.session_id

    def phase_medians(self) -> dict[str, float] | None:
        """The run's median steady-state time per phase (ms per optimizer step), or None without phase timings."""
        ph, w = self.phases_ms or {}, self.warmup_steps or 0
        steady = {p: ph[p][w:] for p in PHASES if ph.get(p)}
        return {p: round(median(v), 3) for p, v in steady.items() if v} or None

    def exclusion(self) -> str | None:
        """Why the run is not a point of a timing series, or None for a plain timed run."""
        if self.is_census:
            return "census"
        if not self.ok:
            return f"failed ({self.status or None})"
        if self.inject_slowdown or self.inject_work:
            return "injected slowdown or work"
        if self.profile_steps:
            return "profiled"
        if self.phases_enabled is False:
            return "phases off"
        if not self.step_time_median_ms:
            return "no step time"
        return None

    def detail(self, key: str) -> Any:
        """An untyped key of the record (``details``) as JSON, or None."""
        return plain(self.details.get(key))

    def with_machine(self, machine: str) -> Run:
        return replace(self, machine=machine)

    # ---- JSON ---------------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The record as ``runs.jsonl`` holds it, stamped with the current format, its keys in the runner's order."""
        out: dict[str, Any] = {formats.KEY: formats.RUN.version}
        for name, default in _DEFAULTS.items():
            if not _unset(default, value := getattr(self, name)):
                out[name] = plain(value)
        out.update({k: plain(v) for k, v in self.details.items() if k != formats.KEY})
        extra = [k for k in out if k not in _RANK]
        return {k: out[k] for k in sorted(out, key=lambda k: _RANK[k] if k in _RANK else len(ORDER) + extra.index(k))}

    @classmethod
    def from_json(cls, data: object, where: str = "") -> Run:
        """The run of one line of ``runs.jsonl``, upgraded to the current format (:data:`formats.RUN`);
        :class:`formats.FormatError` for an object that is no run record."""
        rest = formats.RUN.read(data, where)
        del rest[formats.KEY]
        given: dict[str, Any] = {
            k: rest.pop(k) for k in list(rest) if k in _DEFAULTS and not _unset(_DEFAULTS[k], rest[k])
        }
        if "census" in given:
            if isinstance(given["census"], Mapping):
                given["census"] = Census.from_json(given["census"])
            else:  # not a census: kept as written, for the reader's shape check to name
                rest["census"] = given.pop("census")
        return cls(**given, details=rest)


# A run's fields, looked up once (dataclasses.fields walks the class at each call): those its JSON keys hold, with their
# defaults, and those frozen as they are set.
_DEFAULTS = {f.name: f.default for f in fields(Run) if f.name != "details"}
_FROZEN = tuple(f.name for f in fields(Run) if f.name != "census")
