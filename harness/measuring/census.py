"""The census: count the work of an optimizer step, which does not depend on how fast the machine is.

:class:`CensusCallback` profiles a window of whole logging periods with ``torch.profiler`` (CPU, and
CUDA when there is one) and counts, per optimizer step: aten operators, CUDA kernel launches,
synchronising CUDA runtime calls and memcpys, allocator calls, and, in a second window of the same
length right after the first, Python function calls. It also records the resolved training
configuration and the SDPA backend that actually ran. Every key is described in
``docs/measurement.md`` ("Census"); ``harness/judging/census_diff.py`` compares two censuses without torch.

Window: the first ``start`` optimizer steps are skipped, ``start`` being ``[measure] warmup_steps``
rounded up to a multiple of the Trainer's logging period, so the window opens at a logging boundary;
it then covers ``n`` steps, ``n`` a whole number of logging periods and at least 3. The profiler starts
in ``on_step_end`` of step ``start`` and stops in ``on_step_end`` of step ``start + n``: it covers the
logging of step ``start`` (the Trainer logs right after ``on_step_end``) and the ``n`` steps after it,
so exactly ``n / logging_steps`` logging events (loss ``.item()``: a device-to-host copy and a sync).
Per-step figures are window totals divided by ``n``: averages over whole logging periods, in which a
logging step does more work than the others.

Op counts are every profiler CPU event whose name starts with ``aten::``, nested ones included (an
``aten::to`` that calls ``aten::_to_copy`` that calls ``aten::empty_strided`` and ``aten::copy_`` counts
4), taken from the raw Kineto events, so the few ops that the profiler's own ``events()`` view hides
(``aten::is_leaf``, ``aten::output_nr``, ``aten::_version``) are counted too. Counting nested ops
keeps every op visible by name; the totals are deterministic either way.

This module imports torch and transformers: only the worker imports it.
"""

from __future__ import annotations

import enum
import math
import re
import sys
import threading
import time
from collections import Counter

import torch
from transformers import TrainerCallback

from harness.judging.census_diff import window_plan

TOP_TIMES = 20
# collective-communication kernels (NCCL's all-reduce and friends): their GPU time per step is the communication share
COMM_KERNEL = re.compile(r"nccl|all_?reduce|reduce_?scatter|all_?gather|broadcast", re.I)
# Host-blocking runtime calls, and the memcpy calls (whose direction shows only on the device side).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
ALLOC_CALLS = ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "cudaMallocAsync", "cudaFreeAsync",
               "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree")
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel", "cudaGraphLaunch")
# Arguments that name this run rather than configure it.
VOLATILE_ARGS = ("output_dir", "logging_dir", "run_name", "hub_model_id", "hub_token", "push_to_hub_token", "trackio_space_id", "project")

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


