"""A model's architecture as transformers builds it: ``model_type`` and a normalised config, what a workload's hash
holds.

:func:`normalise` builds the transformers config class of ``model_type`` from the given keys and keeps what shapes the
computation: keys that name weights' origin, tokens, outputs or the cache (:data:`NOT_ARCHITECTURE`) are dropped, and
the hash holds only the values that differ from the class's defaults, so that one architecture has one hash whether it
was written out in full, partly, or read from the model's own ``config.json``. Whole-valued floats become integers
(``rope_theta = 1000000.0`` and ``1000000`` are one value). Unknown keys, those transformers neither declares nor
consumes, are refused with a close match.

transformers imports torch (seconds), so results are kept on disk per transformers version, model type and keys
(:func:`_cache_dir`): a second ``python -m harness`` pays nothing for them.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import json
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from harness import knobs
from harness.errors import BadInput

# Keys of a config.json that do not change what training computes: the weights' origin, the tokenizer's special ids,
# what the forward returns, the cache (training runs without it) and the dtype (train.precision sets it).
NOT_ARCHITECTURE = frozenset(
    {
        "architectures",
        "transformers_version",
        "dtype",
        "torch_dtype",
        "_name_or_path",
        "model_type",
        "id2label",
        "label2id",
        "problem_type",
        "return_dict",
        "output_hidden_states",
        "output_attentions",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "tokenizer_class",
        "use_cache",
        "_commit_hash",
        "_attn_implementation_autoset",
    }
)


@dataclass(frozen=True)
class Architecture:
    """A model's resolved architecture: its ``model_type``, every architecture key of its config (``config``), those
    that differ from the config class's defaults (``hashed``, what a workload's hash holds) and, once resolved for a
    workload (:func:`resolve`), where it was read from (``source``: ``"model"`` or ``"given"``)."""

    model_type: str
    config: dict[str, Any]
    hashed: dict[str, Any]
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class ArchitectureError(BadInput):
    """The architecture keys are wrong; ``str(err)`` is one line without the file name (the caller adds it)."""


# Config keys that count or size something (heads, layers, widths, tokens): a model with none of one cannot be built
# or trained (0 attention heads divides by zero in the attention's scale), so each must be a positive integer.
SIZES = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
    "n_embd",
    "n_layer",
    "n_head",
    "n_positions",
)


def check_sizes(config: dict[str, Any], where: str = "model.config.") -> None:
    """Refuse, in one line, a size key that is not a positive integer, or attention heads that do not divide: the
    query heads into key/value groups, or (without ``head_dim``) the hidden size into heads. ``where`` comes before a
    key's name."""
    for k in SIZES:
        v = config.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ArchitectureError(f"{where}{k} must be a positive integer, got {v!r}")
    heads, groups = config.get("num_attention_heads"), config.get("num_key_value_heads")
    if heads and groups and heads % groups:
        raise ArchitectureError(
            f"{where}num_attention_heads = {heads} is not a multiple of num_key_value_heads = {groups}: "
            "each key/value head serves a whole group of query heads"
        )
    hidden = config.get("hidden_size")
    if heads and hidden and config.get("head_dim") is None and hidden % heads:
        raise ArchitectureError(
            f"{where}hidden_size = {hidden} is not a multiple of num_attention_heads = {heads}, and no head_dim is "
            "given: set head_dim, or make hidden_size a multiple"
        )


def _cache_dir() -> Path | None:
    """``$HARNESS_CACHE_DIR``, else a folder of this user's in the temporary directory (not under $HOME, which test
    runners move); None where that folder belongs to someone else."""
    if knobs.CACHE_DIR.get():
        return Path(knobs.CACHE_DIR.get()) / "architectures"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(tempfile.gettempdir()) / f"lora-perf-harness-{uid}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        if hasattr(os, "getuid") and base.stat().st_uid != uid:
            return None
    except OSError:
        return None
    return base / "architectures"


def _cache_file(key: list) -> Path | None:
    """Where the answer for ``key`` is kept, per transformers version (its defaults are part of the answer)."""
    try:
        version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    folder = _cache_dir()
    blob = json.dumps([version, *key], sort_keys=True, default=str)
    return folder / f"{hashlib.sha256(blob.encode()).hexdigest()[:24]}.json" if folder else None


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def normalise(model_type: str, config: dict[str, Any], strict: bool = True) -> Architecture:
    """The :class:`Architecture` of ``config`` (``source`` unset); raises
    ArchitectureError for an unknown model type, a value transformers refuses or, when ``strict`` (keys written in a
    workload, not a model's own config.json), an unknown key."""
    path = _cache_file([model_type, config, strict])
    try:
        out = json.loads(path.read_text()) if path else None
    except (OSError, ValueError):
        out = None
    if out is None:
        out = _normalise(model_type, config, strict)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(out, sort_keys=True))
                os.replace(tmp, path)
            except OSError:  # no cache here: the same answer, computed again next time
                pass
    if "error" in out:
        raise ArchitectureError(out["error"])
    arch = Architecture(**out)
    check_sizes(arch.config, "model.config." if strict else "the model's config.json: ")
    return arch


