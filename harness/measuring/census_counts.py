"""The counts of a census window (:mod:`harness.measuring.census`): from the profiler's raw Kineto events of ``n``
optimizer steps to the work per step: aten operators, CUDA kernels and their time, kernel launches, synchronising
runtime calls and memcpys, allocator calls, the communication kernels' time, and the SDPA backend that ran.

Op counts are every profiler CPU event whose name starts with ``aten::``, nested ones included (an
``aten::to`` that calls ``aten::_to_copy`` that calls ``aten::empty_strided`` and ``aten::copy_`` counts
4), taken from the raw Kineto events, so the few ops that the profiler's own ``events()`` view hides
(``aten::is_leaf``, ``aten::output_nr``, ``aten::_version``) are counted too. Counting nested ops
keeps every op visible by name; the totals are deterministic either way.

This module imports torch: only the worker imports it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import torch

TOP_TIMES = 20
# collective-communication kernels (NCCL's all-reduce and friends): their GPU time per step is the communication share
COMM_KERNEL = re.compile(r"nccl|all_?reduce|reduce_?scatter|all_?gather|broadcast", re.I)
# Host-blocking runtime calls, and the memcpy calls (whose direction shows only on the device side).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
ALLOC_CALLS = (
    "cudaMalloc",
    "cudaFree",
    "cudaMallocHost",
    "cudaHostAlloc",
    "cudaFreeHost",
    "cudaMallocAsync",
    "cudaFreeAsync",
    "cuMemCreate",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemRelease",
    "cuMemAddressReserve",
    "cuMemAddressFree",
)
LAUNCH_CALLS = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaLaunchCooperativeKernel",
    "cudaGraphLaunch",
)

# SDPA backends, from the aten ops that dispatch them (CPU and CUDA) ...
ATTN_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_flash_attention_backward": "flash",
    "aten::_flash_attention_forward": "flash",
    "aten::_flash_attention_backward": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_efficient_attention_backward": "efficient",
    "aten::_efficient_attention_forward": "efficient",
    "aten::_efficient_attention_backward": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_cudnn_attention_backward": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_attention_math_for_mps": "math",
}
# ... and from kernel names on CUDA (checked in order: cuDNN's SDPA kernels have "flash" in their names).
ATTN_KERNELS = (
    ("cudnn", ("cudnn", "sdpa")),
    ("cudnn", ("cudnn", "fmha")),
    ("efficient", ("fmha_cutlass",)),
    ("efficient", ("efficient_attention",)),
    ("efficient", ("AttentionKernel",)),
    ("efficient", ("AttentionBackwardKernel",)),
    ("flash", ("flash_fwd",)),
    ("flash", ("flash_bwd",)),
    ("flash", ("pytorch_flash",)),
    ("flash", ("FlashAttn",)),
)


def _self_times_ns(cpu_ops: list[tuple[int, int, int, str]]) -> Counter:
    """Self time by name of nested CPU ops: ``(thread, start_ns, end_ns, name)`` -> ns not spent in children."""
    self_ns: Counter = Counter()
    by_thread: dict[int, list] = {}
    for ev in cpu_ops:
        by_thread.setdefault(ev[0], []).append(ev)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e[1], -e[2]))
        stack: list[list] = []  # [end_ns, name, child_ns]
        for _, s, e, name in evs:
            while stack and stack[-1][0] <= s:
                _, nm, child = stack.pop()
                self_ns[nm] -= child
            if stack:
                stack[-1][2] += e - s
            self_ns[name] += e - s
            stack.append([e, name, 0])
        while stack:
            _, nm, child = stack.pop()
            self_ns[nm] -= child
    return self_ns


def _attention(names: Counter, kernels: Counter) -> tuple[str, list[str]]:
    """The SDPA backend(s) that ran: from kernel names when there are kernels, else from aten op names."""
    found: dict[str, set] = {}
    for k in kernels:
        for backend, parts in ATTN_KERNELS:
            if all(p.lower() in k.lower() for p in parts):
                found.setdefault(backend, set()).add(k)
                break
    if not found:
        for op in names:
            if op in ATTN_OPS:
                found.setdefault(ATTN_OPS[op], set()).add(op)
    if not found:
        return "unknown", []
    return "+".join(sorted(found)), sorted(x for s in found.values() for x in s)


def _kind(e) -> str:
    """Kineto activity type (``cpu_op``, ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``, ``cuda_driver``,
    ...); guessed from the device and the name where this torch's events do not say it."""
    at = getattr(e, "activity_type", None)
    if at is not None:
        return at()
    name = e.name()
    if e.device_type() != torch.autograd.DeviceType.CPU:
        return "gpu_memcpy" if name.startswith("Memcpy") else "gpu_memset" if name.startswith("Memset") else "kernel"
    if name.startswith("cuda") or (name.startswith("cu") and name[2:3].isupper()):
        return "cuda_runtime"
    return "cpu_op"


def summarize(events, n: int, cuda: bool) -> dict:
    """Census fields from raw Kineto events (``prof.profiler.kineto_results.events()``) of a window of ``n`` steps."""
    events = list(events)
    t = _tally(events)
    out: dict = {
        "ops": _per_step(sum(t.ops.values()), n),
        "ops_by_name": {k: _per_step(v, n) for k, v in sorted(t.ops.items())},
    }
    window = {"ops": sum(t.ops.values())}
    # The synchronize at the closing edge of the window (ours, then the profiler's) is not the step's work.
    edge = sum(1 for at in t.dev_syncs if at > t.launch_last) if cuda else 0
    t.runtime["cudaDeviceSynchronize"] -= edge
    fields, totals = _device_fields(t, n, edge) if cuda else _host_fields(t, n)
    out.update(fields)
    window.update(totals)
    out["attention_backend"], out["attention_names"] = _attention(t.ops, t.kernels)
    out["timeline"] = _timeline(events, n, cuda)
    out["window"] = window
    return out


