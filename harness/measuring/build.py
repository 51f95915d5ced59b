"""The backend: turn a :class:`~harness.spec.Workload` into a tokenizer, a model, a dataset and an SFTTrainer.

Offline by default: random weights from the architecture config, synthetic fixed-length tokens and a tokenizer built
in memory (word-level for synthetic rows, byte-level for text). Pretrained weights, tokenizer folders and hub/local
datasets go through the real transformers/datasets loaders. Only the worker process imports this module (it imports
torch).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from harness.errors import BadInput
from harness.spec import Decomposition, SpecError, Workload

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_SPECIAL = ["<pad>", "<|im_start|>", "<|im_end|>", "<unk>"]


class HubUnavailable(RuntimeError):
    """A pretrained model or hub dataset could not be loaded. ``str(err)`` is one line."""


def _hub_errors() -> tuple[type[BaseException], ...]:
    errs: list[type[BaseException]] = [OSError, ConnectionError]
    try:
        from huggingface_hub import errors as hf_errors

        errs += [
            getattr(hf_errors, n)
            for n in ("HfHubHTTPError", "OfflineModeIsEnabled", "LocalEntryNotFoundError")
            if hasattr(hf_errors, n)
        ]
    except ImportError:  # pragma: no cover
        pass
    try:
        from datasets.exceptions import DatasetNotFoundError

        errs.append(DatasetNotFoundError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errs)


def _unavailable(what: str, ident: str, exc: BaseException, fix: str) -> HubUnavailable:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return HubUnavailable(
        f"cannot load {what} {ident!r} ({type(exc).__name__}: {first}); "
        f"the hub is unreachable or the id is wrong: {fix}"
    )


def in_memory_tokenizer(vocab_words: int = 256):
    """A word-level fast tokenizer built in memory, with pad/eos tokens and a ChatML chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(_SPECIAL + [f"w{i}" for i in range(vocab_words)])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _byte_chars() -> list[str]:
    """The printable character that stands for each byte value 0-255 in a byte-level BPE vocabulary (GPT-2's table):
    printable Latin-1 bytes stand for themselves, the others for the characters from U+0100 on, in byte order."""
    keep = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)}
    out, extra = [], 0
    for b in range(256):
        out.append(chr(b) if b in keep else chr(256 + extra))
        extra += b not in keep
    return out


def byte_tokenizer():
    """A byte-level fast tokenizer built in memory: the special tokens of :func:`in_memory_tokenizer` (ids 0-3) and
    one token per byte value (id 4 + the byte), a BPE without merges, so every text becomes its UTF-8 bytes and no
    token is ``<unk>``; with the ChatML chat template. A change here is a new version in
    harness.spec_tokenizer.BUILT_IN_TOKENIZERS (the hash)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(_SPECIAL + _byte_chars())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(_SPECIAL)  # matched whole before the text is split into bytes
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tokenizer(w: Workload):
    """The workload's tokenizer (:attr:`Workload.tokenizer`): the pretrained model's own, a built-in one or a local
    folder's, with data.chat_template applied. A folder whose content changed since the workload was loaded, or a
    tokenizer with more ids than the model's vocabulary, is refused in one line."""
    name = w.tokenizer
    if name == "model":
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(w.model.hub_id, revision=w.model.revision)
        except _hub_errors() as exc:
            raise _unavailable(
                "tokenizer", w.model.hub_id, exc, "use model.init = 'random' or point model.hub_id at a local folder"
            ) from None
    elif name == "words":
        tok = in_memory_tokenizer()
    elif name == "bytes":
        tok = byte_tokenizer()
    else:
        tok = _folder_tokenizer(w)
    vocab = w.architecture()["config"].get("vocab_size")
    if name != "model" and isinstance(vocab, int) and len(tok) > vocab and w.data.source != "synthetic":
        raise SpecError(
            f"{w.name}: model.tokenizer = {name!r} has {len(tok)} token ids but model.config.vocab_size is {vocab}: "
            f"raise vocab_size to {len(tok)} or more, or name a smaller tokenizer"
        )
    return apply_chat_template(tok, w.data.chat_template)


def _folder_tokenizer(w: Workload):
    """The tokenizer of folder model.tokenizer, read offline; the folder is the one the workload was hashed with."""
    from transformers import AutoTokenizer

    from harness.inputs import short, tokenizer_digest

    folder = w.model.tokenizer_folder
    found = tokenizer_digest(folder)
    if w.model.tokenizer_digest is not None and found != w.model.tokenizer_digest:
        raise SpecError(
            f"{w.name}: model.tokenizer_digest: {folder} changed since the workload was loaded "
            f"({short(w.model.tokenizer_digest)} -> {short(found)}); restore it, or rerun to take the new content"
        )
    try:
        return AutoTokenizer.from_pretrained(str(Path(folder).expanduser()), local_files_only=True)
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SpecError(
            f"{w.name}: model.tokenizer = {folder!r} cannot be loaded ({type(exc).__name__}: {first}); save the "
            "tokenizer there again with save_pretrained"
        ) from None


