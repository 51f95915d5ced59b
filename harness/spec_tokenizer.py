"""``model.tokenizer``: how a workload's text becomes token ids, and what of it enters the workload's hash.

The key names a built-in tokenizer (``bytes``, ``words``), the pretrained model's own (``model``) or a tokenizer folder;
left out, :func:`resolved` picks the default. A folder enters the hash as its content (``model.tokenizer_digest``,
written when the workload loads), a built-in one as its name and version. The tokenizer every workload had before the
key (:func:`former`) stays out of the hash, so that those workloads keep theirs. docs/workloads.md describes the key.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.spec_fields import SpecError

MODEL_TOKENIZER = "model"  # the pretrained model's own tokenizer (model.hub_id)
# The built-in tokenizers (harness.measuring.build makes them) and what each enters the workload hash as: a change to
# how one is made is a new version here, so that runs made with the old one are another workload. Both have the same
# four special tokens (ids 0-3) and 256 more tokens: 'words' the words w0 ... w255, 'bytes' the 256 byte values.
BUILT_IN_TOKENIZERS = {"words": "words", "bytes": "bytes-v1"}
BUILT_IN_SIZE = 260


def folder_of(tokenizer: str | None) -> str | None:
    """``model.tokenizer`` where it names a folder (neither a built-in tokenizer nor 'model'), else None."""
    return None if tokenizer in (None, MODEL_TOKENIZER, *BUILT_IN_TOKENIZERS) else tokenizer


def former(init: str | None) -> str:
    """The tokenizer every workload had before model.tokenizer: the pretrained model's own, or with random weights the
    built-in word-level one."""
    return MODEL_TOKENIZER if init == "pretrained" else "words"


def resolved(model, data) -> str:
    """How text becomes token ids for ``[model]`` and ``[data]``: model.tokenizer, or where it is left out the default:
    the pretrained model's own; with random weights, 'bytes' for hub or local data (every byte of the text reaches the
    model) and the built-in word-level 'words' for synthetic rows (which read only its special tokens and its size)."""
    if model.tokenizer is not None:
        return model.tokenizer
    if model.init == "pretrained":
        return MODEL_TOKENIZER
    return "words" if data.source == "synthetic" else "bytes"


def identity(model, data) -> str:
    """What the tokenizer enters the hash as: a built-in one's name and version, 'model', or a folder's content digest
    (the folder as written where no digest was taken)."""
    tok = resolved(model, data)
    if tok in BUILT_IN_TOKENIZERS:
        return BUILT_IN_TOKENIZERS[tok]
    return tok if tok == MODEL_TOKENIZER else model.tokenizer_digest or tok


def hashed(model, data) -> bool:
    """Whether the tokenizer enters the hash: all but the former one (:func:`former`), so that the workloads written
    before model.tokenizer keep their hashes."""
    return resolved(model, data) != former(model.init)


def hashed_fields(fields: dict[str, Any], model, data) -> dict[str, Any]:
    """A workload's timing fields as they are hashed: without ``model.tokenizer`` where it is the former one."""
    return fields if hashed(model, data) else {k: v for k, v in fields.items() if k != "model.tokenizer"}


def text_unread(model, data) -> bool:
    """Whether the rows' text does not reach the model: the built-in word-level tokenizer knows only the words
    w0 ... w255, so real text becomes ``<unk>`` ids and only its word count is left."""
    return data.source != "synthetic" and resolved(model, data) == "words"


def stored(model, data) -> dict[str, Any]:
    """The ``[model]`` table of a stored spec (Workload.to_dict): it names its tokenizer, the default too, except where
    it is left out and is the former one: a stored spec without it ran that one (:func:`as_run`). No digest without a
    tokenizer folder."""
    named = model.tokenizer is not None or hashed(model, data)
    return {
        k: resolved(model, data) if k == "tokenizer" else v
        for k, v in dataclasses.asdict(model).items()
        if (k != "tokenizer" or named) and (k != "tokenizer_digest" or v is not None)
    }


def as_run(spec: Any) -> Any:
    """A stored spec with the tokenizer it ran: where its ``[model]`` names none, the former one (:func:`store`)."""
    model = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(model, dict) or "tokenizer" in model:
        return spec
    return {**spec, "model": {**model, "tokenizer": former(model.get("init"))}}


def check_fits(model, data, vocab: Any) -> None:
    """A built-in tokenizer's ids fit in ``vocab`` (model.config.vocab_size) where it reads text; synthetic rows draw
    their ids below vocab_size whatever the tokenizer."""
    tok = resolved(model, data)
    if tok not in BUILT_IN_TOKENIZERS or data.source == "synthetic" or not isinstance(vocab, int):
        return
    if vocab < BUILT_IN_SIZE:
        default = "" if model.tokenizer else " (the default for hub and local data with random weights)"
        raise SpecError(
            f"model.tokenizer = {tok!r}{default} has {BUILT_IN_SIZE} token ids but model.config.vocab_size is {vocab}: "
            f"raise vocab_size to {BUILT_IN_SIZE} or more, or name a tokenizer folder that fits in model.tokenizer"
        )


def with_digest(model, where: str):
    """``[model]`` with its tokenizer folder's content digest (``model.tokenizer_digest``); a digest the file gives pins
    the tokenizer and is checked. A folder that is not there or holds no tokenizer is refused, naming ``where``."""
    from harness.inputs import short, tokenizer_digest

    folder = folder_of(model.tokenizer)
    if folder is None:
        return model
    try:
        found = tokenizer_digest(folder)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None
    if model.tokenizer_digest not in (None, found):
        raise SpecError(
            f"{where}: model.tokenizer_digest pins {short(model.tokenizer_digest)} but {folder} now holds "
            f"{short(found)}: restore the tokenizer, or remove model.tokenizer_digest to take the new content"
        )
    return dataclasses.replace(model, tokenizer_digest=found)


def said(value: Any) -> str:
    """A hashed tokenizer as people read it: a folder by the first digits of its content digest."""
    from harness.inputs import DIGEST, short

    return f"a folder of content {short(value)}" if str(value).startswith(DIGEST) else repr(value)