def _normalise(model_type: str, config: dict[str, Any], strict: bool) -> dict[str, Any]:
    """The uncached :func:`normalise` as the cache keeps it (the fields of :class:`Architecture`), its error as
    ``{"error": line}`` (cached like a result)."""
    import inspect

    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        near = difflib.get_close_matches(model_type, list(CONFIG_MAPPING.keys()), n=3)
        return {
            "error": f"model.model_type {model_type!r} is not a transformers model type"
            + (f"; did you mean {', '.join(near)}?" if near else "")
        }
    default = AutoConfig.for_model(model_type)
    cls = type(default)
    try:
        built = cls(**config)
    except Exception as exc:  # transformers' own validation of a value
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return {"error": f"model.config is not a valid {model_type} config: {first}"}
    known = (
        set(inspect.signature(cls.__init__).parameters)
        | set(default.to_dict())
        | set(getattr(cls, "attribute_map", {}))
    )
    kept = set(built.to_dict())
    unknown = [
        k for k in config if strict and k not in known and k in kept
    ]  # neither declared nor consumed (rope_theta is consumed)
    if unknown:
        k = unknown[0]
        near = difflib.get_close_matches(k, sorted(known - NOT_ARCHITECTURE - {"self", "kwargs"}), n=1)
        hint = f"; did you mean {near[0]}?" if near else f"; see the keys of transformers' {cls.__name__}"
        return {"error": f"model.config.{k} is not a {model_type} config key{hint}"}
    full = _canonical({k: v for k, v in built.to_dict().items() if k not in NOT_ARCHITECTURE})
    defaults = _canonical({k: v for k, v in default.to_dict().items() if k not in NOT_ARCHITECTURE})
    hashed = {k: v for k, v in full.items() if k not in defaults or defaults[k] != v}
    return json.loads(
        json.dumps({"model_type": model_type, "config": full, "hashed": hashed}, sort_keys=True, default=str)
    )


def differences(mine: dict[str, Any], theirs: dict[str, Any], limit: int = 3) -> str:
    """``key: a here, b there`` for the first ``limit`` keys whose values differ, and how many more."""
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    shown = "; ".join(f"{k} = {_short(mine.get(k))} here, {_short(theirs.get(k))} in the model" for k in keys[:limit])
    return shown + (f" (and {len(keys) - limit} more)" if len(keys) > limit else "")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def config_json(hub_id: str, revision: str | None, *, network: bool = False) -> dict[str, Any] | None:
    """The model's ``config.json`` from a local folder or the Hugging Face cache; from the hub too when ``network`` and
    the hub is not switched off (HF_HUB_OFFLINE) and answers. None when it cannot be had."""
    folder = Path(hub_id).expanduser()
    if folder.is_dir():
        path = folder / "config.json"
        return json.loads(path.read_text()) if path.is_file() else None
    try:
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    except ImportError:  # pragma: no cover - a dependency of transformers
        return None
    try:
        cached = try_to_load_from_cache(hub_id, "config.json", revision=revision)
        if isinstance(cached, str):
            return json.loads(Path(cached).read_text())
        if network and not constants.HF_HUB_OFFLINE and _hub_answers(constants.ENDPOINT):
            return json.loads(
                Path(hf_hub_download(hub_id, "config.json", revision=revision, etag_timeout=10)).read_text()
            )
    except Exception:  # a malformed id, a missing repository, a gated model: not resolvable from here
        return None
    return None


def _hub_answers(endpoint: str) -> bool:
    """Whether the hub's host accepts a connection within 3 s (the hub client retries for tens of seconds otherwise)."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(endpoint)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=3).close()
        return True
    except OSError:
        return False


def of_model(raw: dict[str, Any]) -> Architecture:
    """:func:`normalise` of a model's own ``config.json`` (its keys are not checked: a model may carry extra ones)."""
    if not isinstance(raw.get("model_type"), str):
        raise ArchitectureError("the model's config.json names no model_type")
    return normalise(raw["model_type"], {k: v for k, v in raw.items() if k != "model_type"}, strict=False)


def resolve(
    model_type: str | None, config: dict[str, Any], init: str, hub_id: str | None, revision: str | None
) -> Architecture:
    """The architecture of a workload's ``[model]``: :func:`normalise` plus ``source``, ``"model"`` where it was read
    from the model's own config (a local folder or the Hugging Face cache; the hub itself only when nothing else can
    say), ``"given"`` where it is ``[model.config]`` (random weights, or a pretrained model not reachable from here:
    the worker then checks it against the real config before it trains)."""
    if init == "random":
        if not model_type:
            raise ArchitectureError(
                "model.model_type is missing: init = 'random' builds the architecture from model.model_type "
                "and [model.config] (e.g. model_type = 'qwen3')"
            )
        return replace(normalise(model_type, config), source="given")
    raw = config_json(hub_id, revision, network=not config)
    if raw is None:
        if not config:
            raise ArchitectureError(
                f"model.hub_id {hub_id!r}: its config cannot be resolved (not a local folder, not in the Hugging Face "
                "cache, and the hub does not answer); give [model.config] and model.model_type, point model.hub_id "
                "at a local folder, or load it once with the hub reachable"
            )
        if not model_type:
            raise ArchitectureError(
                f"model.model_type is missing: {hub_id!r} cannot be read from here, so [model.config] needs "
                "model.model_type (e.g. 'qwen3')"
            )
        return replace(normalise(model_type, config), source="given")
    theirs = of_model(raw)
    check_against(model_type, config, theirs, hub_id)
    return replace(theirs, source="model")


def check_against(model_type: str | None, config: dict[str, Any], theirs: Architecture, hub_id: str | None) -> None:
    """Refuse, in one line, a ``model.model_type`` or ``[model.config]`` that is not the model's own architecture."""
    if model_type and model_type != theirs.model_type:
        raise ArchitectureError(
            f"model.model_type = {model_type!r} but {hub_id!r} is a {theirs.model_type!r} model: "
            f"set model_type = {theirs.model_type!r} or leave it out"
        )
    if config:
        mine = normalise(theirs.model_type, config)
        if mine.config != theirs.config:
            raise ArchitectureError(
                f"[model.config] is not the architecture of {hub_id!r}: "
                f"{differences(mine.config, theirs.config)}; "
                "copy the model's values or leave [model.config] out"
            )
