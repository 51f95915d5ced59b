"""LoRA training FLOPs per token of a dense decoder (:func:`lora_flops_parts`) and the model FLOPs utilisation they give
against a GPU's peak (:func:`mfu`; the peaks are :mod:`harness.judging.peak_flops`'s)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from harness.errors import BadInput

EXPERTS = ("num_experts", "num_local_experts")  # a mixture-of-experts config sets one of these


@dataclass(frozen=True)
class Decoder:
    """What the count reads of a dense Llama/Qwen-style decoder's model config (its ``config.json`` keys): the hidden
    and MLP sizes, the layers, the vocabulary, the query heads, and the key/value heads and the head size where the
    config sets them (else as many as the query heads, and the hidden size split among them)."""

    hidden_size: int
    num_attention_heads: int
    intermediate_size: int
    num_hidden_layers: int
    vocab_size: int
    num_key_value_heads: int | None = None
    head_dim: int | None = None

    @classmethod
    def of(cls, cfg: Mapping[str, Any]) -> Decoder:
        """The decoder of a model config; :class:`BadInput` for a mixture of experts or a config without a size."""
        if any(cfg.get(k) for k in EXPERTS):
            raise BadInput("lora_flops_per_token counts dense decoders only; this config has experts")
        given = {f.name: cfg[f.name] for f in fields(cls) if cfg.get(f.name) is not None}
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.name not in given]
        if missing:
            raise BadInput(f"lora_flops_per_token: the model config has no {', '.join(missing)}; pass a decoder's")
        return cls(**given)

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads


@dataclass(frozen=True)
class LoraFlops:
    """FLOPs per token of one LoRA training step by part (:func:`lora_flops_parts`): the base and LoRA weights counted
    (``p_base``, ``p_lora``), the forward, the backward and the checkpointing's recompute, and their ``total``."""

    p_base: float
    p_lora: float
    forward: float
    backward: float
    recompute: float

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.recompute


def _linears(m: Decoder) -> list[tuple[str, int, int]]:
    """``(name, in, out)`` of the Linear layers of one decoder layer of a dense Llama/Qwen-style model."""
    h, heads, kv, d, inter = m.hidden_size, m.num_attention_heads, m.kv_heads, m.head_size, m.intermediate_size
    return [
        ("self_attn.q_proj", h, heads * d),
        ("self_attn.k_proj", h, kv * d),
        ("self_attn.v_proj", h, kv * d),
        ("self_attn.o_proj", heads * d, h),
        ("mlp.gate_proj", h, inter),
        ("mlp.up_proj", h, inter),
        ("mlp.down_proj", inter, h),
    ]


def _targeted(name: str, target_modules) -> bool:
    if target_modules == "all-linear":  # peft: every Linear but the output layer
        return True
    if isinstance(target_modules, str):  # peft: a regex matched in full against the module's name
        return re.fullmatch(target_modules, f"model.layers.0.{name}") is not None
    return any(name == t or name.endswith("." + t) for t in target_modules)


def lora_flops_parts(
    model_cfg: Mapping[str, Any], r: int, target_modules, checkpointing: bool, seq_len: int = 0
) -> LoraFlops:
    """FLOPs per token of one training step of LoRA on a dense decoder (Llama/Qwen family), by part.

    Counted (2 FLOPs per multiply-add): the matmuls of every Linear layer (``P_base`` weights: the 7
    projections of each decoder layer, plus the LM head, tied or not) and of the LoRA adapters
    (``P_lora = sum r * (in + out)`` over the targeted projections), and, when ``seq_len`` is given, the
    attention score and value matmuls ``4 * L * seq_len * heads * head_dim`` per token (full square,
    no halving for the causal mask). Not counted: norms, activations, softmax, RoPE, embedding lookup,
    loss, optimizer. Forward ``2 P_base + 2 P_lora + attn``; backward: activation gradients only for
    the frozen base (``2 P_base``), activation and weight gradients for LoRA (``4 P_lora``), both
    attention gradients (``2 attn``); checkpointing recomputes the decoder layers' forward once
    (``2 P_layers + 2 P_lora + attn``, without the LM head).
    """
    m = Decoder.of(model_cfg)
    layers = m.num_hidden_layers
    lin = _linears(m)
    p_layers = layers * sum(i * o for _, i, o in lin)
    p_head = m.hidden_size * m.vocab_size
    p_lora = layers * sum(r * (i + o) for n, i, o in lin if _targeted(n, target_modules))
    attn = 4.0 * layers * seq_len * m.num_attention_heads * m.head_size
    p_base = p_layers + p_head
    fwd = 2.0 * p_base + 2.0 * p_lora + attn
    bwd = 2.0 * p_base + 4.0 * p_lora + 2.0 * attn
    rec = (2.0 * p_layers + 2.0 * p_lora + attn) if checkpointing else 0.0
    return LoraFlops(p_base, p_lora, fwd, bwd, rec)


def lora_flops_per_token(
    model_cfg: Mapping[str, Any], r: int, target_modules="all-linear", checkpointing: bool = True, seq_len: int = 0
) -> float:
    """Training FLOPs per token of LoRA, LoRA-correct (no weight gradients of frozen weights); see
    :func:`lora_flops_parts`."""
    return lora_flops_parts(model_cfg, r, target_modules, checkpointing, seq_len).total


def mfu(flops_per_step: float, step_time_s: float, peak_flops: float) -> float | None:
    """Model FLOPs utilisation: ``flops_per_step / (step_time_s * peak_flops)``."""
    if not step_time_s or step_time_s <= 0 or not math.isfinite(step_time_s):
        return None
    return flops_per_step / (step_time_s * peak_flops)
