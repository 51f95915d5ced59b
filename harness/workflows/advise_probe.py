"""The fit probes of ``python -m harness advise``: a short run of ``m x 1`` per split ``m x G``, all in one worker
process, and the step of each whole split estimated from its probe.

Which splits fit on this device (an out-of-memory probe does not), their peak memory, the census of each probe and a
drift check over the series; nothing here compares splits or recommends one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from harness.files import new_id
from harness.judging.census_window import window_plan
from harness.measuring.runner import RunRequest, run_one
from harness.results.run import Run
from harness.spec import Decomposition, Workload

GIB = 1024**3


@dataclass(frozen=True)
class Probe:
    """The fit probe of one split ``m x G``: ``status`` of its ``m x 1`` run (``ok``, ``oom``, ...) with the run's
    ``error``; ``probe_ms``: its median step after the warm-up; ``step_ms``: the whole split's step estimated from it
    (:func:`estimate_step`); ``peak_reserved_bytes``; ``run_id``; ``census``: the probe's census record (with a census
    window, when it fits); ``probe_workload``: the split it ran (``m x 1``). None where the probe has none."""

    status: str
    error: str | None = None
    probe_ms: float | None = None
    step_ms: float | None = None
    peak_reserved_bytes: int | None = None
    run_id: str | None = None
    census: dict | None = None
    probe_workload: str = ""

    @property
    def fits(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Probe:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Drift:
    """The drift over the probe series: the ``probe`` split's probe first (``first_ms``) and last (``last_ms``) in the
    series, and ``ratio``, the last over the first."""

    first_ms: float
    last_ms: float
    ratio: float
    probe: str

    @property
    def widest(self) -> float:
        """The factor the drift may put on a probe's estimate, either way (at least 1)."""
        return max(self.ratio, 1 / self.ratio)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def probe(
    w: Workload,
    splits: tuple[Decomposition, ...],
    root: Path,
    *,
    gpu: str,
    probe_steps: int,
    run_timeout: float,
    memory_limit_micro: int | None,
    census: bool,
    out: Callable[[str], None],
) -> tuple[dict[str, Probe], Drift | None]:
    """The fit probes: for each split ``m x G``, a short run of ``m x 1`` (one micro-batch per optimizer step), all in
    one worker process (:func:`harness.measuring.worker.train_series`), largest micro-batch first; each record is kept
    in ``<root>/probe/runs.jsonl``. Per split: fits or not (with the allocator's message), peak memory (a LoRA split's
    memory is its micro-batch's: the accumulated adapter gradients are tiny), the median of ``probe_steps`` steps after
    the warm-up, the census of the steps after those (with ``census``), and :func:`estimate_step` of the whole split.

    Drift check: the series opens with the smallest micro-batch's probe (timed steps only) and ends with it, so a
    process or machine that slows down over the series shows as ``drift``, the ratio of the last to the first of those
    two (None when that probe failed). The estimates of splits probed later carry up to that factor."""
    session = new_id("advise-probe")
    items = probe_requests(w, splits, probe_steps, memory_limit_micro, census)
    out(
        f"probing {len(splits)} micro-batch sizes in one worker process "
        f"({probe_steps} timed steps each after the warm-up" + (", then a census window" if census else "") + ")"
    )
    anchor = dataclasses.replace(
        items[-1],
        census=False,
        workload=items[-1].workload.with_overrides(max_steps=items[-1].workload.measure.warmup_steps + probe_steps),
    )
    rec = run_one(dataclasses.replace(items[0], series=(anchor, *items)), root / "probe", session, run_timeout, gpu)
    records = rec["series"]  # the anchor's, then each split's
    first, *series = (Run.from_json(r) for r in records)
    drift = drift_of(first, series[-1], items[-1].decomposition.id)
    if drift:
        out(
            f"drift check: {drift.probe} probed first and last in the series: "
            f"{drift.first_ms:.1f} -> {drift.last_ms:.1f} ms (x{drift.ratio:.3f})"
        )
    got: dict[str, Probe] = {}
    for i, (d, r, written) in enumerate(zip(splits, series, records[1:]), 1):
        p = probe_of(r, d, probe_steps, written.get("census") if census else None)
        mem = f", peak reserved {p.peak_reserved_bytes / GIB:.2f} GiB" if p.peak_reserved_bytes else ""
        out(
            f"[probe {i}/{len(splits)}] {d.id}: "
            + (
                f"fits; {p.probe_workload} median step {p.probe_ms:.1f} ms, so about {p.step_ms:.0f} ms per {d.id} "
                f"step{mem}"
                if p.fits
                else f"{'does not fit' if p.status == 'oom' else p.status}: {p.error or ''}"
            )
        )
        got[d.id] = p
    return got, drift


