"""What a change of the work costs in step time: a two-path model of one case (GPU x workload x split), from its census.

The model (``docs/cost-model.md``). An optimizer step has two paths that run side by side:

* the **host path** H: the Python calls, aten operators and kernel launches the census counts, each at a host cost per
  unit. Only the *mix* of the costs is a parameter (:class:`Mix`: the share of the host time that goes to Python calls,
  to aten ops and to launches at the case's own work); the scale is the case's own step time, so no machine speed
  enters: H(work) = H0 * (w . n(work)) / (w . n0), plus any host time the census does not count (injected work by
  its clock);
* the **device path**: the kernel time D of the census plus an idle time N per micro-batch, the time the GPU waits for
  the host after each synchronisation even when the GPU is the bottleneck (its range is measured on GPU-bound steps).

The step is ``max(H, D + G * N)`` (G micro-batches per step). Where the host path is the longer one (GPU busy well
under the step, as on an H200), extra host work shows in the step one for one and extra kernel time is hidden until the
device path catches up; where the GPU is the bottleneck, the other way round. A prediction's interval spans the mixes
its calibration could not tell apart (:mod:`harness.judging.cost_fit`) and the idle range.

Pure; standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from harness.errors import BadInput
from harness.judging.critical_path import device_too_long
from harness.results.census import Census

COUNTS = ("python_calls", "ops", "kernels")  # the host work, in the order of a Mix's shares
SPANS = "the interval spans the host path's change to the device path's"  # where the census does not explain a step
LABELS = {"python_calls": "Python calls", "ops": "aten ops", "kernels": "kernel launches"}


@dataclass(frozen=True)
class Work:
    """The work of one optimizer step, from a census: ``python_calls``, ``ops``, ``kernels`` (launches), ``kernel_ms``
    (GPU kernel time, 0 where the census has none) and ``micro_batches`` (G, gradient-accumulation steps)."""

    python_calls: float
    ops: float
    kernels: float
    kernel_ms: float = 0.0
    micro_batches: int = 1

    def __post_init__(self):
        bad = [k for k in (*COUNTS, "kernel_ms") if not (math.isfinite(getattr(self, k)) and getattr(self, k) >= 0)]
        if bad or self.micro_batches < 1:
            raise BadInput(
                f"census work: {', '.join(bad) or 'micro_batches'} must be a finite count >= 0 (micro-batches >= 1)"
            )

    @classmethod
    def of(cls, census: Census | Mapping, micro_batches: int | None = None) -> Work:
        """The work of a census (a :class:`Census`, or as the worker records it: ``ops``, ``kernels``,
        ``python_calls``, ``kernel_ms``; a CPU census has no kernels); G from ``micro_batches`` or the census's resolved
        ``gradient_accumulation_steps``."""
        from harness.judging.census_diff import normalized

        c = normalized(census)
        if c is None or not c.fits or c.ops is None:
            why = (c.reason if c is not None else None) or "no ops counted"
            raise BadInput(f"census: no usable counts ({why}); run a census whose window fits")
        g = micro_batches or ((c.details.get("config") or {}).get("args") or {}).get("gradient_accumulation_steps") or 1
        return cls(
            python_calls=float(c.python_calls or 0.0),
            ops=float(c.ops),
            kernels=float(c.kernels or 0.0),
            kernel_ms=float(c.kernel_ms or 0.0),
            micro_batches=int(g),
        )

    def counts(self) -> tuple[float, float, float]:
        return tuple(float(getattr(self, k)) for k in COUNTS)

    @property
    def on_device(self) -> bool:
        """Whether the census saw device work (launches or kernel time); a CPU census has none: its step is all host."""
        return self.kernels > 0 or self.kernel_ms > 0

    def plus(self, d: Delta) -> Work:
        """This work changed by ``d`` (counts and kernel time floored at 0)."""
        return replace(self, **{k: max(getattr(self, k) + getattr(d, k), 0.0) for k in (*COUNTS, "kernel_ms")})


@dataclass(frozen=True)
class Delta:
    """A change of the work per optimizer step: census counts, kernel time, and ``host_ms``, host time that the census
    does not count (injected work timed by its own clock)."""

    python_calls: float = 0.0
    ops: float = 0.0
    kernels: float = 0.0
    kernel_ms: float = 0.0
    host_ms: float = 0.0

    def __post_init__(self):
        if not all(math.isfinite(getattr(self, k)) for k in (*COUNTS, "kernel_ms", "host_ms")):
            raise BadInput("census diff: every change must be a finite number")

    @classmethod
    def between(cls, base: Census | Mapping, cur: Census | Mapping) -> Delta:
        """``cur - base`` of two censuses of one case."""
        a, b = Work.of(base), Work.of(cur)
        return cls(**{k: getattr(b, k) - getattr(a, k) for k in (*COUNTS, "kernel_ms")})

    @classmethod
    def of(cls, diff) -> Delta:
        """A Delta from a :class:`harness.judging.census_diff.CensusDiff` (its counters beyond tolerance and its kernel
        time), a mapping of changes (the field names), or a Delta."""
        if isinstance(diff, Delta):
            return diff
        if isinstance(diff, Mapping):
            unknown = set(diff) - {*COUNTS, "kernel_ms", "host_ms"}
            if unknown:
                raise BadInput(
                    f"census diff: unknown keys {sorted(unknown)}; use {', '.join((*COUNTS, 'kernel_ms', 'host_ms'))}"
                )
            return cls(**{k: float(v) for k, v in diff.items()})
        if diff.missing:
            raise BadInput(f"census diff: not comparable ({'; '.join(diff.missing)})")
        out = {k: c.delta for k, c in diff.counters.items()}
        tb, tc, _ = diff.time_total or (None, None, None)
        if diff.time_key == "kernel_ms" and tb is not None and tc is not None:
            out["kernel_ms"] = tc - tb
        return cls(**out)


@dataclass(frozen=True)
class Mix:
    """Shares of the host time at a case's own work: Python calls, aten ops, kernel launches (each >= 0,
    summing to 1)."""

    python_calls: float
    ops: float
    kernels: float

    def __post_init__(self):
        s = self.shares()
        if min(s) < -1e-12 or abs(sum(s) - 1.0) > 1e-6:
            raise BadInput(f"host-cost mix {s}: shares must be >= 0 and sum to 1")

    def shares(self) -> tuple[float, float, float]:
        return (self.python_calls, self.ops, self.kernels)

    def weights(self, ref: Work) -> tuple[float, float, float]:
        """Host cost per unit, in units of the host time of ``ref``: share / count. A count of 0 (a CPU census has no
        launches) gets no weight and its share goes to the counts ``ref`` has, in proportion; a mix with no share on any
        of them says nothing about ``ref``'s host time, which is then split equally among them."""
        counted = [n > 0 for n in ref.counts()]
        if not any(counted):
            return (0.0, 0.0, 0.0)
        shares = [s if c else 0.0 for s, c in zip(self.shares(), counted)]
        if sum(shares) <= 0:
            shares = [float(c) for c in counted]
        total = sum(shares)
        return tuple(s / total / n if c else 0.0 for s, n, c in zip(shares, ref.counts(), counted))

    def host_units(self, ref: Work, work: Work) -> float:
        """The host work of ``work`` as a multiple of ``ref``'s (1.0 for ``ref`` itself)."""
        return sum(w * n for w, n in zip(self.weights(ref), work.counts()))


