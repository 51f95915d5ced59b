"""Test-only extra work in the LoRA layers' forward (``inject_work``): a known amount of work added to every step,
by which the tests and the interleaved comparisons check that a slowdown is seen. Imports torch: only the worker
imports it.
"""

from __future__ import annotations

import time

import torch

from harness.errors import BadInput


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
    cast costs more in a young process than in one that has run a few hundred steps, so an amount sized
    in one process would not hold in the next launch's.

    ``spent_s`` is the host time of the casts themselves (``perf_counter`` around them, not around the hook call), the
    injection's own clock: on a host-bound step (a CPU device, or a GPU step that waits on kernel launches) it is the
    time the casts add to the step, measured without the step-to-step noise of a wall-time ratio. A resident worker
    reports it per block (``inject_ms``), and the sized injection is aimed by it (``calibrate_injection``).

    ``kind="host"`` (the sized injection of ``interleave --inject-work-b-percent``): instead of casts, each unit is
    ``sum(range(HOST_UNIT))`` on the host, the kind of slowdown a slower Python path in a library makes on a host-bound
    step. It touches no tensor memory, so its own clock is its whole cost: casts also evict the caches the next
    operators read, so that casts sized by their own clock slow the step by more than they were sized for.

    ``kind="device_before_sync"`` and ``"device_after_sync"`` (the critical-path model's checks, docs/cost-model.md): no
    hook on the layers; instead every ``Tensor.item()`` of a CUDA tensor (the loss and metrics the loop reads back, each
    a copy the host waits for) queues N microseconds of device-only work (``torch.cuda._sleep``, a spin kernel of a
    known length and one launch) just before the read, where the host then waits for it (exposed), or just after it,
    where the device is idle and the host goes on (hidden on a host-bound step). Same kernel time, same launches; only
    the place differs. ``fired`` counts every read, ``queued`` those of a CUDA tensor, which got the device work. On the
    CPU there is no device to queue on: the read is left alone. Reads that do not go through ``Tensor.item``
    (``bool(t)``, C++ code) are not touched. The kind is chosen for a worker by the environment variable
    ``HARNESS_INJECT_KIND`` (test-only; it overrides the request's kind)."""

    HOST_UNIT = 1000  # integers summed per unit of host work: a small, fixed piece of interpreter work
    KINDS = ("casts", "host", "device_before_sync", "device_after_sync")

    def __init__(self, model: torch.nn.Module, n: float, keep: bool = False, kind: str = "casts"):
        if kind not in self.KINDS:
            raise BadInput(f"inject kind must be one of {', '.join(self.KINDS)}, got {kind!r}")
        self.n, self.fired, self._carry, self.keep, self.spent_s, self.kind = float(n), 0, 0.0, keep, 0.0, kind
        self._buffers: dict = {}
        self._cycles_per_us: float | None = None
        self.queued = 0
        if kind.startswith("device"):
            self.handles, self._item = [], torch.Tensor.item
            torch.Tensor.item = lambda t: self.read(t, self._item)
            return
        from peft.tuners.lora import LoraLayer

        self.handles = [m.register_forward_hook(self._hook) for m in model.modules() if isinstance(m, LoraLayer)]

    def read(self, t: torch.Tensor, item):
        """``t.item()`` (``item``: the original) with the device work queued before or after it (``kind``)."""
        self.fired += 1
        on_device = self.n > 0 and self.on_device(t)
        self.queued += on_device
        if on_device and self.kind == "device_before_sync":
            self.device_work(t)
        value = item(t)
        if on_device and self.kind == "device_after_sync":
            self.device_work(t)
        return value

    @staticmethod
    def on_device(t: torch.Tensor) -> bool:
        return t.is_cuda

    def device_work(self, t: torch.Tensor) -> None:
        """Queue ``n`` microseconds of a spin kernel on the current stream (its cycles per microsecond measured
        once)."""
        if self._cycles_per_us is None:
            with torch.cuda.device(t.device):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(1000)
                start.record()
                torch.cuda._sleep(10_000_000)
                end.record()
                end.synchronize()
                self._cycles_per_us = 10_000_000 / (start.elapsed_time(end) * 1000.0)
        t0 = time.perf_counter()
        torch.cuda._sleep(max(int(self.n * self._cycles_per_us), 1))
        self.spent_s += time.perf_counter() - t0

    def remove(self) -> None:
        """Take the injection out: the layers' hooks, or ``Tensor.item`` back to the original."""
        for h in self.handles:
            h.remove()
        if self.kind.startswith("device"):
            torch.Tensor.item = self._item

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
