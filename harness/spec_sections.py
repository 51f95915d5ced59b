"""The tables of a workload file, one dataclass each: ``[model]``, ``[data]``, ``[lora]``, ``[train]``, ``[measure]``,
``[quantization]``, and one decomposition of the effective batch. docs/workloads.md describes every key.

Each checks its keys' types and ranges (:func:`harness.spec_fields.check_fields`) and the rules between them in
``__post_init__``; an error is one line naming ``table.key`` (the loader adds the file).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.spec_fields import SpecError, check_fields, opt, req
from harness.spec_tokenizer import MODEL_TOKENIZER, folder_of

if TYPE_CHECKING:
    from harness.architecture import Architecture

PRECISIONS = ("fp16", "bf16", "fp32")
INITS = ("random", "pretrained")
DATA_SOURCES = ("synthetic", "hub", "local")
LORA_BIASES = ("none", "all", "lora_only")
QUANT_TYPES = ("nf4", "fp4")
DIGEST_PATTERN = r"sha256:[0-9a-f]{64}"
# The largest values taken, far past any measurement yet short of a typo: a run that never ends, a rank past any
# layer's width, a sequence no model's positions reach.
MAX_STEPS = 10**9  # optimizer steps of one run; a resident trainer asks for this many and is stopped on command
MAX_RANK = 4_096  # lora.r
MAX_ALPHA = 65_536  # lora.alpha
MAX_LENGTH = 1_048_576  # tokens per sequence
MAX_SAMPLES = 10_000_000  # rows of data.num_samples


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise SpecError(msg)


@dataclass(frozen=True)
class ModelSpec:
    """The model: an architecture (transformers ``model_type`` + config keys) and where the weights come from."""

    model_type: str | None = opt(None, pattern=r"[a-z0-9_\-]+", what="a transformers model type such as 'qwen3'")
    config: dict[str, Any] = opt({})
    init: str = opt("random", choices=INITS)
    hub_id: str | None = opt(None, nonempty=True)
    revision: str | None = opt(None, nonempty=True)
    attn_implementation: str | None = opt(None, nonempty=True)
    # how text becomes token ids: 'bytes', 'words', 'model' or a tokenizer folder; left out, the default for the
    # workload (harness.spec_tokenizer.resolved)
    tokenizer: str | None = opt(None, nonempty=True, what="'bytes', 'words', 'model' or a tokenizer folder")
    # a tokenizer folder only: its content's sha256 (harness.inputs.digest), written by Workload.load; hashed, so that
    # an edited tokenizer is another workload. Absent from to_dict() when None.
    tokenizer_digest: str | None = opt(
        None, pattern=DIGEST_PATTERN, what="'sha256:' and 64 hex digits, as the loader writes it"
    )

    def __post_init__(self):
        check_fields(self, "model")
        _check(
            self.tokenizer != MODEL_TOKENIZER or self.init == "pretrained",
            "model.tokenizer = 'model' is the pretrained model's own tokenizer, and model.init is 'random': "
            "use 'bytes', or a tokenizer folder",
        )
        _check(
            self.tokenizer_digest is None or self.tokenizer_folder is not None,
            "model.tokenizer_digest fingerprints a tokenizer folder: remove it, or name the folder in model.tokenizer",
        )
        _check(
            self.init == "random" or bool(self.hub_id),
            "model.init = 'pretrained' needs model.hub_id (a hub id or a local folder)",
        )
        _check(
            self.init == "pretrained" or (self.hub_id is None and self.revision is None),
            "model.hub_id and model.revision load pretrained weights: set model.init = 'pretrained' or remove them",
        )
        self.architecture()  # unknown keys, a wrong model type or a config that is not the model's: refused here

    @property
    def tokenizer_folder(self) -> str | None:
        """model.tokenizer where it names a folder (neither a built-in tokenizer nor 'model'), else None."""
        return folder_of(self.tokenizer)

    def architecture(self) -> Architecture:
        """The resolved architecture (:func:`harness.architecture.resolve`), cached per model table."""
        import json

        from harness.architecture import ArchitectureError

        key = (
            self.model_type,
            json.dumps(self.config, sort_keys=True, default=str),
            self.init,
            self.hub_id,
            self.revision,
        )
        try:
            return _resolved(key)
        except ArchitectureError as exc:
            raise SpecError(str(exc)) from None


_CACHE: dict[tuple, Architecture] = {}


def _resolved(key: tuple) -> Architecture:
    import json

    from harness.architecture import resolve

    if key not in _CACHE:
        model_type, config, init, hub_id, revision = key
        _CACHE[key] = resolve(model_type, json.loads(config), init, hub_id, revision)
    return _CACHE[key]


@dataclass(frozen=True)
class DataSpec:
    """Synthetic fixed-length tokens, or a hub/local dataset of conversations (formatted by the chat template) or
    text."""

    source: str = opt("synthetic", choices=DATA_SOURCES)
    id: str | None = opt(None, nonempty=True)
    name: str | None = opt(None, nonempty=True)
    split: str = opt("train", nonempty=True)
    num_samples: int = opt(256, low=1, high=MAX_SAMPLES)
    shuffle_seed: int | None = opt(42)
    chat_template: str | bool = opt(True, what="true, false or a Jinja template string")
    text_column: str | None = opt(None, nonempty=True)
    messages_column: str | None = opt(None, nonempty=True)
    # hub data only: the dataset repository's commit, branch or tag, passed to load_dataset; hashed, so that a moved
    # revision is another workload. Absent from to_dict() when None: workloads without it keep their hashes.
    revision: str | None = opt(None, nonempty=True)
    # local data only: the content's sha256 (harness.inputs.data_digest), written by Workload.load; hashed, so that an
    # edited data file is another workload. Absent from to_dict() when None: other sources keep their hashes.
    digest: str | None = opt(None, pattern=DIGEST_PATTERN, what="'sha256:' and 64 hex digits, as the loader writes it")

    def __post_init__(self):
        check_fields(self, "data")
        _check(
            self.digest is None or self.source == "local",
            "data.digest fingerprints a local data file: remove it, or set data.source = 'local'",
        )
        _check(
            self.source == "synthetic" or bool(self.id),
            f"data.source = {self.source!r} needs data.id (a hub dataset id or a local path)",
        )
        _check(
            self.source != "synthetic" or self.id is None,
            "data.id names a hub or local dataset: set data.source = 'hub' or 'local', or remove it",
        )
        _check(
            self.name is None or self.source == "hub",
            "data.name (a subset) applies to hub datasets only: set data.source = 'hub' or remove it",
        )
        _check(
            self.revision is None or self.source == "hub",
            "data.revision pins a hub dataset's version: set data.source = 'hub' or remove it "
            "(local data is pinned by its content, data.digest)",
        )
        _check(
            not (self.text_column and self.messages_column),
            "data.text_column and data.messages_column exclude each other: keep one",
        )
        _check(
            self.source != "synthetic" or not (self.text_column or self.messages_column),
            "data.text_column and data.messages_column name columns of a hub or local dataset; synthetic data has none",
        )
        if isinstance(self.chat_template, str):
            _check(
                self.source != "synthetic",
                "data.chat_template formats conversations; synthetic data has none, so it would be ignored: remove it",
            )
            _check(
                not self.text_column,
                "data.chat_template formats conversations; with data.text_column the rows are plain text "
                "and it would be ignored: remove one of them",
            )
            _check_template(self.chat_template)

    @property
    def conversational(self) -> bool:
        """Whether rows are conversations for the chat template (else plain text in a ``text`` column, or synthetic)."""
        return self.source != "synthetic" and not self.text_column


def _check_template(template: str) -> None:
    import jinja2

    try:
        jinja2.Environment().parse(template)
    except jinja2.TemplateSyntaxError as exc:
        raise SpecError(
            f"data.chat_template is not a valid Jinja template (line {exc.lineno}: {exc.message})"
        ) from None
    _check(
        "{" in template,
        "data.chat_template has no Jinja tag ({{ }} or {% %}): give a template, or true for the tokenizer's own",
    )


@dataclass(frozen=True)
class LoraSpec:
    """The LoRA adapter (peft ``LoraConfig``)."""

    r: int = opt(16, low=1, high=MAX_RANK)
    alpha: int = opt(32, low=1, high=MAX_ALPHA)
    dropout: float = opt(0.0, low=0, below=1)
    bias: str = opt("none", choices=LORA_BIASES)
    target_modules: str | list[str] = opt("all-linear", nonempty=True)
    task_type: str = opt("CAUSAL_LM", choices=("CAUSAL_LM",))

    def __post_init__(self):
        check_fields(self, "lora")


@dataclass(frozen=True)
class TrainSpec:
    """The training schedule and settings (TRL ``SFTConfig``)."""

    max_length: int = req(low=1, high=MAX_LENGTH)
    max_steps: int = req(low=1, high=MAX_STEPS)
    pad_to_multiple_of: int | None = opt(None, low=1)
    packing: bool = opt(False)
    precision: str = opt("fp16", choices=PRECISIONS)
    gradient_checkpointing: bool = opt(True)
    optimizer: str = opt("adamw_torch", nonempty=True)
    learning_rate: float = opt(2e-4, gt0=True)
    warmup_steps: int = opt(0, low=0)
    seed: int = opt(42)
    data_seed: int = opt(42)
    logging_steps: int = opt(5, low=1)
    cpu_threads: int | None = opt(None, low=1)
    dataloader_num_workers: int = opt(0, low=0)

    def __post_init__(self):
        check_fields(self, "train")


@dataclass(frozen=True)
class MeasureSpec:
    """How runs are summarised: leading optimizer steps that the statistics skip."""

    warmup_steps: int = opt(5, low=0)

    def __post_init__(self):
        check_fields(self, "measure")


@dataclass(frozen=True)
class QuantizationSpec:
    """QLoRA: 4-bit base weights through bitsandbytes (transformers ``BitsAndBytesConfig``); the LoRA adapter trains on
    top."""

    load_in_4bit: bool = opt(True)
    bnb_4bit_quant_type: str = opt("nf4", choices=QUANT_TYPES)
    bnb_4bit_compute_dtype: str | None = opt(None, choices=PRECISIONS)
    bnb_4bit_use_double_quant: bool = opt(True)

    def __post_init__(self):
        check_fields(self, "quantization")
        _check(
            self.load_in_4bit,
            "quantization.load_in_4bit = false leaves nothing to quantize (only 4-bit is supported): "
            "remove the [quantization] table for plain LoRA",
        )

    @staticmethod
    def unavailable(device: str) -> str | None:
        """Why 4-bit weights cannot be loaded for ``device`` ('cpu' or a GPU's name), as seen without importing
        anything: bitsandbytes is not installed. None otherwise (the worker then checks that bitsandbytes has a backend
        for it)."""
        if importlib.util.find_spec("bitsandbytes") is None:
            return (
                f"4-bit weights need bitsandbytes, which is not installed here ({device}): pip install bitsandbytes "
                "(or remove [quantization])"
            )
        return None


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
        _check(m is not None, f"batch.decompositions: {text!r} is not MICROxGA or MICROxGAxWORLD (e.g. '2x2')")
        return cls(int(m[1]), int(m[2]), int(m[3] or 1))

    def __post_init__(self):
        for name in ("micro_batch", "grad_accum", "world_size"):
            v = getattr(self, name)
            _check(
                isinstance(v, int) and not isinstance(v, bool) and v > 0,
                f"batch.decompositions: {name} must be a positive integer, got {v!r}",
            )

    @property
    def id(self) -> str:
        base = f"{self.micro_batch}x{self.grad_accum}"
        return base if self.world_size == 1 else f"{base}x{self.world_size}"

    @property
    def product(self) -> int:
        return self.micro_batch * self.grad_accum * self.world_size

    def as_dict(self) -> dict[str, int]:
        return {"micro_batch": self.micro_batch, "grad_accum": self.grad_accum, "world_size": self.world_size}
