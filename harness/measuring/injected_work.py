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
    operators read, so that casts sized by their own clock slow the step by more than they were sized for."""

    HOST_UNIT = 1000  # integers summed per unit of host work: a small, fixed piece of interpreter work

    def __init__(self, model: torch.nn.Module, n: float, keep: bool = False, kind: str = "casts"):
        from peft.tuners.lora import LoraLayer

        if kind not in ("casts", "host"):
            raise BadInput(f"inject kind must be casts or host, got {kind!r}")
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