def probe_of(rec: Run, d: Decomposition, probe_steps: int, census: dict | None) -> Probe:
    """The probe of the split ``d`` from the run record ``rec`` of its ``m x 1`` run and its ``census`` as written
    (None without one)."""
    return Probe(
        status=rec.status,
        error=rec.error,
        probe_ms=rec.step_time_median_ms if rec.ok else None,
        step_ms=estimate_step(rec, d.grad_accum, probe_steps) if rec.ok else None,
        peak_reserved_bytes=rec.peak_reserved_bytes,
        run_id=rec.run_id or None,
        census=census if rec.ok else None,
        probe_workload=f"{d.micro_batch}x1",
    )


def probe_requests(
    w: Workload,
    splits: tuple[Decomposition, ...],
    probe_steps: int,
    memory_limit_micro: int | None,
    census: bool,
) -> list[RunRequest]:
    """The probe of each split ``m x G``: ``m x 1`` for the warm-up and ``probe_steps`` timed steps, then (with
    ``census``) the census window; a split with a micro-batch above ``memory_limit_micro`` runs out of memory at its
    first step."""
    items = []
    for d in splits:
        wm = w.with_splits(d.micro_batch)
        one = wm.decomposition(f"{d.micro_batch}x1")
        warm = wm.measure.warmup_steps
        steps = warm + probe_steps
        # the census window: whole logging periods after the timed steps (harness.judging.census_window.window_plan)
        if census:
            plan = window_plan(steps, wm.train.logging_steps, 10**9)
            steps = plan.start + plan.n
        fault = "oom@1" if memory_limit_micro is not None and d.micro_batch > memory_limit_micro else None
        items.append(
            RunRequest(wm.with_overrides(max_steps=steps), one, 1, fault=fault, census=census, timed_steps=probe_steps)
        )
    return items


def drift_of(first: Run, last: Run, probe_id: str) -> Drift | None:
    """The drift over the probe series: the step of the ``probe_id`` probe at its end (``last``) against its start
    (``first``); None when either failed."""
    start, end = first.step_time_median_ms, last.step_time_median_ms
    if not (first.ok and last.ok and start and end):
        return None
    return Drift(start, end, end / start, probe_id)


def estimate_step(rec: Run, grad_accum: int, timed: int) -> float:
    """Milliseconds per optimizer step of ``m x grad_accum`` from a probe of ``m x 1``: the per-micro-batch part of the
    probe's ``timed`` steps after the warm-up (data, forward, backward: the phase medians) ``grad_accum`` times, plus
    the per-step rest (optimizer, logging, everything else) once. Without phases, ``grad_accum`` times the whole median
    step (an overestimate by the per-step rest, ``grad_accum - 1`` times)."""
    step = rec.step_time_median_ms
    warm = rec.warmup_steps or 0
    ph = rec.phases_ms or {}
    micro = [median(v[warm : warm + timed] or v) for k in ("data", "forward", "backward") if (v := ph.get(k))]
    if len(micro) < 3:
        return grad_accum * step
    per_micro = min(sum(micro), step)
    return grad_accum * per_micro + (step - per_micro)
