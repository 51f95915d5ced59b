"""The dense FP16/BF16 Tensor Core peak of each GPU model the suite knows, for MFU: one table, matched on the device's
full name (NVML's, as ``env.gpu`` records it) or on the detector's short name, which gives each variant (H100 SXM, PCIe,
NVL) its own. A GPU the table does not know has no MFU, and the report says so.

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
# The detector's short names (harness.measuring.env.short_gpu_name) give each variant its own name:
# the model they stand for.
SHORT = {
    "h200": "H200 SXM",
    "h200-nvl": "H200 NVL",
    "h100": "H100 SXM",
    "h100-pcie": "H100 PCIe",
    "h100-nvl": "H100 NVL",
    "a100": "A100",
    "a100-80gb": "A100",
    "a100-pcie": "A100",
    "a100-pcie-80gb": "A100",
    "l40s": "L40S",
    "l4": "L4",
    "t4": "T4",
}


def peak(gpu: str | None) -> tuple[str, float] | None:
    """(model, dense FP16 FLOP/s) of the GPU whose full name, or whose short name, is ``gpu``; None for one this table
    does not know (a machine class a runner named itself included: the report then uses the full name it recorded)."""
    if not gpu:
        return None
    if gpu.islower():  # a short name
        model = SHORT.get(gpu)
        return next(((m, f) for _, m, f in PEAKS if m == model), None)
    for pattern, model, flops in PEAKS:
        if re.search(pattern, gpu, re.IGNORECASE):
            return model, flops
    return None
