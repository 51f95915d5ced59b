"""A workload's inputs on disk, checked before any training: the local data, the local model and tokenizer folders.

:func:`data_digest` fingerprints a local data file (sha256 of the file, or of a folder's files), which
:meth:`harness.spec.Workload.load` writes into ``data.digest`` so that an edited dataset is a new workload hash.
:func:`check_inputs` reads what the worker would read, without the hub and without torch: the data file parses, the
named column is there in every row, the rows are enough for ``data.num_samples``, the chat template renders the first
conversation, a local model folder holds a readable ``config.json``, and a tokenizer folder (``model.tokenizer``) holds
a tokenizer whose ids fit in the model's vocabulary. Every problem is a :class:`SpecError` of one line naming the file
and the key; hub sources are left to the worker (nothing here reaches the hub).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.spec_fields import SpecError

DIGEST = "sha256:"
TRL_COLUMNS = ("messages", "text", "prompt")  # the columns TRL's SFTTrainer reads when no column key names one
_CHUNK = 1 << 20


def local_path(data_id: str, root: str = "") -> Path:
    """A local path as a workload writes it (``data.id``): ``~`` expanded, and a relative one under ``root`` (the
    project of the workload's file, :attr:`harness.spec.Workload.root`; empty: the current directory)."""
    path = Path(data_id).expanduser()
    return path if path.is_absolute() or not root else Path(root) / path


def _skipped(rel: Path) -> bool:
    """Files of a data folder that are not its content: hidden files, and the cache files datasets writes beside a
    dataset saved with ``save_to_disk`` when it shuffles or selects it."""
    return any(p.startswith(".") for p in rel.parts) or (rel.name.startswith("cache-") and rel.suffix == ".arrow")


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def digest(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes, or of a folder's files (their paths inside it and their contents)."""
    if path.is_file():
        return DIGEST + _file_sha(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and not _skipped(p.relative_to(path))):
        h.update(f"{f.relative_to(path).as_posix()}\0{_file_sha(f)}\n".encode())
    return DIGEST + h.hexdigest()


def data_digest(data_id: str, root: str = "") -> str:
    """The digest of local data ``data_id`` (relative to ``root``, :func:`local_path`); a SpecError when it is not
    there (nothing falls through to the hub)."""
    path = local_path(data_id, root)
    if not path.exists():
        where = "" if Path(data_id).expanduser().is_absolute() else f" (relative to {root or Path.cwd()})"
        raise SpecError(
            f"data.id = {data_id!r}: no such file or folder{where}; data.source = 'local' reads it from disk: "
            "correct data.id, or use data.source = 'hub' for a hub dataset"
        )
    return digest(path)


# The files of a tokenizer folder that AutoTokenizer reads first; a folder with none of them holds no tokenizer.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def tokenizer_digest(folder: str) -> str:
    """The digest of tokenizer folder ``folder`` (model.tokenizer); a SpecError when it is not there or holds no
    tokenizer."""
    path = local_path(folder)
    if not path.is_dir():
        where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
        raise SpecError(
            f"model.tokenizer = {folder!r}: no such folder{where}; give a folder saved with save_pretrained, "
            "or 'bytes' for the built-in byte-level tokenizer"
        )
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise SpecError(
            f"model.tokenizer = {folder!r}: {path} holds no tokenizer (no {' or '.join(TOKENIZER_FILES)}); "
            "save one there with save_pretrained, or use 'bytes'"
        )
    return digest(path)


def short(value: str | None) -> str:
    """A digest as people read it: its first 12 hex digits."""
    return value[: len(DIGEST) + 12] if isinstance(value, str) and value.startswith(DIGEST) else repr(value)


@dataclass(frozen=True)
class Rows:
    """What the worker would see of a local dataset: its columns, its row count and its first rows (at most 8)."""

    where: str
    columns: tuple[str, ...]
    count: int
    first: tuple[dict, ...]
    missing: dict[str, int]  # column -> the first line (JSONL) that lacks it; empty for other formats

    def __post_init__(self):
        if self.count < 1:
            raise SpecError(f"data.id: {self.where} has no rows; give a file with at least one row")


def _jsonl(path: Path) -> Rows:
    keys: dict[str, None] = {}
    first: list[dict] = []
    missing: dict[str, int] = {}
    count = 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SpecError(
                    f"data.id: {path} line {n} is not JSON ({exc.msg} at column {exc.colno}); fix that line"
                ) from None
            if not isinstance(row, dict):
                raise SpecError(
                    f"data.id: {path} line {n} is a JSON {type(row).__name__}, not an object of columns; "
                    "one object per line"
                )
            count += 1
            if len(first) < 8:
                first.append(row)
            for k in keys:
                if k not in row:
                    missing.setdefault(k, n)
            keys.update(dict.fromkeys(k for k in row if k not in keys))
    return Rows(str(path), tuple(keys), count, tuple(first), missing)


def _with_datasets(path: Path, split: str) -> Rows:
    """A folder saved by datasets, or a .json/.csv/.parquet file, read as the worker reads it (no hub: a local path)."""
    import datasets

    datasets.disable_progress_bars()
    try:
        if path.is_dir() and (path / "dataset_dict.json").exists():
            ds = datasets.load_from_disk(str(path))[split]
        elif path.is_dir() and (path / "state.json").exists():
            ds = datasets.load_from_disk(str(path))
        elif path.is_dir():
            ds = datasets.load_dataset(str(path), split=split)
        else:
            ds = datasets.load_dataset(
                path.suffix.lstrip(".").replace("jsonl", "json"), data_files=str(path), split="train"
            )
    except Exception as exc:  # the loaders' own errors: a bad file, a missing split, an unknown format
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SpecError(
            f"data.id: {path} cannot be read as a dataset ({type(exc).__name__}: {first}); "
            "give a .jsonl, .json, .csv or a .parquet file, or a folder saved with save_to_disk"
        ) from None
    return Rows(str(path), tuple(ds.column_names), len(ds), tuple(ds[i] for i in range(min(8, len(ds)))), {})


def read_rows(data, root: str = "") -> Rows:
    """The rows of local data ``data`` (a :class:`~harness.spec_sections.DataSpec`, relative to ``root``)."""
    path = local_path(data.id, root)
    data_digest(data.id, root)  # refuses a missing path
    return _jsonl(path) if path.is_file() and path.suffix == ".jsonl" else _with_datasets(path, data.split)


def _conversation(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def check_rows(data, rows: Rows) -> None:
    """The column keys against the rows, and ``data.num_samples`` against their count."""
    for key in ("messages_column", "text_column"):
        column = getattr(data, key)
        if column is None:
            continue
        if column not in rows.columns:
            raise SpecError(
                f"data.{key} = {column!r} is not a column of {rows.where} (its columns: {', '.join(rows.columns)}); "
                f"name one of those in data.{key}"
            )
        if column in rows.missing:
            raise SpecError(
                f"data.{key} = {column!r}: line {rows.missing[column]} of {rows.where} has no {column!r}; "
                "give every row that column"
            )
    if data.messages_column is None and data.text_column is None and not set(TRL_COLUMNS) & set(rows.columns):
        raise SpecError(
            f"data.messages_column: {rows.where} has none of the columns TRL reads ({', '.join(TRL_COLUMNS)}), "
            f"only {', '.join(rows.columns)}; "
            "name yours with data.messages_column (conversations) or data.text_column (text)"
        )
    if data.num_samples > rows.count:
        raise SpecError(
            f"data.num_samples = {data.num_samples} but {rows.where} has only {rows.count} rows; lower data.num_samples"
        )
    if data.messages_column is not None and not _conversation(rows.first[0].get(data.messages_column)):
        raise SpecError(
            f"data.messages_column = {data.messages_column!r}: "
            f"the first row of {rows.where} holds no conversation there "
            "(a list of {role, content} messages); name the column that does, or use data.text_column for text"
        )


def model_template(hub_id: str) -> str | None:
    """The chat template a local model folder's tokenizer carries (``chat_template.jinja`` or tokenizer_config.json), or
    None."""
    folder = local_path(hub_id)
    if (folder / "chat_template.jinja").is_file():
        return (folder / "chat_template.jinja").read_text()
    try:
        template = json.loads((folder / "tokenizer_config.json").read_text()).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(template, list):  # named templates: the default one
        template = next(
            (t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"), None
        )
    return template if isinstance(template, str) else None


def check_template(template: str, messages: list[dict], where: str) -> None:
    """The chat template renders ``messages`` (the first conversation of ``where``) to some text, as the tokenizer
    would."""
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        rendered, _ = render_jinja_template(
            conversations=[messages], chat_template=template, bos_token="", eos_token="", pad_token=""
        )
    except Exception as exc:  # jinja2's TemplateError, UndefinedError, or a TypeError of the template's own expressions
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise SpecError(
            f"data.chat_template cannot render the first conversation of {where} ({type(exc).__name__}: {first}); "
            "fix the template, or use chat_template = true for the tokenizer's own"
        ) from None
    if not "".join(rendered).strip():
        raise SpecError(
            f"data.chat_template renders the first conversation of {where} as empty text; check the keys it reads "
            "(each message has 'role' and 'content')"
        )


def is_path(hub_id: str) -> bool:
    """Whether ``model.hub_id`` names a folder rather than a hub id (``org/name``): it exists, or is written as a
    path."""
    return local_path(hub_id).exists() or hub_id.startswith(("/", ".", "~")) or hub_id.count("/") > 1


def check_model(model) -> None:
    """A local model folder (``model.hub_id`` written as a path) exists and holds a config.json that parses."""
    if model.init != "pretrained" or not is_path(model.hub_id):
        return
    folder = local_path(model.hub_id)
    if not folder.is_dir():
        raise SpecError(
            f"model.hub_id = {model.hub_id!r}: no such folder; "
            "give a folder saved with save_pretrained, or a hub id (org/name)"
        )
    try:
        json.loads((folder / "config.json").read_text())
    except OSError:
        raise SpecError(
            f"model.hub_id = {model.hub_id!r}: {folder / 'config.json'} is missing; save the model there with "
            "save_pretrained"
        ) from None
    except ValueError as exc:
        raise SpecError(
            f"model.hub_id = {model.hub_id!r}: {folder / 'config.json'} is not valid JSON ({exc}); save it again"
        ) from None


def tokenizer_size(folder: str) -> int | None:
    """The token ids of tokenizer folder ``folder``'s ``tokenizer.json`` (added tokens included), read with the
    tokenizers library; None where the folder has no tokenizer.json (the worker then counts them)."""
    path = local_path(folder) / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)
    except Exception as exc:  # the tokenizers library's own errors: not JSON, an unknown model
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SpecError(
            f"model.tokenizer = {folder!r}: {path} cannot be read as a tokenizer ({first}); save it again with "
            "save_pretrained"
        ) from None


def check_tokenizer(w) -> None:
    """A tokenizer folder (``model.tokenizer``) is readable and its token ids fit in the model's vocabulary."""
    folder = w.model.tokenizer_folder
    if folder is None:
        return
    tokenizer_digest(folder)  # refuses a missing folder, or one without a tokenizer
    size, vocab = tokenizer_size(folder), w.architecture()["config"].get("vocab_size")
    if size is not None and isinstance(vocab, int) and size > vocab:
        raise SpecError(
            f"model.tokenizer = {folder!r} has {size} token ids but model.config.vocab_size is {vocab}: raise "
            f"vocab_size to {size} or more, or name a smaller tokenizer"
        )


def tokenizer_template(w) -> str | None:
    """The chat template of the tokenizer that ``w`` reads with where it is a local folder (a tokenizer folder, or a
    local pretrained model's own), or None: the built-in ChatML template, or a hub tokenizer's (the worker's)."""
    if w.model.tokenizer_folder is not None:
        return model_template(w.model.tokenizer_folder)
    if w.tokenizer == "model" and is_path(w.model.hub_id):
        return model_template(w.model.hub_id)
    return None


def check_inputs(w) -> None:
    """Everything of workload ``w`` that can be read from disk here, before any training (see the module's
    docstring)."""
    check_model(w.model)
    check_tokenizer(w)
    d = w.data
    if d.source != "local":
        return
    rows = read_rows(d, w.root)
    check_rows(d, rows)
    if not d.conversational:
        return
    template = d.chat_template if isinstance(d.chat_template, str) else None
    if template is None and d.chat_template is True:
        template = tokenizer_template(w)
    messages = rows.first[0].get(d.messages_column or "messages")
    if template is not None and _conversation(messages):
        check_template(template, messages, rows.where)