EQUAL = Mix(1 / 3, 1 / 3, 1 / 3)


def simplex(step: float = 0.02) -> list[Mix]:
    """Every mix on a grid of ``step`` (the candidates a calibration chooses among)."""
    n = round(1 / step)
    return [Mix(i / n, j / n, (n - i - j) / n) for i in range(n + 1) for j in range(n + 1 - i)]


@dataclass(frozen=True)
class Case:
    """One case as the model sees it: its ``work`` (census), its measured ``step_ms``, and ``idle_ms``, the range of the
    device path's idle time per micro-batch (None: unknown, 0 up to what a host-bound step allows)."""

    work: Work
    step_ms: float
    idle_ms: tuple[float, float] | None = None

    def __post_init__(self):
        if not (math.isfinite(self.step_ms) and self.step_ms > 0):
            raise BadInput(f"case timing: step_ms must be a positive number, got {self.step_ms}")
        if self.idle_ms is not None and not (0 <= self.idle_ms[0] <= self.idle_ms[1]):
            raise BadInput(f"idle_ms {self.idle_ms}: expected 0 <= LO <= HI (ms per micro-batch)")

    @property
    def busy(self) -> float:
        """GPU busy share of the step: kernel time / step time."""
        return self.work.kernel_ms / self.step_ms

    def idle_range(self) -> tuple[float, float]:
        if self.idle_ms is not None:
            return self.idle_ms
        if not self.work.on_device:  # no device path to wait on: the host path is the step
            return (0.0, 0.0)
        return (0.0, max(self.step_ms - self.work.kernel_ms, 0.0) / self.work.micro_batches)

    def device_ms(self, work: Work, idle: float) -> float:
        return work.kernel_ms + work.micro_batches * idle

    @property
    def bound(self) -> str:
        """``host`` where the device path at the middle of the idle range is shorter than the step, else ``GPU``;
        ``CPU`` where the census saw no device work (everything is host)."""
        if not self.work.on_device and self.idle_ms is None:
            return "CPU"
        lo, hi = self.idle_range()
        return "host" if self.device_ms(self.work, (lo + hi) / 2) < self.step_ms else "GPU"