def unk_share(dataset, tokenizer) -> float | None:
    """The share of ``<unk>`` ids among the tokens of ``dataset``'s ``input_ids`` (the rows as the trainer tokenized
    them); None where the tokenizer has no unknown token or the rows have no tokens."""
    unk = tokenizer.unk_token_id
    if unk is None or "input_ids" not in dataset.column_names:
        return None
    total = hits = 0
    for ids in dataset["input_ids"]:
        total += len(ids)
        hits += sum(1 for i in ids if i == unk)
    return hits / total if total else None


def apply_chat_template(tok, template: str | bool):
    """data.chat_template on ``tok``: a template string replaces the tokenizer's; true keeps the tokenizer's own (the
    built-in ChatML one where it has none); false removes it (the rows must then be plain text)."""
    if isinstance(template, str):
        tok.chat_template = template
    elif template and not getattr(tok, "chat_template", None):
        tok.chat_template = CHAT_TEMPLATE
    elif not template:
        tok.chat_template = None
    return tok


def check_architecture(w: Workload) -> None:
    """The pretrained model's own config against the workload's architecture, before any weight is read: a workload
    loaded where the model could not be read (offline) hashed its [model.config], which must then be the model's."""
    from transformers import AutoConfig

    from harness.architecture import ArchitectureError, check_against, of_model

    try:
        cfg = AutoConfig.from_pretrained(w.model.hub_id, revision=w.model.revision)
    except _hub_errors() as exc:
        raise _unavailable(
            "model config", w.model.hub_id, exc, "use model.init = 'random' or point model.hub_id at a local folder"
        ) from None
    try:
        theirs = of_model(cfg.to_dict())
        check_against(w.model.model_type, w.model.config, theirs, w.model.hub_id)
    except ArchitectureError as exc:
        raise SpecError(f"{w.name}: {exc}") from None


def build_model(w: Workload, device: torch.device):
    from transformers import AutoConfig, AutoModelForCausalLM

    from harness.measuring import quantized

    dtype = DTYPES[w.train.precision]
    extra = {"attn_implementation": w.model.attn_implementation} if w.model.attn_implementation else {}
    quant = quantized.bnb_config(w, device, DTYPES) if w.quantization is not None else None
    if w.model.init == "pretrained":
        check_architecture(w)
        try:
            if quant is not None:
                model = quantized.load(w.model.hub_id, None, w, device, dtype, quant, extra)
            else:
                model = AutoModelForCausalLM.from_pretrained(
                    w.model.hub_id, revision=w.model.revision, dtype=dtype, **extra
                ).to(device)
        except _hub_errors() as exc:
            raise _unavailable(
                "model", w.model.hub_id, exc, "use model.init = 'random' or point model.hub_id at a local folder"
            ) from None
    else:
        config = AutoConfig.for_model(w.model.model_type, **w.model.config)
        config.use_cache = False
        if quant is not None:
            model = quantized.load(None, config, w, device, dtype, quant, extra)
        else:
            torch.manual_seed(w.train.seed)
            with torch.device(device):
                model = AutoModelForCausalLM.from_config(config, dtype=dtype, **extra)
    model.config.use_cache = False  # training runs without the generation cache
    return quantized.prepare(model, w) if quant is not None else model


def build_dataset(w: Workload, tokenizer):
    """Synthetic ``input_ids`` rows of exactly ``max_length`` tokens, or a hub/local dataset, shuffled and cut."""
    import datasets

    d = w.data
    if d.source == "synthetic":
        gen = torch.Generator().manual_seed(w.train.seed)
        low = len(_SPECIAL)
        high = (
            min(w.architecture()["config"].get("vocab_size", 32000), len(tokenizer))
            if w.model.init == "random"
            else len(tokenizer)
        )
        ids = torch.randint(low, max(high, low + 1), (d.num_samples, w.train.max_length), generator=gen)
        return datasets.Dataset.from_dict({"input_ids": ids.tolist()})
    if d.source == "local":
        check_digest(w)
    try:
        path = Path(d.id).expanduser()
        if d.source == "local" and path.is_dir() and (path / "dataset_dict.json").exists():
            ds = datasets.load_from_disk(str(path))[d.split]
        elif d.source == "local" and path.is_dir() and (path / "state.json").exists():
            ds = datasets.load_from_disk(str(path))
        elif d.source == "local" and path.is_file():
            ds = datasets.load_dataset(
                path.suffix.lstrip(".").replace("jsonl", "json"), data_files=str(path), split="train"
            )
        elif d.source == "local":  # a folder of data files, read by datasets' folder builder; never the hub
            ds = datasets.load_dataset(str(path), split=d.split)
        else:
            ds = datasets.load_dataset(d.id, d.name, split=d.split, revision=d.revision)
    except _hub_errors() as exc:
        raise _unavailable(
            "dataset", d.id, exc, "use data.source = 'synthetic' or point data.id at a local folder"
        ) from None
    ds = select_columns(ds, w)
    if d.shuffle_seed is not None:
        ds = ds.shuffle(seed=d.shuffle_seed)
    if d.num_samples > len(ds):
        raise BadInput(
            f"data.num_samples = {d.num_samples} but {d.id!r} split {d.split!r} has only {len(ds)} rows; "
            "lower data.num_samples"
        )
    return ds.select(range(d.num_samples))


