"""GPU detection without initialising CUDA (for the parent process) and the software environment record."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shutil
import subprocess

from harness import knobs
from harness.errors import BadInput

# Short names for GPU marketing names, checked in order (first match wins). A model's variants that run at other clocks,
# power or memory (H100 SXM, PCIe and NVL; A100 PCIe and 80 GB) get names of their own, so that they never share a
# baseline; the SXM part keeps the plain name.
_SHORT = [
    ("gh200", r"\bGH200\b"),
    ("h200-nvl", r"\bH200\b.*\bNVL\b"),
    ("h200", r"\bH200\b"),
    ("h100-nvl", r"\bH100\b.*\bNVL\b"),
    ("h100-pcie", r"\bH100\b.*\bPCIe\b"),
    ("h100", r"\bH100\b"),
    ("h800", r"\bH800\b"),
    ("b200", r"\bB200\b"),
    ("a100-pcie-80gb", r"\bA100\b.*(80GB.*PCIe|PCIe.*80GB)"),
    ("a100-pcie", r"\bA100\b.*\bPCIe\b"),
    ("a100-80gb", r"\bA100\b.*80GB"),
    ("a100", r"\bA100\b"),
    ("a10g", r"\bA10G\b"),
    ("a10", r"\bA10\b"),
    ("a6000", r"A6000"),
    ("l40s", r"\bL40S\b"),
    ("l40", r"\bL40\b"),
    ("l4", r"\bL4\b"),
    ("t4", r"\bT4\b"),
    ("v100", r"\bV100\b"),
    ("rtx4090", r"4090"),
    ("rtx3090", r"3090"),
]
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets")


MACHINE_ENV = knobs.MACHINE.name
_CLASS = re.compile(r"[a-z0-9][a-z0-9_-]*")


def machine_class(full: str | None) -> str:
    """The name results are filed under on a machine with the GPU ``full``: ``$HARNESS_MACHINE`` when the runner sets
    one (``l4-gcp``: a class of machines the team tells apart), else the GPU's short name; ``cpu`` without a GPU."""
    named = knobs.MACHINE.get() or ""
    if not full:
        return "cpu"
    if named:
        if not _CLASS.fullmatch(named) or named in ("cpu", "auto"):
            raise BadInput(
                f"{MACHINE_ENV}={named!r}: not a machine class name "
                "(lower-case letters, digits, - and _, such as l4-gcp); set another or unset it"
            )
        return named
    return short_gpu_name(full)


def short_gpu_name(full: str) -> str:
    """``'NVIDIA H200'`` -> ``'h200'``; an unknown name becomes a slug of itself."""
    for short, pattern in _SHORT:
        if re.search(pattern, full, re.IGNORECASE):
            return short
    return re.sub(r"[^a-z0-9]+", "-", full.lower().replace("nvidia", "")).strip("-") or "unknown"


def gpu_names() -> list[str]:
    """Full names of the visible NVIDIA GPUs, via NVML or nvidia-smi; [] when there is none. Never touches CUDA."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            names = [
                pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                for i in range(pynvml.nvmlDeviceGetCount())
            ]
        finally:
            pynvml.nvmlShutdown()
        names = [n.decode() if isinstance(n, bytes) else n for n in names]
    except Exception:
        names = []
        if shutil.which("nvidia-smi"):
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                names = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []
            except (OSError, subprocess.TimeoutExpired):
                names = []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if names and visible is not None and all(p.strip().isdigit() for p in visible.split(",") if p.strip()):
        names = [names[int(p)] for p in visible.split(",") if p.strip() and int(p) < len(names)]
    return names


def detect_gpu() -> str:
    """The machine class of the first visible GPU (:func:`machine_class`), or ``'cpu'``."""
    names = gpu_names()
    return machine_class(names[0]) if names else "cpu"


def host_cpu() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def boot_id() -> str | None:
    """This machine's boot id: one per boot, so one per VM lease. Runs that share it share the machine's state."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def interconnect(pynvml, handle) -> str:
    """``nvlink`` when any NVLink of the first GPU is active (NVML), else ``pcie``."""
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if pynvml.nvmlDeviceGetNvLinkState(handle, link) == pynvml.NVML_FEATURE_ENABLED:
                return "nvlink"
        except Exception:
            break
    return "pcie"


def worker_env(model=None) -> dict:
    """Environment as seen by the worker (imports torch). GPU-only keys are None on CPU."""
    import torch

    env = {
        "gpu": None,
        "gpu_short": "cpu",
        "gpu_count": 0,
        "driver": None,
        "cuda": torch.version.cuda,
        "cpu": host_cpu(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
        "boot_id": boot_id(),
        "platform": platform.platform(),
        "versions": versions(),
        "attn_implementation": None,
        "gpu_clocks": None,
        "interconnect": None,
    }
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        env.update(gpu=name, gpu_short=machine_class(name), gpu_count=torch.cuda.device_count())
        try:
            import pynvml

            pynvml.nvmlInit()
            env["driver"] = pynvml.nvmlSystemGetDriverVersion()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            env["interconnect"] = interconnect(pynvml, h) if env["gpu_count"] > 1 else None
            env["gpu_clocks"] = {
                "sm_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
            }
        except Exception:
            pass
    if model is not None:
        cfg = getattr(model, "config", None)
        env["attn_implementation"] = getattr(cfg, "_attn_implementation", None) or getattr(
            cfg, "attn_implementation", None
        )
    return env


def resolve_gpu(want: str, detected: str) -> str:
    """The device a session runs on: ``auto`` is the detected one, ``cpu`` is always allowed, any other name must
    match the detected GPU. Raises ValueError with one line saying what to pass instead."""
    want = want.lower()
    if want == "auto":
        return detected
    if want != "cpu" and want != detected:
        hint = (
            f"--gpu={detected} or --gpu=auto"
            if detected != "cpu"
            else "--gpu=cpu on this machine, or on a machine with that GPU"
        )
        raise BadInput(f"--gpu={want} but this machine has {detected}; run with {hint}")
    return want