def unit_costs_us(case: Case, mix: Mix) -> dict[str, float]:
    """Host microseconds per Python call, aten op and launch on ``case``'s machine under ``mix`` (its host path:
    its step)."""
    return {k: 1000.0 * case.step_ms * w for k, w in zip(COUNTS, mix.weights(case.work))}


def step_ms(
    case: Case, mix: Mix, work: Work, extra_host_ms: float = 0.0, idle: float = 0.0, host0: float | None = None
) -> float:
    """The modelled step of ``work`` on ``case``'s machine: max(host path, device path). ``host0``, the host path of the
    case itself, is its measured step where the step is host-bound (the default)."""
    h0 = case.step_ms if host0 is None else host0
    return max(h0 * mix.host_units(case.work, work) + extra_host_ms, case.device_ms(work, idle))


@dataclass(frozen=True)
class Prediction:
    """The predicted change of the step time, in percent: ``delta_pct`` in [``lo``, ``hi``], of which ``host_part``
    comes through the host path and ``gpu_part`` through the device path (their sum is ``delta_pct``); ``bound`` and
    ``busy`` describe the case; ``reason``: why the census does not explain the case's step, where it does not (the
    interval then spans from the host path's change to the device path's)."""

    delta_pct: float
    lo: float
    hi: float
    host_part: float
    gpu_part: float
    bound: str = "host"
    busy: float = 0.0
    reason: str | None = None

    def line(self) -> str:
        where = (
            "no device work in the census: all host"
            if self.bound == "CPU"
            else f"{self.bound}-bound, GPU busy {self.busy:.0%}"
        )
        return (
            f"predicted {self.delta_pct:+.2f}% [{self.lo:+.2f}%, {self.hi:+.2f}%] (host {self.host_part:+.2f}, "
            f"GPU {self.gpu_part:+.2f} points; {where})" + (f"; {self.reason}" if self.reason else "")
        )

    def record(self) -> dict:
        """The prediction as a report records it (percent, rounded)."""
        keys = ("delta_pct", "lo", "hi", "host_part", "gpu_part", "busy")
        out = {k: round(float(getattr(self, k)), 3) for k in keys} | {"bound": self.bound}
        return out | ({"reason": self.reason} if self.reason else {})