def check_digest(w: Workload) -> None:
    """The local data is the one the workload was hashed with: ``data.digest``, where it has one, is the file's content
    now (an edit during a session would otherwise train on other data under the same hash). A missing file is a
    SpecError too: nothing falls through to the hub for a local source."""
    from harness.inputs import data_digest, short

    found = data_digest(w.data.id)
    if w.data.digest is not None and found != w.data.digest:
        raise SpecError(
            f"{w.name}: data.digest: {w.data.id} changed since the workload was loaded ({short(w.data.digest)} -> "
            f"{short(found)}); restore it, or rerun to take the new content"
        )


def select_columns(ds, w: Workload):
    """data.text_column or data.messages_column renamed to the column TRL reads ('text' or 'messages'); then a refusal,
    in one line, of a chat template the rows would leave unused or of conversations without one."""
    from trl.data_utils import is_conversational

    d = w.data
    for key, column, target in (
        ("text_column", d.text_column, "text"),
        ("messages_column", d.messages_column, "messages"),
    ):
        if column is None:
            continue
        if column not in ds.column_names:
            raise SpecError(
                f"{w.name}: data.{key} = {column!r} is not a column of {d.id!r} "
                f"(its columns: {', '.join(ds.column_names)})"
            )
        ds = ds.select_columns([column])
        if column != target:
            ds = ds.rename_column(column, target)
    chats = len(ds) > 0 and is_conversational(ds[0])
    if isinstance(d.chat_template, str) and not chats:
        raise SpecError(
            f"{w.name}: data.chat_template is set but the rows of {d.id!r} are not conversations, "
            "so it would be ignored: remove it, or name the conversations with data.messages_column"
        )
    if d.chat_template is False and chats:
        raise SpecError(
            f"{w.name}: data.chat_template = false but the rows of {d.id!r} are conversations: set it to true or to a "
            "template string, or name a plain-text column with data.text_column"
        )
    return ds


def sft_config(w: Workload, dec: Decomposition, output_dir: str, device: torch.device):
    """SFTConfig with the workload's settings, written for both the old and new checkpointing names."""
    from trl import SFTConfig

    t = w.train
    names = {f.name for f in dataclasses.fields(SFTConfig)}
    kw = dict(
        output_dir=output_dir,
        max_steps=t.max_steps,
        per_device_train_batch_size=dec.micro_batch,
        gradient_accumulation_steps=dec.grad_accum,
        learning_rate=t.learning_rate,
        warmup_steps=t.warmup_steps,
        optim=t.optimizer,
        fp16=t.precision == "fp16",
        bf16=t.precision == "bf16",
        seed=t.seed,
        data_seed=t.data_seed,
        logging_steps=t.logging_steps,
        save_strategy="no",
        report_to="none",
        dataloader_num_workers=t.dataloader_num_workers,
        dataset_num_proc=1,
        max_length=t.max_length,
        pad_to_multiple_of=t.pad_to_multiple_of,
        packing=t.packing,
        disable_tqdm=True,
        use_cpu=device.type == "cpu",
    )
    if dec.world_size > 1:  # one process per device under torchrun; gloo on CPU
        kw["ddp_backend"] = "gloo" if device.type == "cpu" else "nccl"
        kw["ddp_find_unused_parameters"] = False
    ckpt = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    kw[ckpt] = t.gradient_checkpointing
    if t.gradient_checkpointing:
        kw[f"{ckpt}_kwargs"] = {"use_reentrant": False}
    return SFTConfig(**kw)


def lora_config(w: Workload):
    from peft import LoraConfig

    lo = w.lora
    return LoraConfig(
        r=lo.r,
        lora_alpha=lo.alpha,
        lora_dropout=lo.dropout,
        bias=lo.bias,
        target_modules=lo.target_modules,
        task_type=lo.task_type,
    )
