"""How fast each census's host and GPU ran while traced, and what B's trace says beside the counts: the yardsticks by
which the critical path (:mod:`harness.judging.cost_path`) reads B's trace at A's speed.

* **The host:** :func:`speed_by`, by the host's time per aten op in each traced window (``timeline.aten_ms``), else the
  host probes (the time per launch of a tiny op, next to the traced window or before training); :func:`trace_note` says
  what B's trace read at that speed shows where it falls outside the counts' interval, :func:`uncounted` when its
  reading is the point (host work the census does not count).
* **The GPU:** :func:`device_speed`, by the kernels both censuses run equally often (the same name and count per step):
  B's time over A's for them; :func:`device_readings` reads B's device work at A's GPU speed where they moved alike.

Pure; standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from harness.judging.census_diff import as_census, is_annotation
from harness.judging.critical_path import Timeline
from harness.results.census import Census

# two censuses whose yardsticks of host speed differ by less than this share are taken as traced on hosts alike
PROBES_ALIKE = 0.1
# how far past B's trace read at A's host speed the interval reaches, as a multiple of the farther reading's distance
# from the point: host work the counts miss costs more in a timed loop than its traced time (docs/cost-model.md)
TRACE_COST = 1.6
# how far (a share of A's step) B's trace read per aten op must fall from the counts' point before the point moves to
# it: less than this is within what the time per aten op spreads over two censuses of equal work (docs/cost-model.md)
UNCOUNTED_MIN = 0.03
# B's time over A's for the kernels both censuses run equally often: within this share of 1, the two GPUs ran alike
DEVICE_ALIKE = 0.03
# and the kernels' own ratios scatter around it by at most this (the RMS of their logs' deviations, weighted by A's
# time): the GPU's speed moved them all alike, rather than the change moving some
DEVICE_SCATTER = 0.1
DEVICE_COVER = 0.25  # the least share of A's kernel time those kernels must cover to be a yardstick


def _aten_us_per_op(census: Census | Mapping | None) -> float | None:
    """The host's time per aten op inside the outermost aten ops of the traced window (``timeline.aten_ms`` over the
    timeline's ops, per step), or None (a census recorded before the timeline carried it)."""
    t = Timeline.of(census)
    if t is None or t.aten_ms is None:
        return None
    ops = sum(s.ops for s in t.segments) / t.n
    return 1000 * t.aten_ms / ops if t.aten_ms > 0 and ops > 0 else None


def speed_by(census_a: Census | Mapping, census_b: Census | Mapping) -> tuple[float, str] | None:
    """(B's host time per unit of work over A's while each census was traced, the yardstick that says so), by the first
    yardstick both censuses carry: the host's time per aten op in the traced window itself (``aten``: host work between
    ops does not enter it), the probe taken next to the window (``window_probe``), the probe taken before training
    (``host_probe``); None where they share none."""
    aten = [_aten_us_per_op(c) for c in (census_a, census_b)]
    if all(aten):
        return aten[1] / aten[0], "aten"
    read = [as_census(c) for c in (census_a, census_b)]
    for key in ("window_probe", "host_probe"):
        probes = [(c.details.get(key) or {}).get("launch_us") if c is not None else None for c in read]
        if all(isinstance(p, (int, float)) and p > 0 for p in probes):
            return probes[1] / probes[0], key
    return None


def host_speed(census_a: Census | Mapping, census_b: Census | Mapping) -> float | None:
    """How much faster A's host ran than B's when each census was traced (:func:`speed_by`), or None."""
    found = speed_by(census_a, census_b)
    return found[0] if found else None


YARDSTICKS = {"aten": "host times per aten op", "window_probe": "host probes", "host_probe": "host probes"}


@dataclass(frozen=True)
class DeviceSpeed:
    """How much longer B's GPU ran the same kernels than A's while each census was traced: ``ratio`` (B's time over A's
    for the ``kernels`` both run equally often), ``scatter`` (the RMS of the kernels' own log ratios around it,
    weighted by A's time) and ``cover`` (their share of A's kernel time)."""

    ratio: float
    scatter: float
    kernels: int
    cover: float

    @property
    def alike(self) -> bool:
        """The two GPUs ran the kernels within ``DEVICE_ALIKE`` of each other."""
        return abs(self.ratio - 1) < DEVICE_ALIKE

    @property
    def even(self) -> bool:
        """The kernels moved alike (within ``DEVICE_SCATTER``): the GPU's speed, not the change, moved them."""
        return self.scatter <= DEVICE_SCATTER


