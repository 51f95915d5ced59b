"""Workload specs: typed, validated dataclasses loaded from TOML files in ``workloads/``.

A workload names the model, the data, LoRA, precision, the training schedule and the effective batch
with its decompositions (micro-batch x grad-accum x world size); the tables are the dataclasses of
:mod:`harness.spec_sections`, and docs/workloads.md describes every key. Everything that changes what a
training run computes goes into :attr:`Workload.hash`, the model as its resolved architecture
(:mod:`harness.architecture`), the tokenizer as :mod:`harness.spec_tokenizer` says; names, descriptions and device
selection do not. Bad input raises
:class:`SpecError` with one line that names the file and the key and says what to do.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import spec_tokenizer
from harness.spec_fields import SpecError, check_fields, opt, out_of_range, req
from harness.spec_sections import (
    DATA_SOURCES,
    INITS,
    PRECISIONS,
    DataSpec,
    Decomposition,
    LoraSpec,
    MeasureSpec,
    ModelSpec,
    QuantizationSpec,
    TrainSpec,
    _check,
)
from harness.spec_tables import build_section
from harness.values import depth

MAX_NAME = 64  # characters of a workload's name: it names files (baselines, reports) and every case of the workload
MAX_DEPTH = 16  # levels of tables and lists in a workload file; its deepest key (a model config's table) needs 4

__all__ = [
    "DATA_SOURCES",
    "INITS",
    "PRECISIONS",
    "DataSpec",
    "Decomposition",
    "LoraSpec",
    "MeasureSpec",
    "ModelSpec",
    "QuantizationSpec",
    "SpecError",
    "TrainSpec",
    "Workload",
    "changed_fields",
    "flatten",
]

# Fields that do not change what a run computes, so they stay out of the hash. The model enters as its resolved
# architecture (:meth:`ModelSpec.architecture`): random and pretrained weights of one architecture run the same kernels
# on the same shapes, so init, hub_id and revision stay out, and [model.config] enters as normalised, not as written.
_UNHASHED = {
    "name",
    "description",
    "devices",
    "measure",
    "decompositions",
    "model.init",
    "model.hub_id",
    "model.revision",
    "model.model_type",
    "model.config",
    "model.tokenizer",  # enters as spec_tokenizer.identity, a folder as its content
    "model.tokenizer_digest",
}
_SECTIONS = {
    "model": ModelSpec,
    "data": DataSpec,
    "lora": LoraSpec,
    "train": TrainSpec,
    "measure": MeasureSpec,
    "quantization": QuantizationSpec,
}


@dataclass(frozen=True)
class Workload:
    name: str = req(
        pattern=r"[a-z0-9][a-z0-9.\-]*", what="lowercase letters, digits, '.' and '-' (e.g. 'my-model-lora')"
    )
    model: ModelSpec = req()
    train: TrainSpec = req()
    effective_batch: int = req(low=1, key="batch.effective")
    decompositions: tuple[Decomposition, ...] = req(
        nonempty=True, key="batch.decompositions", what="a non-empty list such as ['1x4', '2x2']"
    )
    data: DataSpec = opt(DataSpec())
    lora: LoraSpec = opt(LoraSpec())
    measure: MeasureSpec = opt(MeasureSpec())
    quantization: QuantizationSpec | None = opt(None)
    description: str = opt("")
    devices: tuple[str, ...] = opt(("gpu",), what="a list of 'cpu', 'gpu' or GPU names such as 'h200' (e.g. [\"gpu\"])")
    # Where a relative data.id is read from: the project, the folder above the workloads folder the file was loaded
    # from (empty: the current directory). Not a key of the file: never hashed, stored, or compared.
    root: str = dataclasses.field(default="", compare=False, repr=False)

    def __post_init__(self):
        if isinstance(self.devices, list):  # as a TOML file gives it
            object.__setattr__(self, "devices", tuple(self.devices))
        check_fields(self, "")
        _check(len(self.name) <= MAX_NAME, f"name has {len(self.name):,} characters; give at most {MAX_NAME}")
        for d in self.devices:
            _check(
                re.fullmatch(r"[a-z0-9][a-z0-9\-]*", d) is not None,
                f"devices: {d!r} is not 'cpu', 'gpu' or a GPU's short name such as 'h200'",
            )
        for d in self.decompositions:
            _check(
                d.product == self.effective_batch,
                f"batch.decompositions: decomposition {d.id} gives {d.product} samples per step, "
                f"not the effective batch {self.effective_batch}; "
                f"use micro x grad-accum x world = {self.effective_batch}",
            )
        ids = [d.id for d in self.decompositions]
        _check(len(set(ids)) == len(ids), f"batch.decompositions repeat: {ids}")
        _check(
            self.measure.warmup_steps < self.train.max_steps,
            f"measure.warmup_steps ({self.measure.warmup_steps}) leaves no step of "
            f"train.max_steps ({self.train.max_steps}) to measure",
        )
        _check(
            self.train.precision != "fp16" or "cpu" not in self.devices,
            "train.precision = 'fp16' needs a GPU but devices lists 'cpu': use 'fp32' or 'bf16' for a CPU workload",
        )
        _check(
            self.quantization is None
            or self.train.precision != "fp16",  # TRL's SFTTrainer casts a 4-bit model's adapter to bf16
            "train.precision = 'fp16' cannot train a QLoRA adapter "
            "(TRL keeps it in bf16, which fp16 loss scaling refuses): "
            "use precision 'bf16' with [quantization]",
        )
        spec_tokenizer.check_fits(self.model, self.data, self.model.architecture().config.get("vocab_size"))

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str | None = None) -> Workload:
        """A workload from its TOML tables; ``where`` (the file) heads every error line."""
        _check(isinstance(data, dict), f"{where or 'workload'}: expected a table of workload keys")
        where = where or f"workload {str(data.get('name', '?'))[:MAX_NAME]}"
        if (levels := depth(data)) > MAX_DEPTH:  # before any walk of it that recurses
            raise SpecError(f"{where}: nested {levels} levels deep; a workload nests at most {MAX_DEPTH}")
        if (why := out_of_range(data)) is not None:  # nan, inf and a 100-bit step count all parse as TOML
            raise SpecError(f"{where}: {why}; give a finite value in range")
        data = {k: v for k, v in data.items() if not (k == "quantization" and v is None)}
        known = [
            f.name for f in dataclasses.fields(cls) if f.name not in ("effective_batch", "decompositions", "root")
        ] + ["batch"]
        for key in data:
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1)
                raise SpecError(
                    f"{where}: unknown field {key!r}; "
                    + (f"did you mean {near[0]}?" if near else f"known: {', '.join(known)}")
                )
        for f in ("name", "model", "train", "batch"):
            _check(f in data, f"{where}: missing {f!r}" if f == "name" else f"{where}: missing [{f}] table")
        for key, kind in _SECTIONS.items():
            if key in data:
                data[key] = build_section(kind, data[key], where, key)
        batch = data.pop("batch")
        _check(isinstance(batch, dict), f"{where}: [batch] must be a table with 'effective' and 'decompositions'")
        for key in sorted(set(batch) - {"effective", "decompositions"}):
            raise SpecError(f"{where}: unknown field {key!r} in [batch]; known: decompositions, effective")
        effective, decs = batch.get("effective"), batch.get("decompositions")
        _check(
            isinstance(decs, list), f"{where}: batch.decompositions must be a list such as ['1x4', '2x2'], got {decs!r}"
        )
        try:
            decompositions = tuple(
                Decomposition.parse(d) if isinstance(d, str) else build_section(Decomposition, d, where, "batch")
                for d in decs
            )
        except SpecError as exc:
            line = str(exc)
            raise SpecError(line if line.startswith(f"{where}: ") else f"{where}: {line}") from None
        try:
            return cls(**data, effective_batch=effective, decompositions=decompositions)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise SpecError(f"workload file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path}: not valid TOML ({exc})") from None
        except RecursionError:  # the TOML reader recurses per level of nesting
            raise SpecError(f"{path}: nested too deep to read; a workload nests at most {MAX_DEPTH} levels") from None
        w = dataclasses.replace(cls.from_dict(raw, where=str(path)), root=str(path.absolute().parent.parent))
        w = w.with_data_digest(str(path))
        return dataclasses.replace(w, model=spec_tokenizer.with_digest(w.model, str(path)))  # a tokenizer folder's

    def with_data_digest(self, where: str) -> Workload:
        """A copy whose local data carries its content digest (``data.digest``, hashed); a digest the file gives pins
        the data and is checked. Synthetic and hub data are returned as they are."""
        if self.data.source != "local":
            return self
        from harness.inputs import data_digest, short

        try:
            found = data_digest(self.data.id, self.root)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        _check(
            self.data.digest in (None, found),
            f"{where}: data.digest pins {short(self.data.digest)} but {self.data.id} now holds "
            f'{short(found)}: restore the data, or take the new content with data.digest = "{found}" (then '
            "record the workload's baselines again)",
        )
        return dataclasses.replace(self, data=dataclasses.replace(self.data, digest=found))

    @property
    def tokenizer(self) -> str:
        """How text becomes token ids: 'bytes', 'words', 'model' or a folder (:func:`spec_tokenizer.resolved`)."""
        return spec_tokenizer.resolved(self.model, self.data)

    def to_dict(self) -> dict[str, Any]:
        """The workload as its file's tables (a stored spec): ``[batch]`` of the effective batch and the decompositions'
        ids, no ``[quantization]`` table for plain LoRA, no data.digest or data.revision where unset."""
        return self._tables(self.data.id)

    def for_worker(self) -> dict[str, Any]:
        """The workload as a worker process gets it (:meth:`to_dict`), its local data's path resolved against its
        project (:attr:`root`), whatever the worker's current directory."""
        if self.data.source != "local":
            return self.to_dict()
        from harness.inputs import local_path

        return self._tables(str(local_path(self.data.id, self.root)))

    def _tables(self, data_id: str | None) -> dict[str, Any]:
        """:meth:`to_dict`, its data.id ``data_id``."""
        data = {
            k: v for k, v in dataclasses.asdict(self.data).items() if v is not None or k not in ("digest", "revision")
        }
        return {
            "name": self.name,
            "model": spec_tokenizer.stored(self.model, self.data),
            "train": dataclasses.asdict(self.train),
            "data": data | {"id": data_id},
            "lora": dataclasses.asdict(self.lora),
            "measure": dataclasses.asdict(self.measure),
            **({} if self.quantization is None else {"quantization": dataclasses.asdict(self.quantization)}),
            "description": self.description,
            "devices": list(self.devices),
            "batch": {"effective": self.effective_batch, "decompositions": [d.id for d in self.decompositions]},
        }

    def with_overrides(self, *, max_steps: int | None = None) -> Workload:
        """A copy with ``--steps`` applied. The hash changes with it, so baselines stay comparable only at equal
        steps."""
        if max_steps is None:
            return self
        _check(max_steps > 0, f"--steps must be positive, got {max_steps}")
        warm = min(self.measure.warmup_steps, max(max_steps - 1, 0))
        return dataclasses.replace(
            self,
            train=dataclasses.replace(self.train, max_steps=max_steps),
            measure=dataclasses.replace(self.measure, warmup_steps=warm),
        )

    def with_splits(self, effective: int | None = None) -> Workload:
        """A copy whose decompositions are every micro-batch x grad-accum split of ``effective`` (default: its own
        effective batch) on one device, largest micro-batch first: what ``python -m harness advise`` compares."""
        e = self.effective_batch if effective is None else effective
        _check(isinstance(e, int) and e > 0, f"--effective must be a positive whole number, got {e}")
        splits = tuple(Decomposition(m, e // m) for m in range(e, 0, -1) if e % m == 0)
        return dataclasses.replace(self, effective_batch=e, decompositions=splits)

    def runs_on(self, device: str) -> bool:
        """Selected by default on ``device`` ('cpu' or a GPU's short name): its ``devices`` list 'cpu', 'gpu' or that
        name."""
        return "cpu" in self.devices if device == "cpu" else ("gpu" in self.devices or device in self.devices)

    def decomposition(self, ident: str) -> Decomposition:
        for d in self.decompositions:
            if d.id == ident:
                return d
        raise SpecError(f"{self.name}: no decomposition {ident!r}; it has {[d.id for d in self.decompositions]}")

    def check_device(self, device: str) -> None:
        """Refuse, in one line and before any training, a workload that ``device`` ('cpu' or a GPU's short name) cannot
        run."""
        why = self.quantization.unavailable(device) if self.quantization is not None else None
        _check(why is None, f"{self.name}: [quantization] {why}")

    # ---- identity -----------------------------------------------------------------------------
    def architecture(self) -> dict[str, Any]:
        """The model's resolved architecture as JSON: ``model_type``, ``config`` (every key), ``hashed`` and ``source``
        (:class:`harness.architecture.Architecture`, which :meth:`ModelSpec.architecture` gives)."""
        return self.model.architecture().to_json()

    def timing_fields(self) -> dict[str, Any]:
        """Flattened ``section.field -> value`` of everything that affects timing: the model as its resolved
        architecture, the tokenizer as :func:`harness.spec_tokenizer.identity`."""
        arch = self.model.architecture()
        out = {k: v for k, v in flatten(self.to_dict()).items() if not _excluded(k)}
        out["model.model_type"] = arch.model_type
        out.update(flatten(arch.hashed, "model.config."))
        out["model.tokenizer"] = spec_tokenizer.identity(self.model, self.data)
        return out

    @property
    def hash(self) -> str:
        fields = spec_tokenizer.hashed_fields(self.timing_fields(), self.model, self.data)
        blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
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
    a, b = _timing(old), _timing(new)
    return [_change(k, a, b) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _change(key: str, a: dict[str, Any], b: dict[str, Any]) -> str:
    """One changed field as ``field: old -> new``; the data's digest names the data file whose content changed."""
    if key == "data.digest" and a.get("data.id") == b.get("data.id"):
        from harness.inputs import short

        return f"data.digest: the content of {b.get('data.id')} changed ({short(a.get(key))} -> {short(b.get(key))})"
    if key == "model.tokenizer":  # a folder enters as its content
        return f"model.tokenizer: {spec_tokenizer.said(a.get(key))} -> {spec_tokenizer.said(b.get(key))}"
    return f"{key}: {a.get(key, '<absent>')!r} -> {b.get(key, '<absent>')!r}"


def _timing(spec: dict[str, Any]) -> dict[str, Any]:
    """The timing fields of a stored spec; a spec that no longer loads is compared as written."""
    spec = spec_tokenizer.as_run(spec)
    try:
        return Workload.from_dict(spec).timing_fields()
    except SpecError:
        return {
            k: v
            for k, v in flatten(spec).items()
            if not _excluded(k) or k.startswith("model.config.") or k == "model.model_type"
        }
