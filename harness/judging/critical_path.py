"""The critical path of a step's timeline: where the host waits for the device, and what a change of either costs.

A timeline (:class:`Timeline`, from a census's ``timeline``; :mod:`harness.measuring.timeline` extracts it) is the
census window cut into segments at the points where the host blocks on the device: each segment's host time, the device
time it launched per stream, and the sync that ends it with the streams it waits for. :func:`simulate` replays it: the
host runs the segments one after another; each stream runs its work in order, no earlier than it was launched; at a sync
the host waits until the streams it waits for are done. That wait is device time on the critical path (exposed),
whatever the GPU's busy share over the whole step: on a host-bound step, device work queued just before a sync is
exposed, the same work right after a sync hides behind the next segment's host time.

Where in its segment device work was launched is recorded in bins (``device_at``, :data:`LAUNCH_EDGES`: finer towards
the segment's end); ``placement`` ``early`` lets the work of each bin start at the bin's start (the least it can wait),
``late`` only at its end (the most); a prediction spans both. Device work of no bin (an older census, or work a change
adds without saying where) spans its whole segment: from the segment's start (``early``) to its end (``late``).

The window is replayed ``REPEATS`` times and the last repeat is the steady state: the device work left running after a
window's last sync is waited for in the next window's first segments, as a step's tail is in the next step's.

The device path (:attr:`Timeline.device_path_ms`) is the time the device was busy per step, never longer than the
traced window's step (:attr:`Timeline.window_ms`): streams that run side by side count once. A timed step shorter than
it (by more than ``STEP_TOLERANCE``) is one the census does not explain (:func:`unexplained`): the GPU ran the same work
slower while traced than while timed, or the timed step is not the one traced.

Pure; standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from harness.errors import BadInput
from harness.judging.census_diff import as_census
from harness.results.census import Census

REPEATS = 3
PLACEMENTS = ("early", "late")
MAX_HOST_SCALE = 8.0  # the most the traced host time is scaled by to reach a timed step (host_scale)
# how much longer than the timed step a census's device work alone may be before the census is taken not to explain
# that step (:func:`unexplained`): the tracer lengthens the device work a little, not by this much
STEP_TOLERANCE = 0.1
# where in its segment device work was launched, as a share of the segment's host time: bin j of a segment's
# device_at runs from LAUNCH_EDGES[j] to LAUNCH_EDGES[j + 1]; the last is the segment's last 1/128
LAUNCH_EDGES = (0.0, 0.5, 0.75, 0.875, 0.9375, 0.96875, 0.984375, 0.9921875, 1.0)


@dataclass(frozen=True)
class Segment:
    """Host work up to a sync: ``host_ms`` (host time), ``device_ms`` (stream -> device time launched in it), ``ops``
    (aten ops), ``sync`` (the call that ends it; None: the window's end), ``at`` (the host op it is in), ``waits`` (the
    streams it waits for; None: all), ``wait_ms`` (how long the traced host was blocked in it), ``device_at`` (stream ->
    its device time per ``LAUNCH_EDGES`` bin of launch; the rest of ``device_ms`` is of no bin)."""

    host_ms: float
    device_ms: Mapping[str, float] = field(default_factory=dict)
    sync: str | None = None
    at: str | None = None
    waits: tuple[str, ...] | None = None
    wait_ms: float = 0.0
    ops: float = 0.0
    device_at: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def __post_init__(self):
        # the segment as its fields are typed, whichever JSON numbers or arrays it was read from
        object.__setattr__(self, "host_ms", float(self.host_ms))
        object.__setattr__(self, "device_ms", {str(k): float(v) for k, v in self.device_ms.items()})
        if self.waits is not None:
            object.__setattr__(self, "waits", tuple(map(str, self.waits)))
        object.__setattr__(self, "wait_ms", float(self.wait_ms))
        object.__setattr__(self, "ops", float(self.ops))
        object.__setattr__(self, "device_at", {str(k): tuple(map(float, v)) for k, v in self.device_at.items()})
        values = [
            self.host_ms,
            self.wait_ms,
            *self.device_ms.values(),
            *(x for v in self.device_at.values() for x in v),
        ]
        if any(len(v) != len(LAUNCH_EDGES) - 1 for v in self.device_at.values()):
            raise BadInput(f"timeline segment: device_at needs {len(LAUNCH_EDGES) - 1} bins per stream")
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise BadInput(f"timeline segment: host, device and wait times must be finite and >= 0, got {values}")

    @classmethod
    def from_json(cls, s: Mapping[str, Any]) -> Segment:
        """A segment of a census's ``timeline`` as :mod:`harness.measuring.timeline` writes it: its keys are the
        fields; one it lacks, or holds null, is at its default."""
        return cls(**{f.name: s[f.name] for f in fields(cls) if s.get(f.name) is not None})


@dataclass(frozen=True)
class Timeline:
    """The segments of a window of ``n`` optimizer steps; ``busy_ms``: the time per step the device was busy in the
    window (the union of its work's intervals over every stream), where the census records it; ``aten_ms``: the host's
    time inside the outermost aten ops of the window, and ``step_busy_ms``: the device's busy time in each step of it,
    where the census records them."""

    segments: tuple[Segment, ...]
    n: int = 1
    busy_ms: float | None = None
    aten_ms: float | None = None
    step_busy_ms: tuple[float, ...] = ()

    def __post_init__(self):
        if self.n < 1 or not self.segments:
            raise BadInput("timeline: needs at least one segment and n >= 1 steps")

    @classmethod
    def of(cls, census: Census | Mapping | None) -> Timeline | None:
        """The timeline a census carries (a :class:`Census`, or as the worker records it), or None (an older census, or
        one whose trace could not be read)."""
        c = as_census(census)
        t = c.details.get("timeline") if c is not None else None
        if not isinstance(t, Mapping) or not t.get("segments"):
            return None
        busy, aten = t.get("device_busy_ms"), t.get("aten_ms")
        steps = [s.get("busy_ms") for s in t.get("steps") or [] if isinstance(s, Mapping)]
        return cls(
            tuple(map(Segment.from_json, t["segments"])),
            int(t.get("n") or 1),
            float(busy) if isinstance(busy, (int, float)) else None,
            aten if isinstance(aten, (int, float)) else None,
            tuple(b for b in steps if isinstance(b, (int, float))),
        )

    @property
    def host_ms(self) -> float:
        """Host time per step (the waits left out)."""
        return sum(s.host_ms for s in self.segments) / self.n

    @property
    def device_ms(self) -> float:
        """Device time per step, all streams."""
        return sum(sum(s.device_ms.values()) for s in self.segments) / self.n

    @property
    def window_ms(self) -> float:
        """The traced window's wall time per step: its segments' host time and the host's waits, which tile it."""
        return sum(s.host_ms + s.wait_ms for s in self.segments) / self.n

    @property
    def device_path_ms(self) -> float:
        """The device work alone per step: the time the device was busy in the traced window where the census records
        it (``busy_ms``: never longer than the window), else the device work replayed with no host time (on one
        stream, the same: a stream runs its work one at a time)."""
        return self.busy_ms if self.busy_ms is not None else simulate(self.scaled(0.0)).step_ms

    @property
    def syncs(self) -> float:
        return sum(s.sync is not None for s in self.segments) / self.n

    def scaled(self, host: float) -> Timeline:
        """Every segment's host time times ``host``."""
        return replace(self, segments=tuple(replace(s, host_ms=s.host_ms * host) for s in self.segments))

    def device_scaled(self, f: float) -> Timeline:
        """Every segment's device time times ``f``: the device work read at another GPU speed."""
        segs = tuple(
            replace(
                s,
                device_ms={k: v * f for k, v in s.device_ms.items()},
                device_at={k: tuple(x * f for x in v) for k, v in s.device_at.items()},
            )
            for s in self.segments
        )
        return replace(self, segments=segs, busy_ms=None if self.busy_ms is None else self.busy_ms * f)

    def less_per_op(self, ms: float) -> Timeline:
        """Every segment's host time less ``ms`` per aten op in it (floored at 0):
        the profiler's cost per recorded op out."""
        return replace(
            self, segments=tuple(replace(s, host_ms=max(s.host_ms - ms * s.ops, 0.0)) for s in self.segments)
        )

    def plus(
        self, host_ms: float = 0.0, device_ms: float = 0.0, at: int | None = None, stream: str | None = None
    ) -> Timeline:
        """This timeline with extra work per step: ``host_ms`` spread over the segments by their host time,
        ``device_ms`` by their device time (on a timeline without device work, by host time); or, with ``at``, all of it
        in segment ``at`` (device work on ``stream``, default the busiest)."""
        segs, n = list(self.segments), self.n
        stream = stream or _busiest(self)
        if at is not None:
            s = segs[at]
            dev = dict(s.device_ms)
            dev[stream] = dev.get(stream, 0.0) + device_ms * n
            segs[at] = replace(s, host_ms=s.host_ms + host_ms * n, device_ms=dev)
            return replace(self, segments=tuple(segs), busy_ms=self.busy_ms if not device_ms else None)
        h_tot, d_tot = sum(s.host_ms for s in segs) or 1.0, sum(sum(s.device_ms.values()) for s in segs)
        out = []
        for s in segs:
            dev = dict(s.device_ms)
            at_ = s.device_at
            if d_tot > 0:
                dev = {k: v + device_ms * n * v / d_tot for k, v in dev.items()}
                at_ = {k: tuple(x * (1 + device_ms * n / d_tot) for x in v) for k, v in at_.items()}
            elif device_ms:
                dev[stream] = device_ms * n * s.host_ms / h_tot
            out.append(replace(s, host_ms=s.host_ms + host_ms * n * s.host_ms / h_tot, device_ms=dev, device_at=at_))
        return replace(self, segments=tuple(out), busy_ms=self.busy_ms if not device_ms else None)


def _busiest(t: Timeline) -> str:
    total: dict[str, float] = {}
    for s in t.segments:
        for k, v in s.device_ms.items():
            total[k] = total.get(k, 0.0) + v
    return max(total, key=total.get) if total else "0"


@dataclass(frozen=True)
class Run:
    """A simulated window: ``step_ms`` (the steady step), ``exposed_ms`` (per segment, the host's wait at its sync per
    step), ``host_ms`` (host time per step, waits left out)."""

    step_ms: float
    exposed_ms: tuple[float, ...]
    host_ms: float

    @property
    def waits_ms(self) -> float:
        return sum(self.exposed_ms)


def _pieces(s: Segment, stream: str, ms: float, placement: str) -> list[tuple[float, float, float]]:
    """The device work ``ms`` of ``stream`` in ``s`` as (start, end of its launch as a share of the segment, ms), in
    launch order: its bins, and the rest of no bin first (``early``) or last (``late``)."""
    bins = s.device_at.get(stream, ())
    placed = [(LAUNCH_EDGES[j], LAUNCH_EDGES[j + 1], x) for j, x in enumerate(bins) if x > 0]
    rest = [(0.0, 1.0, ms - sum(bins))] if ms - sum(bins) > 1e-9 else []
    return rest + placed if placement == "early" else placed + rest


def simulate(t: Timeline, placement: str = "early") -> Run:
    """Replay ``t`` (module docstring): the steady step and where the host waits."""
    if placement not in PLACEMENTS:
        raise BadInput(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    h, free, ends = 0.0, {}, []
    exposed = [0.0] * len(t.segments)
    for rep in range(REPEATS):
        for i, s in enumerate(t.segments):
            start, h = h, h + s.host_ms
            for stream, ms in s.device_ms.items():
                for lo, hi, piece in _pieces(s, stream, ms, placement):
                    free[stream] = max(free.get(stream, 0.0), start + s.host_ms * (lo if placement == "early" else hi))
                    free[stream] += piece
            if s.sync is not None:
                streams = s.waits if s.waits is not None else tuple(free)
                wait = max(0.0, max((free.get(k, 0.0) for k in streams), default=0.0) - h)
                h += wait
                if rep == REPEATS - 1:
                    exposed[i] = wait / t.n
        ends.append(h)
    return Run((ends[-1] - ends[-2]) / t.n, tuple(exposed), t.host_ms)


def host_scale(
    t: Timeline, step_ms: float, placement: str = "early", hi: float = MAX_HOST_SCALE
) -> tuple[float, str | None]:
    """The factor on the traced host time that makes the simulated step ``step_ms`` (the timed runs' median): the
    profiler's overhead taken out. (factor, None), or (the nearest factor, why) where no factor reaches it: the device
    path alone is longer than the step, or the host would have to be more than ``hi`` times its trace."""
    if not (math.isfinite(step_ms) and step_ms > 0):
        raise BadInput(f"timed step must be a positive number of ms, got {step_ms}")
    if t.host_ms <= 0:
        return 1.0, "no host time in the trace"
    if simulate(t.scaled(0.0), placement).step_ms >= step_ms:
        return 0.0, "the device path alone is as long as the timed step"
    if simulate(t.scaled(hi), placement).step_ms < step_ms:
        return hi, f"the timed step is more than {hi:g} times the traced host time"
    lo, up = 0.0, hi
    for _ in range(50):
        mid = (lo + up) / 2
        lo, up = (mid, up) if simulate(t.scaled(mid), placement).step_ms < step_ms else (lo, mid)
    return (lo + up) / 2, None


def unexplained(t: Timeline, step_ms: float) -> str | None:
    """Why ``t`` cannot be traced from a step of ``step_ms``, or None: its device work alone
    (:attr:`Timeline.device_path_ms`) is longer than the step by more than ``STEP_TOLERANCE`` (the GPU ran the work
    slower while traced than while timed, or the timed step is not the one traced), or the step is longer than the
    traced host time can be scaled to (``MAX_HOST_SCALE``)."""
    if (why := device_too_long(t.device_path_ms, step_ms, t.window_ms)) is not None:
        return why
    k, why = host_scale(t, step_ms)
    return why if k >= MAX_HOST_SCALE else None


def device_too_long(device_ms: float, step_ms: float, window_ms: float = 0.0) -> str | None:
    """Why a census whose device work alone takes ``device_ms`` per step (in a traced window of ``window_ms``, where
    known) cannot be traced from a step of ``step_ms``, or None where it is at most ``STEP_TOLERANCE`` longer."""
    if device_ms <= step_ms * (1 + STEP_TOLERANCE):
        return None
    share = f" ({device_ms / window_ms:.0%} of its traced window's {window_ms:.1f} ms)" if window_ms > 0 else ""
    return (
        f"its device work alone takes {device_ms:.1f} ms per step{share}, longer than the timed step's {step_ms:.1f} "
        "ms: the GPU ran slower while traced than while timed, or the timed step is not the one traced"
    )


def per_op_overhead(t: Timeline, step_ms: float, placement: str = "early") -> float | None:
    """The profiler's cost per aten op (ms) that, taken out of every segment's host time, makes the simulated step
    ``step_ms``: the other reading of the profiler's overhead (per recorded op, where :func:`host_scale` takes it in
    proportion to the host time). None where no such cost exists (the trace is not longer than the step, or no ops)."""
    ops = sum(s.ops for s in t.segments)
    if ops <= 0 or simulate(t, placement).step_ms <= step_ms:
        return None
    lo, up = 0.0, max(s.host_ms / s.ops for s in t.segments if s.ops)
    if simulate(t.less_per_op(up), placement).step_ms > step_ms:
        return None
    for _ in range(50):
        mid = (lo + up) / 2
        lo, up = (mid, up) if simulate(t.less_per_op(mid), placement).step_ms > step_ms else (lo, mid)
    return (lo + up) / 2


def exposed_at(t: Timeline, run: Run, top: int = 3) -> list[dict]:
    """The syncs where the host waits longest per step in ``run``, grouped by the op they are in: ``at``, ``sync``,
    ``count`` (per step) and ``exposed_ms`` (per step), the largest first."""
    by: dict[tuple, list[float]] = {}
    for s, e in zip(t.segments, run.exposed_ms):
        if s.sync is not None:
            by.setdefault((s.at or "?", s.sync), []).append(e)
    ranked = sorted(by.items(), key=lambda kv: (-round(sum(kv[1]), 3), kv[0][0]))
    return [
        {"at": at, "sync": sync, "count": round(len(v) / t.n, 3), "exposed_ms": round(sum(v), 3)}
        for (at, sync), v in ranked[:top]
    ]
