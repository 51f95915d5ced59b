"""LoRA training FLOPs per token of a dense decoder (:func:`lora_flops_parts`) and the model FLOPs utilisation they give
against a GPU's peak (:func:`mfu`; the peaks are :mod:`harness.judging.peak_flops`'s)."""

from __future__ import annotations

import math
import re

from harness.errors import BadInput


def _linears(cfg: dict) -> list[tuple[str, int, int]]:
    """``(name, in, out)`` of the Linear layers of one decoder layer of a dense Llama/Qwen-style model."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    d = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
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
    model_cfg: dict, r: int, target_modules, checkpointing: bool, seq_len: int = 0
) -> dict[str, float]:
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
    if model_cfg.get("num_experts") or model_cfg.get("num_local_experts"):
        raise BadInput("lora_flops_per_token counts dense decoders only; this config has experts")
    layers = model_cfg["num_hidden_layers"]
    lin = _linears(model_cfg)
    p_layers = layers * sum(i * o for _, i, o in lin)
    p_head = model_cfg["hidden_size"] * model_cfg["vocab_size"]
    p_lora = layers * sum(r * (i + o) for n, i, o in lin if _targeted(n, target_modules))
    heads = model_cfg["num_attention_heads"]
    d = model_cfg.get("head_dim") or model_cfg["hidden_size"] // heads
    attn = 4.0 * layers * seq_len * heads * d
    p_base = p_layers + p_head
    fwd = 2.0 * p_base + 2.0 * p_lora + attn
    bwd = 2.0 * p_base + 4.0 * p_lora + 2.0 * attn
    rec = (2.0 * p_layers + 2.0 * p_lora + attn) if checkpointing else 0.0
    return {
        "p_base": p_base,
        "p_lora": p_lora,
        "forward": fwd,
        "backward": bwd,
        "recompute": rec,
        "total": fwd + bwd + rec,
    }


def lora_flops_per_token(
    model_cfg: dict, r: int, target_modules="all-linear", checkpointing: bool = True, seq_len: int = 0
) -> float:
    """Training FLOPs per token of LoRA, LoRA-correct (no weight gradients of frozen weights); see
    :func:`lora_flops_parts`."""
    return lora_flops_parts(model_cfg, r, target_modules, checkpointing, seq_len)["total"]


def mfu(flops_per_step: float, step_time_s: float, peak_flops: float) -> float | None:
    """Model FLOPs utilisation: ``flops_per_step / (step_time_s * peak_flops)``."""
    if not step_time_s or step_time_s <= 0 or not math.isfinite(step_time_s):
        return None
    return flops_per_step / (step_time_s * peak_flops)
