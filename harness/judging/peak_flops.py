"""The dense FP16/BF16 Tensor Core peak of each GPU model the suite knows, for MFU: one table, matched on the device's
full name (NVML's, as ``env.gpu`` records it), so that the variants of one short name (H100 SXM, PCIe, NVL) each get
their own. A GPU the table does not know has no MFU, and the report says so.

The figures are NVIDIA's datasheets', halved where the datasheet gives the 2:4-sparse peak ("* With sparsity"):
H200 and H100 (https://www.nvidia.com/en-us/data-center/h200/, .../h100/), A100 (.../a100/), L4 (.../l4/), L40S
(.../l40s/), T4 (.../tesla-t4/: mixed-precision peak, no sparsity figure).
"""

from __future__ import annotations

import re

# (pattern on the full name, checked in order: the first match wins; the model it stands for; dense FP16 FLOP/s)
PEAKS: tuple[tuple[str, str, float], ...] = (
    (r"\bH200\b.*\bNVL\b", "H200 NVL", 835.5e12),
    (r"\bH200\b", "H200 SXM", 989.5e12),
    (r"\bH100\b.*\bNVL\b", "H100 NVL", 835.5e12),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe", 756.5e12),
    (r"\bH100\b.*\b(SXM|HBM3)\b", "H100 SXM", 989.5e12),
    (r"\bA100\b", "A100", 312e12),
    (r"\bL40S\b", "L40S", 366.5e12),
    (r"\bL4\b", "L4", 121e12),
    (r"\bT4\b", "T4", 65e12),
)
UNAMBIGUOUS = ("a100", "l40s", "l4", "t4")  # short names (harness.measuring.env.short_gpu_name) of one peak each


def peak(gpu: str | None) -> tuple[str, float] | None:
    """(model, dense FP16 FLOP/s) of the GPU whose full name (or unambiguous short name: ``h200``, ``a100``, ``l4``,
    ``t4``) is ``gpu``; None for one this table does not know, or a short name that stands for several (``h100``)."""
    if not gpu or (gpu.islower() and gpu not in UNAMBIGUOUS):  # a short name, of one model or of several
        return None
    for pattern, model, flops in PEAKS:
        if re.search(pattern, gpu, re.IGNORECASE):
            return model, flops
    return None
