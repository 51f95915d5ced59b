"""The step's timeline, from the census window's raw Kineto events: the host's work cut into segments at the points
where the host blocks on the device, with the device work each segment launched (by correlation id), per stream.

A segment runs from the end of one host-blocking call to the start of the next: ``host_ms``, the host's time in it;
``ops``, the aten ops it started; ``device_ms``, per stream, the device time of the kernels, memcpys and memsets it
launched; ``device_at``, per stream, that device time by when in the segment it was launched (``LAUNCH_EDGES``: bins
that halve towards the segment's end, where a launch is most likely to be waited for); and the call that ends it:
``sync`` (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``cudaEventSynchronize``, ``cudaMemcpy``, or a
``cudaMemcpyAsync`` whose copy runs device to host), ``at`` (the host op it was called in, such as
``aten::_local_scalar_dense`` for a ``.item()``), ``waits`` (the streams it waits for, None for all) and ``wait_ms``,
how long the host was blocked in it. The window's last segment ends at the window's closing edge (the census's own
synchronisation), with no sync. On a CPU census there is no device: one segment, the whole window. For the whole
window, ``aten_ms``: the host's time per step inside the outermost aten ops of every thread, their waits left out.

The segments cover the whole window (``n`` optimizer steps, whole logging periods): the simulation of
:mod:`harness.judging.critical_path` runs the window as it is and divides by ``n``; the record's ``host_ms``,
``device_ms``, ``wait_ms`` and ``syncs`` are per optimizer step.

This module imports torch only through :mod:`harness.measuring.census_counts`'s event kinds: only the worker imports it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from harness.judging.critical_path import LAUNCH_EDGES

BLOCKING = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
STEP_MARK = "census_step_end"  # the census marks each optimizer step's end in the trace with this range
DEVICE_KINDS = ("kernel", "gpu_memcpy", "gpu_memset")
MAX_SEGMENTS = 4000  # a window with more blocking points is cut no finer: the record stays small
ENCLOSING_SCAN = 200  # host ops looked back from a sync for the one it was called in


def _r(x: float) -> float:
    return round(x, 4)


@dataclass
class _Segment:
    """The host's and the device's work between two of the loop thread's blocking calls (the last one ends the window):
    the host's time and its aten ops, the device time launched in it per stream, the call that ends it (``sync``), the
    op it was made in (``at``), what it waited for (``waits``) and how long, and, per stream, the device time of the
    launches by where in the segment they were made (``device_at``, the bins of ``LAUNCH_EDGES``)."""

    host_ms: float = 0.0
    ops: int = 0
    device_ms: dict[str, float] = field(default_factory=Counter)
    sync: str | None = None
    at: Any = None
    waits: Any = None
    wait_ms: float = 0.0
    device_at: dict[str, list[float]] = field(default_factory=dict)

    def rounded(self) -> _Segment:
        """The segment with its times rounded as written, its streams in order."""
        return replace(
            self,
            host_ms=_r(self.host_ms),
            wait_ms=_r(self.wait_ms),
            device_ms={k: _r(v) for k, v in sorted(self.device_ms.items())},
            device_at={k: [_r(x) for x in v] for k, v in sorted(self.device_at.items())},
        )


def _launch_bin(at: int, start: int, end: int) -> int:
    """The ``LAUNCH_EDGES`` bin of a launch at ``at`` in a segment whose host time runs from ``start`` to ``end``."""
    share = (at - start) / (end - start) if end > start else 1.0
    return min(bisect_right(LAUNCH_EDGES, max(share, 0.0)) - 1, len(LAUNCH_EDGES) - 2)


def _collect(events, kind, host_names: set) -> tuple[dict, list, list]:
    """(device events by correlation id: stream, duration, name, start; runtime calls; CPU ops) of the window."""
    device, runtime, ops = {}, [], []
    for e in events:
        at, name = kind(e), e.name()
        if at in DEVICE_KINDS and not (at == "kernel" and name in host_names):
            device[e.correlation_id()] = (str(e.device_resource_id()), e.duration_ns(), name, e.start_ns())
        elif at in ("cuda_runtime", "cuda_driver"):
            runtime.append((e.start_ns(), e.end_ns(), name, e.correlation_id(), e.start_thread_id()))
        elif at == "cpu_op":
            ops.append((e.start_ns(), e.end_ns(), name, e.start_thread_id()))
    return device, runtime, ops


def _blocking(runtime: list, device: dict) -> list:
    """The host-blocking calls among ``runtime`` (one thread's, in order), the window's closing edge left out: the
    device synchronisations after its last launch."""
    last_launch = max((r[0] for r in runtime if r[3] in device and r[2] not in BLOCKING), default=-1)
    out = []
    for r in runtime:
        dev = device.get(r[3])
        if r[2] in BLOCKING or (r[2] == "cudaMemcpyAsync" and dev is not None and "DtoH" in dev[2]):
            if r[2] == "cudaDeviceSynchronize" and r[0] > last_launch:
                continue
            out.append(r)
    return out


def _waits(sync, launched: list, device: dict) -> list[str] | None:
    """The streams a blocking call waits for: a copy's own stream; a stream synchronisation, the stream of the last
    device work launched before it (``launched``: (start, stream) of every thread's launches, in order); None (all) for
    a device or event synchronisation."""
    if sync[2] in ("cudaMemcpy", "cudaMemcpyAsync") and sync[3] in device:
        return [device[sync[3]][0]]
    if sync[2] == "cudaStreamSynchronize":
        i = bisect_left(launched, (sync[0], ""))
        return [launched[i - 1][1]] if i else None
    return None


def _enclosing(sync, ops: list, starts: list) -> str | None:
    """The innermost host op the call ran in (the latest-starting one that contains it), aten ops first."""
    i = bisect_right(starts, sync[0])
    found = None
    for _start, e, name, _ in reversed(ops[max(0, i - ENCLOSING_SCAN) : i]):
        if e >= sync[1]:
            if name.startswith("aten::"):
                return name
            found = found or name
    return found


def extract(events, n: int, cuda: bool, kind) -> dict:
    """The timeline of a window of ``n`` optimizer steps from its raw Kineto events (``kind``: the event's activity
    type, :func:`harness.measuring.census_counts._kind`). The segments are the training loop's thread's (the one that
    blocks most, else the one with the most ops); the launches and ops of every thread (autograd's backward thread
    launches the backward's kernels) go to the segment they start in."""
    events = list(events)
    # a record_function range mirrored onto the device (where this torch labels it a kernel) bears a host event's name
    host_names = {e.name() for e in events if kind(e) not in DEVICE_KINDS}
    device, runtime, ops = _collect(events, kind, host_names)
    runtime.sort()
    ops.sort()
    blocking = _blocking(runtime, device) if cuda else []
    threads = Counter(r[4] for r in blocking) or Counter(o[3] for o in ops)
    if not threads:
        return {"n": n, "segments": [], "host_ms": 0.0, "device_ms": 0.0, "wait_ms": 0.0, "syncs": 0.0}
    main = threads.most_common(1)[0][0]
    syncs = [r for r in blocking if r[4] == main]
    mine = [o for o in ops if o[3] == main] or ops
    if len(syncs) >= MAX_SEGMENTS:
        syncs = syncs[:: -(-len(syncs) // MAX_SEGMENTS)]
    t0 = min(mine[0][0], syncs[0][0]) if syncs else mine[0][0]
    last = syncs[-1][1] if syncs else t0
    edge = [r[0] for r in runtime if r[4] == main and r[2] == "cudaDeviceSynchronize" and r[0] > last]
    t_end = min(edge) if edge else max(max(o[1] for o in mine), max((r[1] for r in runtime if r[4] == main), default=0))
    out = _segments(syncs, runtime, ops, mine, device, t0, t_end, n)
    marks = sorted(e.start_ns() for e in events if e.name() == STEP_MARK and kind(e) in ("user_annotation", "cpu_op"))
    return out | {"aten_ms": round(_aten_ms(ops, blocking, t0, t_end) / n, 3)} | _busy(device, marks, t0, t_end, n)


def _busy(device: dict, marks: list, t0: int, t_end: int, n: int) -> dict:
    """How long the device was busy in the window (the union of its work's intervals over every stream, clipped to
    the window: never longer than it): ``device_busy_ms`` per step; and, where the trace carries the census's mark of
    each step's end (``STEP_MARK``, ``n`` of them, the last at the window's end), ``steps``: each step's ``wall_ms``
    and ``busy_ms``, from one mark to the next (the first step from the window's start, the last to its end)."""
    spans = sorted((start, start + dur) for _stream, dur, _name, start in device.values())

    def union_ms(lo: int, hi: int) -> float:
        total, end = 0, lo
        for start, stop in spans:
            start, stop = max(start, end), min(stop, hi)
            if stop > start:
                total += stop - start
                end = stop
        return total / 1e6

    out: dict = {"device_busy_ms": round(union_ms(t0, t_end) / n, 3)}
    inside = [m for m in marks if m > t0]
    if len(inside) == n:
        bounds = [t0, *inside[:-1], t_end]
        out["steps"] = [
            {"wall_ms": round((hi - lo) / 1e6, 3), "busy_ms": round(union_ms(lo, hi), 3)}
            for lo, hi in zip(bounds, bounds[1:])
        ]
    return out


def _aten_ms(ops: list, blocking: list, t0: int, t_end: int) -> float:
    """The host's time (ms) inside the outermost aten ops of every thread that start in the window, less the blocking
    calls made in them (their waits): a yardstick of the host's speed measured in the traced window itself, since host
    work between ops (Python) does not enter it."""
    spans: dict = {}  # thread -> its outermost aten ops (start, end), in start order
    for start, stop, name, thread in ops:
        rows = spans.setdefault(thread, [])
        if name.startswith("aten::") and t0 <= start <= t_end and (not rows or start >= rows[-1][1]):
            rows.append((start, stop))
    total = sum(stop - start for rows in spans.values() for start, stop in rows)
    for b_start, b_end, _name, _corr, thread in blocking:  # a wait inside an outermost op is no host work
        rows = spans.get(thread, [])
        i = bisect_right(rows, (b_start, float("inf"))) - 1
        if i >= 0 and b_end <= rows[i][1]:
            total -= b_end - b_start
    return total / 1e6


def _segments(syncs: list, runtime: list, ops: list, mine: list, device: dict, t0: int, t_end: int, n: int) -> dict:
    """The segments between ``syncs`` (the loop thread's blocking calls; ``mine``, its ops), with the launches
    (``runtime``) and ``ops`` of every thread placed by their start."""
    bounds = [s[0] for s in syncs]
    segs = [_Segment(sync=s[2]) for s in [*syncs, (0, 0, None)]]
    spans = list(zip([t0, *(s[1] for s in syncs)], [*bounds, t_end]))  # each segment's host time: start, end
    starts = [o[0] for o in mine]
    launched = [(r[0], device[r[3]][0]) for r in runtime if r[3] in device]
    prev = t0
    for seg, s in zip(segs, syncs):
        seg.host_ms, seg.wait_ms = (s[0] - prev) / 1e6, (s[1] - s[0]) / 1e6
        seg.at, seg.waits = _enclosing(s, mine, starts), _waits(s, launched, device)
        prev = s[1]
    segs[-1].host_ms = max(t_end - prev, 0) / 1e6
    for (
        r
    ) in runtime:  # a launch belongs to the segment it is made in; a blocking copy's own copy, to the segment it ends
        if r[3] in device:
            stream, dur = device[r[3]][:2]
            i = bisect_left(bounds, r[0])
            segs[i].device_ms[stream] += dur / 1e6
            segs[i].device_at.setdefault(stream, [0.0] * (len(LAUNCH_EDGES) - 1))[_launch_bin(r[0], *spans[i])] += (
                dur / 1e6
            )
    for o in ops:
        if o[2].startswith("aten::") and t0 <= o[0] <= t_end:
            segs[bisect_right(bounds, o[0])].ops += 1
    segs = [seg.rounded() for seg in segs]
    per = {
        "host_ms": sum(s.host_ms for s in segs) / n,
        "device_ms": sum(sum(s.device_ms.values()) for s in segs) / n,
        "wait_ms": sum(s.wait_ms for s in segs) / n,
        "syncs": len(syncs) / n,
    }
    return {"n": n, **{k: round(v, 3) for k, v in per.items()}, "segments": [asdict(seg) for seg in segs]}
