"""What a change costs, from the step's own timeline (:mod:`harness.judging.critical_path`), and which model says it.

:func:`predict_pair` predicts side B's step from side A's (A's timed step as the case's time):

* **critical path, both timelines** (censuses that carry ``timeline``): A's traced host time is scaled so that A's
  simulated step is its timed step (the profiler's overhead out: :func:`critical_path.host_scale`); B's own timeline
  (its syncs, its device work, its host time spread over its segments as traced) is simulated with A's scaled host time
  times the count ratio of the best host-cost mix: a trace's host time is one window's timing, and a census run on a
  busier or idler host moves it by more than most changes; the counts do not move with the host's load. The interval
  spans both placements of the device work within its segment, the mixes the calibration allows, and the profiler's
  overhead read per aten op (:func:`critical_path.per_op_overhead`) instead of in proportion to the host time; it is
  widened by ``REL_ERROR``. B's trace read at A's scale (``traced_pct``), and read with the profiler's overhead taken
  out per aten op (``traced_per_op_pct``: host work between ops, which the profiler does not inflate, then counts in
  full), are said where either falls outside the rest, and the interval then spans ``TRACE_COST`` times as far from the
  point on either side as the farther of them: host work the counts miss
  (injected host work, a C extension's own time) shows there, and costs more in a timed loop than its traced time;
  so does a census run on a busier or idler host, which may hide such work. Where the host's time per aten op says
  both were traced on hosts alike and B's trace read per aten op (at A's scale where A's trace gives no per-op
  reading) is more than ``UNCOUNTED_MIN`` from the counts' point, that reading is the point
  (:func:`trace_speed.uncounted`): host work the census does not count, in the host part.
  B's trace is read at A's host speed first (``host_speed``, :func:`trace_speed.speed_by`): by the host's time per
  aten op in each traced window (``timeline.aten_ms``), which host work between ops does not enter; for older censuses
  by the host probes (the time per launch of a tiny op, next to the traced window or before training), so that a
  census run on a slower or faster host moves it less; one window's yardstick is not exact, so the interval still spans
  past the trace's reading. The host part is the counted host path's change, the GPU part the rest: the change of the
  host's waits at the syncs. B's device work is read at A's GPU speed where the kernels both censuses run equally
  often took another time in B's, all alike (:func:`trace_speed.device_speed`: a GPU that ran at another speed while
  traced); where they moved unevenly the point keeps B's device work as traced and the interval spans both readings.
  Where A's census does not explain A's timed step (:func:`critical_path.unexplained`: its device work alone is longer
  than the step), the prediction says why (``reason``, also in its note) and its interval spans from the host path's
  change to the device path's: the step's change lies between them, whichever path bounds the step;
* **critical path, A's timeline only** (B's census is older): the diff's extra work placed in A's timeline: the host
  part spread over the segments, the device part by where A's device work is (the point), the interval over every
  segment the device part could all be in, from hidden to exposed;
* **two-path** (A's census has no timeline): :mod:`harness.judging.cost_model`, as before, said so.

Pure; standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.judging import cost_model as cm
from harness.judging.critical_path import (
    PLACEMENTS,
    Timeline,
    exposed_at,
    host_scale,
    per_op_overhead,
    simulate,
    unexplained,
)
from harness.judging.trace_speed import TRACE_COST, device_readings, device_speed, speed_by, trace_note, uncounted
from harness.results.census import Census

# The relative error allowed on a change beyond the spans the model computes; how often the intervals it makes cover
# the measured change is on the cost model's evidence page (docs/cost-model.md, Calibration).
REL_ERROR = 0.3
PLACED_SAMPLES = 48  # segments tried, evenly spread, for where a placed change's device part could all be
CRITICAL, PLACED, TWO_PATH = "critical path", "critical path, placed", "two-path"


@dataclass(frozen=True)
class PathPrediction:
    """A predicted change in percent, ``delta_pct`` in [``lo``, ``hi``], its ``host_part`` and ``gpu_part`` (points;
    their sum is ``delta_pct``), the ``model`` that gave it, the case's GPU ``busy`` share, the host's waits per step of
    each side (``waits_ms``: a, b), the syncs where B's waits are longest (``exposed_at``), the factor on the traced
    host time (``host_scale``), the change B's traced host time would give at A's host speed (``traced_pct``;
    ``traced_per_op_pct`` with the profiler's overhead taken out per aten op; A's host speed is B's time per unit of
    work over A's, ``host_speed``, by the yardstick ``host_speed_by``); ``note``: what the model could not place or
    where the trace and the counts disagree; ``bound``: ``CPU`` (no device work), ``host`` (the scaled host time is
    longer than the device time) or ``GPU``; ``device_speed``: B's kernel time over A's for the same kernels
    (:func:`device_speed`); ``reason``: why A's census does not explain A's timed step, where it does not (the interval
    then spans from the host path's change to the device path's: it says so, it is not narrow)."""

    delta_pct: float
    lo: float
    hi: float
    host_part: float
    gpu_part: float
    model: str
    busy: float
    waits_ms: tuple[float, float]
    exposed_at: tuple[dict, ...] = ()
    host_scale: float = 1.0
    note: str | None = None
    bound: str = "host"
    traced_pct: float | None = None
    host_speed: float | None = None
    host_speed_by: str | None = None
    traced_per_op_pct: float | None = None
    device_speed: float | None = None
    reason: str | None = None

    def record(self) -> dict:
        out = {
            k: round(float(getattr(self, k)), 3)
            for k in ("delta_pct", "lo", "hi", "host_part", "gpu_part", "busy", "host_scale")
        }
        out |= {
            k: round(getattr(self, k), 3)
            for k in ("traced_pct", "traced_per_op_pct", "host_speed", "device_speed")
            if getattr(self, k) is not None
        }
        return (
            out
            | {
                "model": self.model,
                "bound": self.bound,
                "waits_ms": [round(w, 3) for w in self.waits_ms],
                "exposed_at": list(self.exposed_at),
            }
            | ({"note": self.note} if self.note else {})
            | ({"host_speed_by": self.host_speed_by} if self.host_speed_by else {})
            | ({"reason": self.reason} if self.reason else {})
        )


def _bound(t: Timeline, k: float) -> str:
    return "CPU" if t.device_ms == 0 else "host" if k * t.host_ms > t.device_ms else "GPU"


def _mixes(calibration) -> tuple:
    return (calibration.best, *calibration.feasible) if calibration is not None else (cm.EQUAL, *cm.simplex(0.05))


def _count_ratios(
    census_a: Census | Mapping, census_b: Census | Mapping, calibration
) -> tuple[float, float, float] | None:
    """B's host work as a multiple of A's by the counts: (best mix, lowest and highest of the mixes allowed); None
    where A's census counts no host work."""
    wa, wb = cm.Work.of(census_a), cm.Work.of(census_b)
    if not any(wa.counts()):
        return None
    rs = [m.host_units(wa, wb) for m in _mixes(calibration)]
    return rs[0], min(rs), max(rs)


def _widened(values: list[float], point: float) -> tuple[float, float]:
    pad = REL_ERROR * abs(point)
    return min(values) - pad, max(values) + pad


def _as_host(t: Timeline, host_ms: float) -> Timeline:
    """``t`` with ``host_ms`` of host time per step, spread over its segments as its trace has it."""
    return t.scaled(host_ms / t.host_ms) if t.host_ms > 0 else t.plus(host_ms=host_ms)


def predict_timelines(
    census_a: Census | Mapping, census_b: Census | Mapping, step_ms_a: float, calibration=None
) -> PathPrediction:
    """B's step from its own timeline, at A's host scale (module docstring)."""
    ta, tb = Timeline.of(census_a), Timeline.of(census_b)
    best, r_lo, r_hi = _count_ratios(census_a, census_b, calibration) or (tb.host_ms / ta.host_ms,) * 3
    found = speed_by(census_a, census_b)
    speed = found[0] if found else None
    dev = device_speed(census_a, census_b)
    tb, other, dev_note = device_readings(tb, dev)
    points, span, traced, per_op, runs = [], [], [], [], {}
    for placement in PLACEMENTS:
        k, why = host_scale(ta, step_ms_a, placement)
        a = ta.scaled(k)
        ra = simulate(a, placement)
        rb = simulate(_as_host(tb, a.host_ms * best), placement)
        points.append(rb.step_ms / ra.step_ms - 1)
        span += [simulate(_as_host(tb, a.host_ms * r), placement).step_ms / ra.step_ms - 1 for r in (r_lo, r_hi)]
        if other is not None:  # B's device work read the other way
            span.append(simulate(_as_host(other, a.host_ms * best), placement).step_ms / ra.step_ms - 1)
        traced.append(simulate(tb.scaled(k / (speed or 1.0)), placement).step_ms / ra.step_ms - 1)
        if (c := per_op_overhead(ta, step_ms_a, placement)) is not None:  # the profiler's overhead read per op instead
            a_less = ta.less_per_op(c)
            a_op = simulate(a_less, placement).step_ms
            span.append(simulate(_as_host(tb.less_per_op(c), a_less.host_ms * best), placement).step_ms / a_op - 1)
            per_op.append(simulate(tb.scaled(1 / (speed or 1.0)).less_per_op(c), placement).step_ms / a_op - 1)
        runs[placement] = (k, why, ra, rb, a.host_ms * (best - 1) / ra.step_ms)
    k, why, ra, rb, _ = runs["early"]
    total, by_trace = sum(points) / len(points), sum(traced) / len(traced)
    by_op = sum(per_op) / len(per_op) if per_op else None
    host = sum(r[-1] for r in runs.values()) / len(runs)
    lo, hi = _widened(span + points, total)
    readings = [by_trace] + ([by_op] if by_op is not None else [])
    trace_why = None
    if not all(lo <= r <= hi for r in readings):  # host work the counts miss, or a trace on a busier or idler host
        trace_why = trace_note(readings, found)
        moved = uncounted(readings[-1], total, found)
        reach = TRACE_COST * max(abs(r - total) for r in readings)
        lo, hi = min(lo, total - reach), max(hi, total + reach)
        if moved is not None:  # the point is the trace's reading, the host part takes the work the counts miss
            trace_why += "; the point is B's trace read " + (
                "per aten op" if by_op is not None else "at A's host scale"
            )
            host, total = host + moved - total, moved
    reason = _unexplained(ta, step_ms_a)
    if reason is not None:  # the step lies between the two paths' changes, whichever bounds it
        ends = [r_lo - 1, r_hi - 1] + [_device_change(ta, x) for x in (tb, other) if x is not None]
        pad = REL_ERROR * abs(total)
        lo, hi = min(lo, min(ends) - pad), max(hi, max(ends) + pad)
    note = "; ".join(x for x in (why if reason is None else None, trace_why, dev_note, reason) if x) or None
    return PathPrediction(
        100 * total,
        100 * lo,
        100 * hi,
        100 * host,
        100 * (total - host),
        CRITICAL,
        ta.device_ms / ra.step_ms,
        (ra.waits_ms, rb.waits_ms),
        tuple(exposed_at(tb, rb)),
        k,
        note,
        _bound(ta, k),
        traced_pct=100 * by_trace,
        host_speed=speed,
        host_speed_by=found[1] if found else None,
        traced_per_op_pct=None if by_op is None else 100 * by_op,
        device_speed=dev.ratio if dev is not None else None,
        reason=reason,
    )


def _unexplained(ta: Timeline, step_ms: float) -> str | None:
    """Why A's census does not explain A's timed step (:func:`critical_path.unexplained`), as a prediction says it, or
    None."""
    why = unexplained(ta, step_ms)
    return None if why is None else f"A's census does not explain its timed step: {why}; {cm.SPANS}"


def _device_change(ta: Timeline, tb: Timeline) -> float:
    """The change of the device work alone from ``ta`` to ``tb`` (0 where A has none)."""
    base = ta.device_path_ms
    return tb.device_path_ms / base - 1 if base > 0 else 0.0


def _placed(a: Timeline, d: cm.Delta, r: float, at: int | None, placement: str, base_ms: float) -> float:
    """The change of ``a`` (host-scaled) with the host work times ``r``, ``d``'s uncounted host time spread, and ``d``'s
    kernel time spread by device time (``at`` None) or all in segment ``at``."""
    b = a.plus(host_ms=a.host_ms * (r - 1) + d.host_ms, device_ms=d.kernel_ms, at=at)
    return simulate(b, placement).step_ms / base_ms - 1


def predict_placed(census_a: Census | Mapping, step_ms_a: float, diff, calibration=None) -> PathPrediction:
    """A change without B's timeline: ``diff`` (:meth:`cost_model.Delta.of`'s inputs, or B's census) placed in A's
    timeline (module docstring)."""
    ta = Timeline.of(census_a)
    d = (
        cm.Delta.between(census_a, diff)
        if isinstance(diff, Census) or (isinstance(diff, Mapping) and "ops" in diff and "fits" in diff)
        else cm.Delta.of(diff)
    )
    wa = cm.Work.of(census_a)
    counted = any(wa.counts())
    ratios = sorted({m.host_units(wa, wa.plus(d)) for m in _mixes(calibration)}) if counted else [1.0]
    best = (calibration.best if calibration is not None else cm.EQUAL).host_units(wa, wa.plus(d)) if counted else 1.0
    n_seg = len(ta.segments)
    spots = sorted({round(i * (n_seg - 1) / max(PLACED_SAMPLES - 1, 1)) for i in range(min(PLACED_SAMPLES, n_seg))})
    points, span = [], []
    for placement in PLACEMENTS:
        a = ta.scaled(host_scale(ta, step_ms_a, placement)[0])
        base = simulate(a, placement).step_ms
        points.append(_placed(a, d, best, None, placement, base))
        span += [
            _placed(a, d, r, at, placement, base)
            for r in (ratios[0], ratios[-1])
            for at in ([None, *spots] if d.kernel_ms else [None])
        ]
    total = sum(points) / len(points)
    k = host_scale(ta, step_ms_a, "early")[0]
    run = simulate(ta.scaled(k))
    host = (k * ta.host_ms * (best - 1) + d.host_ms) / run.step_ms
    lo, hi = _widened(span, total)
    note = "B's census has no timeline: the change placed in A's" + (
        ", its device part anywhere from hidden to exposed" if d.kernel_ms else ""
    )
    reason = _unexplained(ta, step_ms_a)
    if reason is not None:  # as predict_timelines: from the host path's change to the device path's
        dev = ta.device_path_ms
        ends = [ratios[0] - 1 + d.host_ms / step_ms_a, ratios[-1] - 1 + d.host_ms / step_ms_a]
        ends.append(d.kernel_ms / dev if dev > 0 else 0.0)
        pad = REL_ERROR * abs(total)
        lo, hi = min(lo, min(ends) - pad), max(hi, max(ends) + pad)
        note += f"; {reason}"
    return PathPrediction(
        100 * total,
        100 * lo,
        100 * hi,
        100 * host,
        100 * (total - host),
        PLACED,
        ta.device_ms / run.step_ms,
        (run.waits_ms, run.waits_ms),
        tuple(exposed_at(ta, run)),
        k,
        note,
        _bound(ta, k),
        reason=reason,
    )


def predict_pair(
    census_a: Census | Mapping, census_b: Census | Mapping, step_ms_a: float, calibration=None, idle_ms=None
) -> dict:
    """The prediction record of B against A with the model that can give it (module docstring): ``model`` says which."""
    if Timeline.of(census_a) is not None and Timeline.of(census_b) is not None:
        return predict_timelines(census_a, census_b, step_ms_a, calibration).record()
    if Timeline.of(census_a) is not None:
        return predict_placed(census_a, step_ms_a, census_b, calibration).record()
    p = cm.predict(
        census_a, {"step_ms": step_ms_a, "idle_ms": idle_ms}, cm.Delta.between(census_a, census_b), calibration
    )
    note = "no timeline in A's census (an older census): the two-path model" + (f"; {p.reason}" if p.reason else "")
    return p.record() | {"model": TWO_PATH, "note": note}


def timeline_line(census: Census | Mapping, step_ms: float) -> str | None:
    """One line of a case's timeline at its timed step: syncs, host and device time, the host scale and where the host
    waits; None where the census carries no timeline."""
    t = Timeline.of(census)
    if t is None:
        return None
    k, why = host_scale(t, step_ms)
    run = simulate(t.scaled(k))
    top = [
        f"{r['at']} ({r['sync']}, {r['count']:g} per step) {r['exposed_ms']:.1f} ms"
        for r in exposed_at(t, run)
        if r["exposed_ms"] > 0
    ]
    steps = t.step_busy_ms
    per_step = f", {min(steps):.1f} to {max(steps):.1f} ms in its {len(steps)} steps" if len(steps) > 1 else ""
    reason = unexplained(t, step_ms)
    return (
        f"timeline: {t.syncs:g} syncs per step, host {t.host_ms:.1f} ms traced (x{k:.2f} at the timed "
        f"step{'; ' + why if why and not reason else ''}), device {t.device_ms:.1f} ms (busy {t.device_path_ms:.1f} ms "
        f"of the traced window's {t.window_ms:.1f} ms per step{per_step}); the host waits {run.waits_ms:.1f} ms per "
        "step"
        + (f", most at {'; '.join(top)}" if top else "")
        + (f"; the census does not explain the timed step: {reason}" if reason else "")
    )


def pair_line(rec: Mapping) -> str:
    """One line of :func:`predict_pair`'s record."""
    if rec.get("model") == TWO_PATH:
        return (
            f"{TWO_PATH}: predicted {rec['delta_pct']:+.2f}% [{rec['lo']:+.2f}%, {rec['hi']:+.2f}%] (host "
            f"{rec['host_part']:+.2f}, GPU {rec['gpu_part']:+.2f} points; {rec['bound']}-bound, GPU busy "
            f"{rec['busy']:.0%}); {rec['note']}"
        )
    top = rec.get("exposed_at") or []
    where = f", most at {top[0]['at']} ({top[0]['sync']})" if top and top[0]["exposed_ms"] > 0 else ""
    return (
        f"{rec['model']}: predicted {rec['delta_pct']:+.2f}% [{rec['lo']:+.2f}%, {rec['hi']:+.2f}%] (host "
        f"{rec['host_part']:+.2f}, GPU {rec['gpu_part']:+.2f} points; GPU busy {rec['busy']:.0%}; host waits "
        f"{rec['waits_ms'][0]:.1f} -> {rec['waits_ms'][1]:.1f} ms per step"
        f"{where})" + (f"; {rec['note']}" if rec.get("note") else "")
    )


def beside_measured(
    census_a: Census | Mapping | None, census_b: Census | Mapping | None, step_ms_a, verdict: Mapping | None
) -> dict:
    """:func:`cost_model.beside_measured` with the model that can give the prediction (``model``): the critical path
    where A's census carries a timeline, else the two-path model."""
    if not census_a or not census_b or Timeline.of(census_a) is None:
        rec = cm.beside_measured(census_a, census_b, step_ms_a, verdict)
        return rec | ({"model": TWO_PATH} if "delta_pct" in rec else {})
    return pair_record(census_a, census_b, step_ms_a) | cm.measured(verdict)


def pair_record(census_a: Census | Mapping, census_b: Census | Mapping, step_ms_a) -> dict:
    """:func:`predict_pair`'s record, or ``{"reason": "no prediction: ..."}`` (one line) where the censuses or the step
    cannot be used; never raises for them (as :func:`cost_model.prediction_record`)."""
    try:
        return predict_pair(census_a, census_b, float(step_ms_a))
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:
        return {"reason": f"no prediction: {exc}"}
