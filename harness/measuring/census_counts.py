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

import torch

TOP_TIMES = 20
# collective-communication kernels (NCCL's all-reduce and friends): their GPU time per step is the communication share
COMM_KERNEL = re.compile(r"nccl|all_?reduce|reduce_?scatter|all_?gather|broadcast", re.I)
# Host-blocking runtime calls, and the memcpy calls (whose direction shows only on the device side).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
ALLOC_CALLS = ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "cudaMallocAsync", "cudaFreeAsync",
               "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree")
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel", "cudaGraphLaunch")

# SDPA backends, from the aten ops that dispatch them (CPU and CUDA) ...
ATTN_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash", "aten::_scaled_dot_product_flash_attention_backward": "flash",
    "aten::_flash_attention_forward": "flash", "aten::_flash_attention_backward": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash", "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient", "aten::_scaled_dot_product_efficient_attention_backward": "efficient",
    "aten::_efficient_attention_forward": "efficient", "aten::_efficient_attention_backward": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn", "aten::_scaled_dot_product_cudnn_attention_backward": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math", "aten::_scaled_dot_product_attention_math_for_mps": "math",
}
# ... and from kernel names on CUDA (checked in order: cuDNN's SDPA kernels have "flash" in their names).
ATTN_KERNELS = (("cudnn", ("cudnn", "sdpa")), ("cudnn", ("cudnn", "fmha")), ("efficient", ("fmha_cutlass",)),
                ("efficient", ("efficient_attention",)), ("efficient", ("AttentionKernel",)), ("efficient", ("AttentionBackwardKernel",)),
                ("flash", ("flash_fwd",)), ("flash", ("flash_bwd",)), ("flash", ("pytorch_flash",)), ("flash", ("FlashAttn",)))


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
    """Kineto activity type (``cpu_op``, ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``, ``cuda_driver``, ...);
    guessed from the device and the name where this torch's events do not say it."""
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
    ops, kernels, kernel_ns, runtime, memcpy = Counter(), Counter(), Counter(), Counter(), Counter()
    cpu_ops = []
    launch_last = -1
    dev_syncs = []
    events = list(events)
    # record_function ranges (Optimizer.step#AdamW.step) are mirrored onto the device timeline as user
    # annotations; where this torch does not say so, a device event named like a host event is one
    host_names = {e.name() for e in events if e.device_type() == torch.autograd.DeviceType.CPU}
    for e in events:
        at, name = _kind(e), e.name()
        if at == "kernel" and name in host_names:
            at = "gpu_user_annotation"
        if at == "cpu_op":
            cpu_ops.append((e.start_thread_id(), e.start_ns(), e.end_ns(), name))
            if name.startswith("aten::"):
                ops[name] += 1
        elif at == "kernel":
            kernels[name] += 1
            kernel_ns[name] += e.duration_ns()
        elif at in ("gpu_memcpy", "gpu_memset"):
            memcpy[name] += 1
        elif at in ("cuda_runtime", "cuda_driver"):
            runtime[name] += 1
            if name in LAUNCH_CALLS:
                launch_last = max(launch_last, e.start_ns())
            elif name == "cudaDeviceSynchronize":
                dev_syncs.append(e.start_ns())

    def r4(x):
        return round(x / n, 4)

    out: dict = {"ops": r4(sum(ops.values())), "ops_by_name": {k: r4(v) for k, v in sorted(ops.items())}}
    window = {"ops": sum(ops.values())}
    # The synchronize at the closing edge of the window (ours, then the profiler's) is not the step's work.
    edge = sum(1 for t in dev_syncs if t > launch_last) if cuda else 0
    runtime["cudaDeviceSynchronize"] -= edge
    if cuda:
        def direction(part: str) -> int:
            return sum(v for k, v in memcpy.items() if part in k)

        syncs = {k: runtime.get(k, 0) for k in SYNC_CALLS}
        syncs.update(memcpy_dtoh=direction("DtoH"), memcpy_htod=direction("HtoD"), memcpy_dtod=direction("DtoD"), memset=direction("Memset"))
        alloc = {k: runtime.get(k, 0) for k in ALLOC_CALLS if k in ("cudaMalloc", "cudaFree") or runtime.get(k)}
        ktotal_ms = sum(kernel_ns.values()) / 1e6
        top = sorted(kernel_ns.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TIMES]
        launches = sum(runtime.get(k, 0) for k in LAUNCH_CALLS)
        out.update(kernels=r4(sum(kernels.values())), kernels_by_name={k: r4(v) for k, v in sorted(kernels.items())},
                   launch_calls=r4(launches), syncs={k: r4(v) for k, v in syncs.items()}, alloc={k: r4(v) for k, v in alloc.items()},
                   kernel_ms=round(ktotal_ms / n, 3), kernel_ms_by_name={k: round(v / 1e6 / n, 4) for k, v in top},
                   comm_kernel_ms=round(sum(v for k, v in kernel_ns.items() if COMM_KERNEL.search(k)) / 1e6 / n, 3),
                   cpu_op_ms=None, cpu_op_ms_by_name=None)
        window.update(kernels=sum(kernels.values()), launch_calls=launches, syncs=syncs, alloc=alloc, kernel_ms=round(ktotal_ms, 3),
                      edge_device_syncs=edge)
    else:
        self_ns = _self_times_ns(cpu_ops)
        aten = {k: v for k, v in self_ns.items() if k.startswith("aten::")}
        total_ms = sum(aten.values()) / 1e6
        top = sorted(aten.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TIMES]
        out.update(kernels=None, kernels_by_name=None, launch_calls=None, syncs=None, alloc=None, kernel_ms=None, kernel_ms_by_name=None,
                   comm_kernel_ms=None, cpu_op_ms=round(total_ms / n, 3), cpu_op_ms_by_name={k: round(v / 1e6 / n, 4) for k, v in top})
        window.update(cpu_op_ms=round(total_ms, 3))
    out["attention_backend"], out["attention_names"] = _attention(ops, kernels)
    out["timeline"] = _timeline(events, n, cuda)
    out["window"] = window
    return out


def _timeline(events, n: int, cuda: bool) -> dict:
    """The step's timeline (:mod:`harness.measuring.timeline`), or ``{"error"}``: the counts stay useful without it."""
    from harness.measuring.timeline import extract

    try:
        return extract(events, n, cuda, _kind)
    except Exception as exc:  # a trace this torch lays out otherwise: said, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
