"""Workload specs: typed, validated dataclasses loaded from TOML files in ``workloads/``.

A workload names the model, the data, LoRA, precision, the training schedule and the effective batch
with its decompositions (micro-batch x grad-accum x world size). Everything that changes what a
training run computes goes into :attr:`Workload.hash`; names, descriptions and device selection
do not. Bad input raises :class:`SpecError` with one line that says what is wrong and what to do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRECISIONS = ("fp16", "bf16", "fp32")
INITS = ("random", "pretrained")
DATA_SOURCES = ("synthetic", "hub", "local")
# Fields that do not change what a run computes, so they stay out of the hash.
# Pretrained and random weights of one architecture run the same kernels on the same shapes.
_UNHASHED = {"name", "description", "devices", "measure", "decompositions", "model.init", "model.hub_id", "model.revision"}


class SpecError(ValueError):
    """A workload file or override is invalid. ``str(err)`` is one line for the user."""


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise SpecError(msg)


def _build(cls, data: dict[str, Any], where: str):
    """Build dataclass ``cls`` from ``data``, naming any unknown or missing field."""
    _check(isinstance(data, dict), f"{where}: expected a table, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    _check(not unknown, f"{where}: unknown field {', '.join(map(repr, unknown))}; known fields: {', '.join(sorted(names))}")
    try:
        return cls(**data)
    except TypeError as exc:  # missing required field
        raise SpecError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class ModelSpec:
    """The model: an architecture config (transformers ``model_type`` + kwargs) and where weights come from."""

    model_type: str
    config: dict[str, Any]
    init: str = "random"
    hub_id: str | None = None
    revision: str | None = None
    attn_implementation: str | None = None

    def __post_init__(self):
        _check(self.init in INITS, f"model.init must be one of {INITS}, got {self.init!r}")
        _check(self.init == "random" or bool(self.hub_id), "model.init = 'pretrained' needs model.hub_id (a hub id or a local folder)")


@dataclass(frozen=True)
class DataSpec:
    """Synthetic fixed-length tokens, or a hub/local conversational dataset formatted by the chat template."""

    source: str = "synthetic"
    id: str | None = None
    split: str = "train"
    num_samples: int = 256
    shuffle_seed: int | None = 42
    chat_template: bool = True

    def __post_init__(self):
        _check(self.source in DATA_SOURCES, f"data.source must be one of {DATA_SOURCES}, got {self.source!r}")
        _check(self.source == "synthetic" or bool(self.id), f"data.source = {self.source!r} needs data.id")
        _check(self.num_samples > 0, f"data.num_samples must be positive, got {self.num_samples}")


@dataclass(frozen=True)
class LoraSpec:
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    bias: str = "none"
    target_modules: str | list[str] = "all-linear"
    task_type: str = "CAUSAL_LM"

    def __post_init__(self):
        _check(self.r > 0, f"lora.r must be positive, got {self.r}")
        _check(0.0 <= self.dropout < 1.0, f"lora.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class TrainSpec:
    max_length: int
    max_steps: int
    pad_to_multiple_of: int | None = None
    packing: bool = False
    precision: str = "fp16"
    gradient_checkpointing: bool = True
    optimizer: str = "adamw_torch"
    learning_rate: float = 2e-4
    warmup_steps: int = 0
    seed: int = 42
    data_seed: int = 42
    logging_steps: int = 5
    cpu_threads: int | None = None

    def __post_init__(self):
        _check(self.precision in PRECISIONS, f"train.precision must be one of {PRECISIONS}, got {self.precision!r}")
        _check(self.max_steps > 0, f"train.max_steps must be positive, got {self.max_steps}")
        _check(self.max_length > 0, f"train.max_length must be positive, got {self.max_length}")
        _check(self.warmup_steps >= 0, f"train.warmup_steps must be >= 0, got {self.warmup_steps}")
        _check(self.learning_rate > 0, f"train.learning_rate must be positive, got {self.learning_rate}")


@dataclass(frozen=True, order=True)
class Decomposition:
    """One split of the effective batch: ``micro_batch x grad_accum x world_size``."""

    micro_batch: int
    grad_accum: int
    world_size: int = 1

    _PATTERN = re.compile(r"^(\d+)x(\d+)(?:x(\d+))?$")

    @classmethod
    def parse(cls, text: str) -> Decomposition:
        m = cls._PATTERN.match(str(text).strip())
        _check(m is not None, f"decomposition {text!r} is not MICROxGA or MICROxGAxWORLD (e.g. '2x2')")
        return cls(int(m[1]), int(m[2]), int(m[3] or 1))

    def __post_init__(self):
        _check(min(self.micro_batch, self.grad_accum, self.world_size) > 0, f"decomposition {self.id}: every factor must be positive")

    @property
    def id(self) -> str:
        base = f"{self.micro_batch}x{self.grad_accum}"
        return base if self.world_size == 1 else f"{base}x{self.world_size}"

    @property
    def product(self) -> int:
        return self.micro_batch * self.grad_accum * self.world_size

    def as_dict(self) -> dict[str, int]:
        return {"micro_batch": self.micro_batch, "grad_accum": self.grad_accum, "world_size": self.world_size}


@dataclass(frozen=True)
class MeasureSpec:
    """How runs are summarised: leading optimizer steps that the statistics skip."""

    warmup_steps: int = 5

    def __post_init__(self):
        _check(self.warmup_steps >= 0, f"measure.warmup_steps must be >= 0, got {self.warmup_steps}")


@dataclass(frozen=True)
class Workload:
    name: str
    model: ModelSpec
    train: TrainSpec
    effective_batch: int
    decompositions: tuple[Decomposition, ...]
    data: DataSpec = field(default_factory=DataSpec)
    lora: LoraSpec = field(default_factory=LoraSpec)
    measure: MeasureSpec = field(default_factory=MeasureSpec)
    description: str = ""
    devices: tuple[str, ...] = ("gpu",)

    def __post_init__(self):
        _check(re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", self.name or "") is not None, f"workload name {self.name!r}: use lowercase letters, digits, '.' and '-'")
        _check(self.effective_batch > 0, f"{self.name}: effective_batch must be positive, got {self.effective_batch}")
        _check(len(self.decompositions) > 0, f"{self.name}: list at least one decomposition")
        for d in self.decompositions:
            _check(d.product == self.effective_batch,
                   f"{self.name}: decomposition {d.id} gives {d.product} samples per step, not the effective batch {self.effective_batch}; "
                   f"use micro x grad-accum x world = {self.effective_batch}")
        ids = [d.id for d in self.decompositions]
        _check(len(set(ids)) == len(ids), f"{self.name}: decompositions repeat: {ids}")
        _check(self.measure.warmup_steps < self.train.max_steps,
               f"{self.name}: measure.warmup_steps ({self.measure.warmup_steps}) leaves no step of train.max_steps ({self.train.max_steps}) to measure")

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "workload") -> Workload:
        data = dict(data)
        _check(isinstance(data.get("name"), str), f"{where}: missing 'name'")
        where = f"{where} ({data['name']})" if where != data["name"] else where
        sub = {"model": ModelSpec, "data": DataSpec, "lora": LoraSpec, "train": TrainSpec, "measure": MeasureSpec}
        for key, kind in sub.items():
            if key in data:
                data[key] = _build(kind, data[key], f"{where} [{key}]")
        batch = data.pop("batch", None)
        _check(isinstance(batch, dict), f"{where}: missing [batch] table with 'effective' and 'decompositions'")
        unknown = sorted(set(batch) - {"effective", "decompositions"})
        _check(not unknown, f"{where} [batch]: unknown field {', '.join(map(repr, unknown))}; known fields: decompositions, effective")
        data["effective_batch"] = batch.get("effective", 0)
        data["decompositions"] = tuple(
            Decomposition.parse(d) if isinstance(d, str) else _build(Decomposition, d, f"{where} [batch]") for d in batch.get("decompositions", ())
        )
        if "devices" in data:
            data["devices"] = tuple(data["devices"])
        for f in ("model", "train"):
            _check(f in data, f"{where}: missing [{f}] table")
        return _build(cls, data, where)

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise SpecError(f"workload file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path}: not valid TOML ({exc})") from None
        return cls.from_dict(raw, where=str(path))

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["decompositions"] = [d.id for d in self.decompositions]
        out["batch"] = {"effective": out.pop("effective_batch"), "decompositions": out.pop("decompositions")}
        out["devices"] = list(self.devices)
        return out

    def with_overrides(self, *, max_steps: int | None = None) -> Workload:
        """A copy with ``--steps`` applied. The hash changes with it, so baselines stay comparable only at equal steps."""
        if max_steps is None:
            return self
        _check(max_steps > 0, f"--steps must be positive, got {max_steps}")
        warm = min(self.measure.warmup_steps, max(max_steps - 1, 0))
        return dataclasses.replace(self, train=dataclasses.replace(self.train, max_steps=max_steps),
                                   measure=dataclasses.replace(self.measure, warmup_steps=warm))

    def with_splits(self, effective: int | None = None) -> Workload:
        """A copy whose decompositions are every micro-batch x grad-accum split of ``effective`` (default: its own effective
        batch) on one device, largest micro-batch first: what ``python -m harness advise`` compares."""
        e = self.effective_batch if effective is None else effective
        _check(isinstance(e, int) and e > 0, f"--effective must be a positive whole number, got {e}")
        splits = tuple(Decomposition(m, e // m) for m in range(e, 0, -1) if e % m == 0)
        return dataclasses.replace(self, effective_batch=e, decompositions=splits)

    def runs_on(self, device: str) -> bool:
        """Selected by default on ``device`` ('cpu' or a GPU's short name): its ``devices`` list 'cpu', 'gpu' or that name."""
        return "cpu" in self.devices if device == "cpu" else ("gpu" in self.devices or device in self.devices)

    def decomposition(self, ident: str) -> Decomposition:
        for d in self.decompositions:
            if d.id == ident:
                return d
        raise SpecError(f"{self.name}: no decomposition {ident!r}; it has {[d.id for d in self.decompositions]}")

    # ---- identity -----------------------------------------------------------------------------
    def timing_fields(self) -> dict[str, Any]:
        """Flattened ``section.field -> value`` of everything that affects timing."""
        return {k: v for k, v in flatten(self.to_dict()).items() if not _excluded(k)}

    @property
    def hash(self) -> str:
        blob = json.dumps(self.timing_fields(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _excluded(key: str) -> bool:
    return any(key == u or key.startswith(u + ".") for u in _UNHASHED) or key == "batch.decompositions"


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = list(v) if isinstance(v, tuple) else v
    return out


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Timing-relevant fields that differ between two ``Workload.to_dict()`` dicts, as ``field: old -> new``."""
    a = {k: v for k, v in flatten(old).items() if not _excluded(k)}
    b = {k: v for k, v in flatten(new).items() if not _excluded(k)}
    return [f"{k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def load_workloads(directory: str | Path) -> dict[str, Workload]:
    """Every ``*.toml`` in ``directory``, by name. Raises SpecError on the first bad file or a repeated name."""
    found: dict[str, Workload] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        w = Workload.load(path)
        _check(w.name not in found, f"{path}: workload name {w.name!r} is used twice")
        found[w.name] = w
    return found


def load_workload(directory: str | Path, name: str, steps: int | None = None) -> Workload:
    """The workload ``name`` from ``directory``, with ``--steps`` applied. Raises SpecError naming the known ones."""
    found = load_workloads(directory)
    _check(name in found, f"no workload {name!r} in {directory}; known: {', '.join(found)}")
    return found[name].with_overrides(max_steps=steps)