@dataclass
class _Tally:
    """A window's events counted by kind: aten ops, kernels (count and device time), CUDA runtime calls, memcpys and
    memsets by name; every CPU op as ``(thread, start, end, name)``; the start of the last kernel launch and of every
    ``cudaDeviceSynchronize``."""

    ops: Counter = field(default_factory=Counter)
    kernels: Counter = field(default_factory=Counter)
    kernel_ns: Counter = field(default_factory=Counter)
    runtime: Counter = field(default_factory=Counter)
    memcpy: Counter = field(default_factory=Counter)
    cpu_ops: list = field(default_factory=list)
    launch_last: int = -1
    dev_syncs: list = field(default_factory=list)


def _tally(events: list) -> _Tally:
    """Count the window's events (:class:`_Tally`)."""
    t = _Tally()
    # record_function ranges (Optimizer.step#AdamW.step) are mirrored onto the device timeline as user
    # annotations; where this torch does not say so, a device event named like a host event is one
    host_names = {e.name() for e in events if e.device_type() == torch.autograd.DeviceType.CPU}
    for e in events:
        at, name = _kind(e), e.name()
        if at == "kernel" and name in host_names:
            at = "gpu_user_annotation"
        if at == "cpu_op":
            t.cpu_ops.append((e.start_thread_id(), e.start_ns(), e.end_ns(), name))
            if name.startswith("aten::"):
                t.ops[name] += 1
        elif at == "kernel":
            t.kernels[name] += 1
            t.kernel_ns[name] += e.duration_ns()
        elif at in ("gpu_memcpy", "gpu_memset"):
            t.memcpy[name] += 1
        elif at in ("cuda_runtime", "cuda_driver"):
            t.runtime[name] += 1
            if name in LAUNCH_CALLS:
                t.launch_last = max(t.launch_last, e.start_ns())
            elif name == "cudaDeviceSynchronize":
                t.dev_syncs.append(e.start_ns())
    return t


def _per_step(x: float, n: int) -> float:
    """``x`` per step of a window of ``n`` steps, to 4 decimals."""
    return round(x / n, 4)


def _device_fields(t: _Tally, n: int, edge: int) -> tuple[dict, dict]:
    """(per-step fields, window totals) of a CUDA window: kernels, launches, syncs, allocator calls, kernel time;
    ``edge``: the window's closing synchronisations, already taken out of ``t.runtime``."""

    def direction(part: str) -> int:
        return sum(v for k, v in t.memcpy.items() if part in k)

    syncs = {k: t.runtime.get(k, 0) for k in SYNC_CALLS}
    syncs.update(
        memcpy_dtoh=direction("DtoH"),
        memcpy_htod=direction("HtoD"),
        memcpy_dtod=direction("DtoD"),
        memset=direction("Memset"),
    )
    alloc = {k: t.runtime.get(k, 0) for k in ALLOC_CALLS if k in ("cudaMalloc", "cudaFree") or t.runtime.get(k)}
    ktotal_ms = sum(t.kernel_ns.values()) / 1e6
    top = sorted(t.kernel_ns.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TIMES]
    launches = sum(t.runtime.get(k, 0) for k in LAUNCH_CALLS)
    fields = dict(
        kernels=_per_step(sum(t.kernels.values()), n),
        kernels_by_name={k: _per_step(v, n) for k, v in sorted(t.kernels.items())},
        launch_calls=_per_step(launches, n),
        syncs={k: _per_step(v, n) for k, v in syncs.items()},
        alloc={k: _per_step(v, n) for k, v in alloc.items()},
        kernel_ms=round(ktotal_ms / n, 3),
        kernel_ms_by_name={k: round(v / 1e6 / n, 4) for k, v in top},
        comm_kernel_ms=round(sum(v for k, v in t.kernel_ns.items() if COMM_KERNEL.search(k)) / 1e6 / n, 3),
        cpu_op_ms=None,
        cpu_op_ms_by_name=None,
    )
    totals = dict(
        kernels=sum(t.kernels.values()),
        launch_calls=launches,
        syncs=syncs,
        alloc=alloc,
        kernel_ms=round(ktotal_ms, 3),
        edge_device_syncs=edge,
    )
    return fields, totals


def _host_fields(t: _Tally, n: int) -> tuple[dict, dict]:
    """(per-step fields, window totals) of a CPU window: the aten ops' self time; the device fields are None."""
    self_ns = _self_times_ns(t.cpu_ops)
    aten = {k: v for k, v in self_ns.items() if k.startswith("aten::")}
    total_ms = sum(aten.values()) / 1e6
    top = sorted(aten.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TIMES]
    fields = dict(
        kernels=None,
        kernels_by_name=None,
        launch_calls=None,
        syncs=None,
        alloc=None,
        kernel_ms=None,
        kernel_ms_by_name=None,
        comm_kernel_ms=None,
        cpu_op_ms=round(total_ms / n, 3),
        cpu_op_ms_by_name={k: round(v / 1e6 / n, 4) for k, v in top},
    )
    return fields, {"cpu_op_ms": round(total_ms, 3)}


def _timeline(events, n: int, cuda: bool) -> dict:
    """The step's timeline (:mod:`harness.measuring.timeline`), or ``{"error"}``: the counts stay useful without it."""
    from harness.measuring.timeline import extract

    try:
        return extract(events, n, cuda, _kind)
    except Exception as exc:  # a trace this torch lays out otherwise: said, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