def _scenarios(case: Case, mixes: Iterable[Mix]) -> list[tuple[Mix, float, float]]:
    """(mix, idle, host path of the case) combinations an interval spans: both ends of the idle range; a host-bound
    case's host path is its step, a GPU-bound case's anywhere from 0 up to its step (but for the one whose modelled
    step is 0)."""
    lo, hi = case.idle_range()
    hosts = (case.step_ms, 0.0) if case.bound == "GPU" else (case.step_ms,)
    return [(m, i, h) for m in mixes for i in {lo, hi} for h in hosts if step_ms(case, m, case.work, 0.0, i, h) > 0]


def change(
    case: Case, work: Work, mix: Mix, idle: float, host0: float, extra_host_ms: float = 0.0
) -> tuple[float, float]:
    """(total, host part) of the modelled change from ``case`` to ``work``, as fractions of the modelled step."""
    t0 = step_ms(case, mix, case.work, 0.0, idle, host0)
    if t0 <= 0:
        raise BadInput(
            "the modelled step of the case is 0 ms (no host work counted and no device work); "
            "nothing to scale a change by"
        )
    t1 = step_ms(case, mix, work, extra_host_ms, idle, host0)
    host_only = replace(work, kernel_ms=case.work.kernel_ms, micro_batches=case.work.micro_batches)
    return t1 / t0 - 1.0, step_ms(case, mix, host_only, extra_host_ms, idle, host0) / t0 - 1.0


def predict_work(case: Case, work: Work, calibration=None, extra_host_ms: float = 0.0) -> Prediction:
    """The step change from ``case`` to ``work``. ``calibration`` (:class:`harness.judging.cost_fit.Calibration`) gives
    the best mix, the mixes it could not rule out and its relative error, which widens the interval; without one every
    mix is possible, the point is the equal mix and the interval is the mixes' range alone."""
    best, feasible = (
        (calibration.best, calibration.feasible) if calibration is not None else (EQUAL, tuple(simplex(0.05)))
    )
    if not any(case.work.counts()) and not case.work.on_device:
        raise BadInput(
            "census: no Python calls, aten ops or launches counted and no device work; run a census whose window fits"
        )
    if calibration is not None and calibration.idle_ms is not None and case.idle_ms is None and case.work.on_device:
        case = replace(case, idle_ms=calibration.idle_ms)
    i_lo, i_hi = case.idle_range()
    total, host = change(case, work, best, (i_lo + i_hi) / 2, case.step_ms, extra_host_ms)
    err = calibration.rel_error if calibration is not None else 0.0
    span = [
        v * (1 + s * err)
        for m, i, h in _scenarios(case, (best, *feasible))
        for v in (change(case, work, m, i, h, extra_host_ms)[0],)
        for s in (-1, 1)
    ]
    reason = unexplained(case)
    if reason is not None:  # the step lies between the two paths' changes, whichever bounds it
        ends = [m.host_units(case.work, work) - 1 + extra_host_ms / case.step_ms for m in (best, *feasible)]
        ends.append(work.kernel_ms / case.work.kernel_ms - 1)
        span += [min(ends) - err * abs(total), max(ends) + err * abs(total)]
    return Prediction(
        delta_pct=100 * total,
        lo=100 * min(span),
        hi=100 * max(span),
        host_part=100 * host,
        gpu_part=100 * (total - host),
        bound=case.bound,
        busy=case.busy,
        reason=reason,
    )


def unexplained(case: Case) -> str | None:
    """Why the census does not explain the case's step (its kernel time is longer: :func:`device_too_long`), or None."""
    why = device_too_long(case.work.kernel_ms, case.step_ms)
    return None if why is None else f"the census does not explain the timed step: {why}; {SPANS}"