def jsonable(v):
    """Plain JSON values: sets become sorted lists, enums their values, anything else its ``str``."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted((jsonable(x) for x in v), key=lambda x: (str(type(x)), str(x)))
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, enum.Enum):
        return jsonable(v.value)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def resolved_config(args, model) -> dict:
    """The configuration the run actually used: the Trainer's arguments (``to_dict``, minus the keys that
    name the run), the attention implementation, gradient checkpointing as set on the modules, the PEFT
    config, and the torch switches that choose kernels."""
    a = args.to_dict()
    for k in VOLATILE_ARGS:
        a.pop(k, None)
    base = model
    for attr in ("get_base_model",):  # PeftModel -> the transformers model
        if hasattr(base, attr):
            base = getattr(base, attr)()
    cfg = getattr(base, "config", None)
    ckpt_modules = [m for m in base.modules() if hasattr(m, "gradient_checkpointing")]
    funcs = {getattr(m, "_gradient_checkpointing_func", None) for m in ckpt_modules} - {None}
    func = next(iter(funcs), None)
    peft = getattr(model, "peft_config", None) or {}
    import torch.utils.checkpoint as tuc

    return jsonable({
        "args": a,
        "attn_implementation": getattr(cfg, "_attn_implementation", None),
        "dtype": str(getattr(base, "dtype", None)),
        "checkpointing": {
            "enabled": bool(getattr(base, "is_gradient_checkpointing", False)),
            "layers": sum(1 for m in ckpt_modules if getattr(m, "gradient_checkpointing", False)),
            "modules": len(ckpt_modules),
            "func": getattr(getattr(func, "func", func), "__qualname__", None) if func is not None else None,
            "kwargs": dict(getattr(func, "keywords", {}) or {}),
            "early_stop": getattr(tuc, "_enable_checkpoint_early_stop", None),
        },
        "peft": {name: c.to_dict() for name, c in peft.items()},
        "torch": {
            "matmul_tf32": torch.backends.cuda.matmul.allow_tf32, "cudnn_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "sdp": {"flash": torch.backends.cuda.flash_sdp_enabled(), "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                    "math": torch.backends.cuda.math_sdp_enabled(),
                    "cudnn": getattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: None)()},
        },
    })


class PythonCalls:
    """Counts Python function calls: ``sys.monitoring`` PY_START events on Python >= 3.12 (every thread;
    generator resumptions are not calls), else ``sys.setprofile`` / ``threading.setprofile`` ``'call'``
    events (the calling thread and threads started while counting; a generator resumption counts as a
    call). ``method`` says which."""

    def __init__(self):
        self.count = 0
        self.method = "sys.monitoring" if hasattr(sys, "monitoring") else "sys.setprofile"
        self._tool = None
        self._prev = None

    def _on_call(self, frame, event, arg):
        if event == "call":
            self.count += 1

    def _on_start(self, code, offset):
        self.count += 1

    def start(self) -> None:
        if self.method == "sys.monitoring":
            mon = sys.monitoring
            self._tool = next(t for t in (mon.PROFILER_ID, 3, 4) if mon.get_tool(t) is None)
            mon.use_tool_id(self._tool, "harness-census")
            mon.register_callback(self._tool, mon.events.PY_START, self._on_start)
            mon.set_events(self._tool, mon.events.PY_START)
        else:
            self._prev = sys.getprofile()
            threading.setprofile(self._on_call)
            sys.setprofile(self._on_call)

    def stop(self) -> int:
        if self.method == "sys.monitoring":
            mon = sys.monitoring
            mon.set_events(self._tool, 0)
            mon.register_callback(self._tool, mon.events.PY_START, None)
            mon.free_tool_id(self._tool)
        else:
            sys.setprofile(self._prev)
            threading.setprofile(None)
        return self.count


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
    out["window"] = window
    return out


class CensusCallback(TrainerCallback):
    """Counts the work of ``n`` optimizer steps after the warm-up (module docstring). ``counters``: extra
    ``name -> callable() -> int`` read at the window's edges; their per-step deltas land in
    ``result["counters"]``. ``result`` is set at ``on_train_end``."""

    def __init__(self, warmup_steps: int, counters: dict | None = None, python_calls: bool = True, stop: bool = False):
        self.warmup_steps = warmup_steps
        self.stop = stop  # end the training once the windows are counted: a census run is short
        self.counters = counters or {}
        self.python_calls = python_calls
        self.cuda = torch.cuda.is_available()
        self.plan: dict | None = None
        self.config: dict | None = None
        self.prof = None
        self.profiled = False
        self.py: PythonCalls | None = None
        self._marks: dict = {}
        self.result: dict | None = None

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        period = state.logging_steps if args.logging_strategy == "steps" and state.logging_steps else 1
        self.plan = window_plan(self.warmup_steps, int(period), int(state.max_steps))
        try:
            self.config = resolved_config(args, model) if model is not None else None
        except Exception as exc:  # the counts stay useful without it
            self.config = {"error": f"{type(exc).__name__}: {exc}"}

    def on_step_end(self, args, state, control, **kwargs):
        p, step = self.plan, state.global_step
        if p is None or not p["fits"]:
            return
        start, n = p["start"], p["n"]
        if step == start and self.prof is None:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            self._sync()
            self._marks["counters0"] = {k: f() for k, f in self.counters.items()}
            self.prof = profile(activities=acts)
            self.prof.start()
            self._marks["t0"] = time.perf_counter()
        elif step == start + n and self.prof is not None and not self.profiled:
            self._sync()
            self._marks["wall_ms"] = (time.perf_counter() - self._marks["t0"]) * 1000.0
            self.prof.stop()
            self.profiled = True
            self._marks["counters1"] = {k: f() for k, f in self.counters.items()}
            if self.python_calls and p["python_fits"]:
                self.py = PythonCalls()
                self._marks["t1"] = time.perf_counter()
                self.py.start()
        elif step == start + 2 * n and self.py is not None and "python_calls" not in self._marks:
            self._marks["python_calls"] = self.py.stop()
            self._marks["python_wall_ms"] = (time.perf_counter() - self._marks["t1"]) * 1000.0
        if self.stop and step >= start + (2 * n if self.python_calls and p["python_fits"] else n):
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        if self.py is not None and "python_calls" not in self._marks:  # training ended inside the window
            self.py.stop()
        self.result = self.finish()

    def finish(self) -> dict:
        p = self.plan or {}
        start, n = p.get("start"), p.get("n")
        head = {"fits": bool(p.get("fits")), "device": "cuda" if self.cuda else "cpu", "logging_steps": p.get("logging_steps"),
                "steps": [start + 1, start + n] if p else None, "n": n}
        if not p.get("fits") or not self.profiled:
            return {**head, "fits": False, "reason": p.get("reason", "the profiled window did not complete"), "config": self.config}
        out = {**head, **summarize(self.prof.profiler.kineto_results.events(), n, self.cuda)}
        self.prof = None
        c0, c1 = self._marks["counters0"], self._marks["counters1"]
        out["counters"] = {k: round((c1[k] - c0[k]) / n, 4) for k in c0}
        if "python_calls" in self._marks:
            out.update(python_calls=round(self._marks["python_calls"] / n, 4), python_method=self.py.method,
                       python_steps=[start + n + 1, start + 2 * n])
            out["window"]["python_calls"] = self._marks["python_calls"]
        else:
            out.update(python_calls=None, python_method=None, python_steps=None,
                       python_reason=p.get("python_reason") or ("not counted" if not self.python_calls else "window did not complete"))
        out["overhead"] = {"profiled_ms": round(self._marks["wall_ms"] / n, 2),
                           "python_counted_ms": round(self._marks["python_wall_ms"] / n, 2) if "python_wall_ms" in self._marks else None}
        out["config"] = self.config
        return out


class InjectWork:
    """Test-only extra work (``inject_work`` = N): a forward hook on every peft ``LoraLayer`` (the wrapped
    Linear modules, not ``lora_A``/``lora_B``) that casts the layer's output N times
    (float32 -> float64, anything else -> float32) under ``no_grad`` and discards the copies, so each
    LoRA forward, checkpoint recompute included, adds exactly N ``aten::to`` -> ``aten::_to_copy`` calls
    and leaves the output unchanged. ``fired`` counts the hook's calls.

    N may be fractional, and may change between steps (``n``; a resident worker sets it per block, for an
    injection sized to the machine): each call then casts floor or ceil of N times, carrying the remainder
    to the next call, so that calls average exactly N casts. With ``keep`` (what a resident worker's sized
    injection uses) each cast writes into a buffer kept per shape (``aten::copy_`` only): a fresh tensor per
    cast costs more in a young process than in one that has run a few hundred steps (on the CPU runner
    about 2.5% against 1.2% of a step per cast), so an amount sized
    in one process would not hold in the next launch's.

    ``spent_s`` is the host time of the casts themselves (``perf_counter`` around them, not around the hook call), the
    injection's own clock: on a host-bound step (a CPU device, or a GPU step that waits on kernel launches) it is the
    time the casts add to the step, measured without the step-to-step noise of a wall-time ratio. A resident worker
    reports it per block (``inject_ms``), and the sized injection is aimed by it (``calibrate_injection``).

    ``kind="host"`` (the sized injection of ``interleave --inject-work-b-percent``): instead of casts, each unit is
    ``sum(range(HOST_UNIT))`` on the host, the kind of slowdown a slower Python path in a library makes on a host-bound
    step. It touches no tensor memory, so its own clock is its whole cost: casts also evict the caches the next
    operators read, which on the CPU runner made 3.85 casts sized at +5% by their clock read x1.082 (session 11)."""

    HOST_UNIT = 1000  # integers summed per unit of host work (about 10-20 us of one CPU)

    def __init__(self, model: torch.nn.Module, n: float, keep: bool = False, kind: str = "casts"):
        from peft.tuners.lora import LoraLayer

        if kind not in ("casts", "host"):
            raise ValueError(f"inject kind must be casts or host, got {kind!r}")
        self.n, self.fired, self._carry, self.keep, self.spent_s, self.kind = float(n), 0, 0.0, keep, 0.0, kind
        self._buffers: dict = {}
        self.handles = [m.register_forward_hook(self._hook) for m in model.modules() if isinstance(m, LoraLayer)]

    def _hook(self, module, args, output):
        self.fired += 1
        self._carry += self.n
        casts = int(self._carry)
        self._carry -= casts
        if not casts:
            return
        if self.kind == "host":
            t0 = time.perf_counter()
            for _ in range(casts):
                sum(range(self.HOST_UNIT))
            self.spent_s += time.perf_counter() - t0
            return
        t = output if isinstance(output, torch.Tensor) else output[0]
        dtype = torch.float64 if t.dtype == torch.float32 else torch.float32
        t0 = time.perf_counter()
        with torch.no_grad():
            if self.keep:
                key = (tuple(t.shape), dtype, t.device)
                buf = self._buffers.get(key)
                if buf is None:
                    buf = self._buffers[key] = torch.empty(t.shape, dtype=dtype, device=t.device)
                for _ in range(casts):
                    buf.copy_(t)
            else:
                for _ in range(casts):
                    t.to(dtype)
        self.spent_s += time.perf_counter() - t0

    @property
    def layers(self) -> int:
        return len(self.handles)
