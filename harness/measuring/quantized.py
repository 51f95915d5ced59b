"""QLoRA's base model: 4-bit weights through bitsandbytes, prepared for training the way PEFT documents it.

transformers quantizes while it loads weights (``from_pretrained(..., quantization_config=BitsAndBytesConfig(...))``);
random weights are therefore built, saved to a temporary folder and loaded back quantized. The loaded model then goes
through peft's ``prepare_model_for_kbit_training`` (frozen base, norms and embeddings in fp32, gradient checkpointing
as the workload sets it) before TRL's SFTTrainer adds the LoRA adapter. Only the worker imports this module.
"""

from __future__ import annotations

import tempfile

import torch

from harness.spec import SpecError, Workload


def bnb_config(w: Workload, device: torch.device, dtypes: dict):
    """The ``BitsAndBytesConfig`` of ``w.quantization``; refuses, in one line, an install that cannot run it on
    ``device`` (not installed, its native library does not load, or no backend for the device: a CPU build without its
    CPU backend)."""
    q = w.quantization
    why = q.unavailable(device.type)
    if why:
        raise SpecError(f"{w.name}: [quantization] {why}")
    try:
        import bitsandbytes
    except Exception as exc:  # installed, but its native library does not load here
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise SpecError(
            f"{w.name}: [quantization] bitsandbytes is installed but cannot run here ({type(exc).__name__}: {first})"
        ) from None
    # versions before the attribute: CUDA only
    backends = set(getattr(bitsandbytes, "supported_torch_devices", None) or {"cuda"})
    if device.type not in backends:
        raise SpecError(
            f"{w.name}: [quantization] bitsandbytes {getattr(bitsandbytes, '__version__', '')} "
            f"has no backend for {device.type} (it has: {', '.join(sorted(backends))}): "
            "run it on a CUDA GPU, or remove [quantization]"
        )
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=q.bnb_4bit_quant_type,
        bnb_4bit_compute_dtype=dtypes[q.bnb_4bit_compute_dtype or w.train.precision],
        bnb_4bit_use_double_quant=q.bnb_4bit_use_double_quant,
    )


def load(source: str | None, config, w: Workload, device: torch.device, dtype: torch.dtype, quant, extra: dict):
    """The 4-bit model: from ``source`` (a hub id or a folder), or random weights of ``config`` (seeded by train.seed)
    saved to a temporary folder first. The full-precision random copy is freed, and the peak-memory counters restarted,
    before it is loaded back, so a run's peak memory is that of the 4-bit model and its training."""
    from transformers import AutoModelForCausalLM

    if device.type == "cuda" and device.index is None:  # the whole model on this process's GPU, named by its index
        device = torch.device("cuda", torch.cuda.current_device())
    kw = dict(quantization_config=quant, dtype=dtype, device_map={"": device}, **extra)
    if source is not None:
        return AutoModelForCausalLM.from_pretrained(source, revision=w.model.revision, **kw)
    torch.manual_seed(w.train.seed)
    with torch.device(device):
        full = AutoModelForCausalLM.from_config(config, dtype=dtype)
    with tempfile.TemporaryDirectory(prefix="harness-random-weights-") as folder:
        full.save_pretrained(folder)
        del full
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        return AutoModelForCausalLM.from_pretrained(folder, **kw)


def prepare(model, w: Workload):
    """peft's ``prepare_model_for_kbit_training`` with the workload's gradient checkpointing (non-reentrant, as in
    :func:`harness.measuring.build.sft_config`)."""
    from peft import prepare_model_for_kbit_training

    ckpt = w.train.gradient_checkpointing
    return prepare_model_for_kbit_training(
        model, use_gradient_checkpointing=ckpt, gradient_checkpointing_kwargs={"use_reentrant": False} if ckpt else None
    )