def device_speed(census_a: Census | Mapping | None, census_b: Census | Mapping | None) -> DeviceSpeed | None:
    """B's kernel time over A's for the kernels both censuses run equally often (``kernels_by_name``, within 0.5%) and
    time (``kernel_ms_by_name``, the longest of each), a yardstick of the GPU's speed while each was traced as the time
    per aten op is of the host's; None where the censuses count other tokens per step (each kernel does other work),
    or those kernels cover less than ``DEVICE_COVER`` of A's kernel time."""
    a, b = as_census(census_a), as_census(census_b)
    if a is None or b is None:
        return None
    ta, tb = ((c.real_tokens, c.padded_tokens) for c in (a, b))
    if ta != (None, None) and tb != (None, None) and ta != tb:
        return None
    ka, kb = (c.kernel_ms_by_name or {} for c in (a, b))
    na, nb = (c.kernels_by_name or {} for c in (a, b))

    def same_count(k: str) -> bool:
        return na.get(k, 0) > 0 and abs(nb.get(k, 0) - na[k]) <= 0.005 * na[k]

    same = [k for k, ms in ka.items() if ms > 0 and kb.get(k, 0) > 0 and same_count(k) and not is_annotation(k)]
    total_a = float(a.kernel_ms or 0.0)
    a_ms = sum(ka[k] for k in same)
    if not same or total_a <= 0 or a_ms < DEVICE_COVER * total_a:
        return None
    ratio = sum(kb[k] for k in same) / a_ms
    scatter = math.sqrt(sum(ka[k] * math.log(kb[k] / ka[k] / ratio) ** 2 for k in same) / a_ms)
    return DeviceSpeed(ratio, scatter, len(same), a_ms / total_a)


def device_readings(tb: Timeline, dev: DeviceSpeed | None) -> tuple[Timeline, Timeline | None, str | None]:
    """(B's timeline as the point reads it, the other reading the interval spans or None, what the note says): B's
    device work at A's GPU speed where the kernels say B's GPU ran at another, evenly; where they moved unevenly the
    point keeps B's device work as traced and the interval spans both."""
    if dev is None or dev.alike:
        return tb, None, None
    at_a = tb.device_scaled(1 / dev.ratio)
    seen = (
        f"B's kernels ran x{dev.ratio:.2f} of A's time ({dev.kernels} kernels both run equally often, "
        f"{dev.cover:.0%} of A's kernel time"
    )
    if dev.even:
        return at_a, tb, f"{seen}, alike within {dev.scatter:.0%}): B's device work is read at A's GPU speed"
    why = f"{seen}, scattered by {dev.scatter:.0%}): the change moved them, or B's GPU ran at another speed; the "
    return tb, at_a, why + "interval spans B's device work as traced and at A's GPU speed"


def trace_note(readings: list[float], speed: tuple[float, str] | None) -> str:
    """What B's trace says where it falls outside the interval of the counts (its reading with the profiler's overhead
    in proportion to the host time, then per aten op where A's trace allows one), and what most likely made it so:
    where the yardstick of host speed says the two censuses ran on hosts alike, host work the census does not count."""
    if speed is None:
        cause = "host work the census does not count, or a census run on a busier or idler host"
    elif abs(speed[0] - 1) < PROBES_ALIKE:
        cause = f"the censuses' {YARDSTICKS[speed[1]]} agree (x{speed[0]:.2f}), so most likely host work the census"
        cause += " does not count"
    else:
        cause = f"the {YARDSTICKS[speed[1]]} differ (x{speed[0]:.2f}): a host that ran slower or faster while"
        cause += " traced, or host work the census does not count"
    at = " at A's host speed" if speed else ""
    gives = " to ".join(f"{100 * r:+.2f}%" for r in sorted(readings))
    return (
        f"B's traced host time{at} gives {gives}: {cause}; the interval spans {TRACE_COST:g} times that far either way"
    )


def uncounted(reading: float, point: float, speed: tuple[float, str] | None) -> float | None:
    """B's trace ``reading`` as the point, or None: where it falls more than ``UNCOUNTED_MIN`` from the counts'
    ``point`` and the host's time per aten op says both censuses were traced on hosts alike (within ``PROBES_ALIKE``),
    the difference is host work the census does not count. The probes are not enough for it: they track the traced
    host time less closely (docs/cost-model.md)."""
    alike = speed is not None and speed[1] == "aten" and abs(speed[0] - 1) < PROBES_ALIKE
    return reading if alike and abs(reading - point) > UNCOUNTED_MIN else None