def predict(case_census: Census | Mapping, case_timing, diff, calibration=None) -> Prediction:
    """The predicted change of a case's step time for a census diff.

    ``case_census``: the case's census (as recorded); ``case_timing``: its step time in ms, or a mapping with
    ``step_ms`` (or ``step_time_median_ms``) and optionally ``idle_ms`` (lo, hi); ``diff``: a :class:`CensusDiff`, a
    mapping of changes (``python_calls``, ``ops``, ``kernels``, ``kernel_ms``, ``host_ms``), a :class:`Delta`, or the
    changed census itself; ``calibration``: from :func:`harness.judging.cost_fit.calibrate` (None:
    every host-cost mix possible)."""
    timing = case_timing if isinstance(case_timing, Mapping) else {"step_ms": case_timing}
    step = timing.get("step_ms", timing.get("step_time_median_ms"))
    if step is None:
        raise BadInput("case timing: no step_ms; pass the case's median step time in ms")
    idle = timing.get("idle_ms")
    case = Case(Work.of(case_census), float(step), tuple(idle) if idle is not None else None)
    if isinstance(diff, Census) or (
        isinstance(diff, Mapping) and "ops" in diff and ("fits" in diff or "ops_by_name" in diff)
    ):
        d = Delta.between(case_census, diff)
    else:
        d = Delta.of(diff)
    return predict_work(case, case.work.plus(d), calibration, d.host_ms)


def prediction_record(case_census: Mapping, case_timing, diff, calibration=None) -> dict:
    """:func:`predict` as a report records it (:meth:`Prediction.record`), or ``{"reason": "no prediction: ..."}`` (one
    line) where the model cannot say; never raises for a census or timing it cannot use."""
    try:
        return predict(case_census, case_timing, diff, calibration).record()
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:
        return {"reason": f"no prediction: {exc}"}


def beside_measured(census_a: Mapping | None, census_b: Mapping | None, step_ms_a, verdict: Mapping | None) -> dict:
    """The predicted change from side A's census to side B's (A's measured median step as the case's time) beside the
    measured one, as an interleaved comparison records it: the prediction (:meth:`Prediction.record`) with
    ``measured_pct``, ``measured_lo`` and ``measured_hi`` from the verdict's B/A ratio and interval;
    or ``{"reason"}``."""
    if not census_a or not census_b:
        return {
            "reason": "no prediction: no census of "
            + ("either side" if not (census_a or census_b) else "side A" if not census_a else "side B")
        }
    try:
        out = predict_work(Case(Work.of(census_a), float(step_ms_a)), Work.of(census_b)).record()
    except (ValueError, TypeError, ArithmeticError) as exc:
        return {"reason": f"no prediction: {exc}"}
    return out | measured(verdict)


def measured(verdict: Mapping | None) -> dict:
    """``measured_pct``, ``measured_lo`` and ``measured_hi`` (percent) of an interleaved verdict's B/A ratio and
    interval; empty where the verdict has none."""
    if not verdict or any(verdict.get(k) is None for k in ("ratio", "lo", "hi")):
        return {}
    return {
        f"measured{s}": round(100 * (float(verdict[k]) - 1), 3)
        for s, k in (("_pct", "ratio"), ("_lo", "lo"), ("_hi", "hi"))
    }


def beside_line(p: Mapping | None) -> str:
    """``predicted +x% [lo, hi], measured +y% [lo, hi]`` of :func:`beside_measured`'s record (after ``model:`` where the
    record names the model that gave it, :func:`harness.judging.cost_path.beside_measured`), or its reason."""
    if not p or p.get("delta_pct") is None:
        return (p or {}).get("reason") or "no prediction: no census of either side"
    text = (f"{p['model']}: " if p.get("model") else "") + (
        f"predicted {p['delta_pct']:+.1f}% [{p['lo']:+.1f}%, {p['hi']:+.1f}%] "
        f"(host {p['host_part']:+.1f}, GPU {p['gpu_part']:+.1f} points)"
    )
    if p.get("measured_pct") is not None:
        text += f", measured {p['measured_pct']:+.1f}% [{p['measured_lo']:+.1f}%, {p['measured_hi']:+.1f}%]"
    return text + (f"; {p['reason']}" if p.get("reason") else "")
