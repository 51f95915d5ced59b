"""The memory of a census window (:mod:`harness.measuring.census`): the run's peaks, and the bytes each aten op
allocated per optimizer step, from the profiler's memory events (``profile_memory=True``).

An allocation is attributed to the outermost aten op running on its thread when it was made: the op the Python code
called (``aten::linear``, ``aten::to``), not the factory op deep inside it (``aten::empty_strided``), so the name says
which work allocated. Allocations made outside any aten op (the optimizer's state, a tensor built from Python data)
count under ``OUTSIDE``. Only the census's device counts: CUDA allocations on a GPU, host allocations on the CPU.
Frees are not counted: the bytes are what the step asked the allocator for, which moves when the work moves.

This module imports torch: only the worker imports it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter

import torch

MEMORY_EVENT = "[memory]"  # the profiler's name of an allocation or a free (nbytes < 0)
OUTSIDE = "(outside aten ops)"
TOP_ALLOCATIONS = 20  # ops kept in allocated_by_op, the most bytes first


def split(events) -> tuple[list, list]:
    """``(memory events, the others)`` of the raw Kineto events: the counts are taken from the others alone, so that
    recording memory changes none of them."""
    mem, rest = [], []
    for e in events:
        (mem if e.name() == MEMORY_EVENT else rest).append(e)
    return mem, rest


def _outermost(events) -> dict[int, tuple[list[int], list[tuple[int, int, str]]]]:
    """Per thread, the aten ops that no other aten op contains, by start: ``thread -> (starts, [(start, end,
    name)])``."""
    by_thread: dict[int, list] = {}
    cpu = torch.autograd.DeviceType.CPU
    for e in events:
        if e.device_type() == cpu and e.name().startswith("aten::"):
            by_thread.setdefault(e.start_thread_id(), []).append((e.start_ns(), e.end_ns(), e.name()))
    out = {}
    for thread, ops in by_thread.items():
        tops: list[tuple[int, int, str]] = []
        for s, end, name in sorted(ops, key=lambda o: (o[0], -o[1])):
            if not tops or s >= tops[-1][1]:
                tops.append((s, end, name))
        out[thread] = ([t[0] for t in tops], tops)
    return out


def allocations(mem: list, events: list, n: int, cuda: bool) -> dict:
    """``allocated_per_step`` (bytes the window's allocations on the census's device add up to, per step) and
    ``allocated_by_op`` (the same by outermost aten op, the ``TOP_ALLOCATIONS`` largest)."""
    device = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    tops = _outermost(events)
    by_op: Counter = Counter()
    for e in mem:
        nbytes = e.nbytes()
        if nbytes <= 0 or e.device_type() != device:
            continue
        starts, ops = tops.get(e.start_thread_id(), ([], []))
        i = bisect_right(starts, e.start_ns()) - 1
        by_op[ops[i][2] if i >= 0 and e.start_ns() <= ops[i][1] else OUTSIDE] += nbytes
    top = sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_ALLOCATIONS]
    return {
        "allocated_per_step": round(sum(by_op.values()) / n, 1),
        "allocated_by_op": {k: round(v / n, 1) for k, v in top},
    }


def peaks(cuda: bool) -> tuple[int | None, int | None]:
    """The run's peak (reserved, allocated) device bytes so far (None on the CPU: no device memory)."""
    if not cuda:
        return None, None
    return torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
