"""What a case's numbers say about its step, for the session report (:mod:`harness.reporting.report`): where the step
time moved against the baseline, phase by phase and beside the host launch probe, and what limits the step (GPU busy
fraction, launches, host time per launch, MFU) from a census. Descriptive readings of one report row; the verdicts say
whether a change matters.
"""

from __future__ import annotations

from dataclasses import replace

from harness.judging import flops, peak_flops
from harness.record import PHASES
from harness.results.report_row import Diagnosis, ReportRow, RowCensus


def where(row: ReportRow) -> list[tuple[str, float, float]]:
    """Where the step time moved against the baseline: (phase, change in ms, relative change) per phase,
    largest absolute change first; empty when this session or the baseline has no phase timings.
    Descriptive (medians of medians), not a test: it points at the phase to look at, the verdict says whether it
    matters."""
    cur, base = row.phases_ms, row.baseline_phases_ms
    if not cur or not base:
        return []
    out = [
        (p, cur[p] - base[p], (cur[p] / base[p] - 1) if base[p] else float("nan"))
        for p in PHASES
        if p in cur and p in base
    ]
    return sorted(out, key=lambda x: -abs(x[1]))


def step_moved(row: ReportRow) -> float | None:
    """Median step time minus the baseline's (ms): the total that :func:`where` splits into phases."""
    cur, base = row.step_time_ms, row.baseline_step_time_ms
    return cur.median - base.median if cur and base else None


def moved_text(d: float, r: float, unit: str = "") -> str:
    """One phase's change: ``+30.0 ms (+50%)``, without the percentage when the baseline phase was 0."""
    return f"{d:+.1f}{unit}" + (f" ({r:+.0%})" if r == r else "")


def probe_moved(row: ReportRow) -> float | None:
    """Relative change of the host probe's launch time (``host_probe.launch_us``, medians) against the
    baseline's runs: +0.12 means this machine's host issues tiny ops 12% slower. None without both.
    Descriptive: a step time that moved with it points at the machine rather than the code."""
    cur, base = row.host_launch_us, row.baseline_host_launch_us
    return cur / base - 1 if cur and base else None


def where_text(row: ReportRow, top: int | None = None) -> str:
    """The step's move as one line: the median step, the ``top`` phases that moved most, the host launch probe."""
    step = step_moved(row)
    head = f"median step {step:+.1f} ms; " if step is not None else ""
    probe = probe_moved(row)
    tail = f"; host launch probe {probe:+.0%} vs baseline" if probe is not None else ""
    return head + ", ".join(f"{p} {moved_text(d, r, ' ms')}" for p, d, r in where(row)[:top]) + tail


def diagnosis(census: RowCensus, step_ms: float | None, workload, gpu: str) -> Diagnosis:
    """What limits the step, from a census and the median step time: GPU busy fraction (kernel time / step
    time), kernel launches per sample, host time per launch (step time / launches), host-bound (GPU busy
    below 50%) or GPU-bound (80% or more), and MFU from LoRA-correct FLOPs against ``gpu``'s peak (its full name, or a
    short name of one model: :mod:`harness.judging.peak_flops`; none for a GPU the table does not know)."""
    kernels, kernel_ms = census.kernels, census.kernel_ms
    out = Diagnosis(step_ms=step_ms, kernel_ms=kernel_ms, kernels=kernels, ops=census.ops)
    samples = workload.effective_batch
    if kernels:
        out = replace(out, launches_per_sample=kernels / samples)
    if step_ms and kernel_ms:
        busy = kernel_ms / step_ms
        out = replace(
            out,
            gpu_busy=busy,
            host_us_per_launch=step_ms * 1000 / kernels,
            bound="host-bound" if busy < 0.5 else "GPU-bound" if busy >= 0.8 else "mixed",
        )
    try:
        lo = workload.lora
        fpt = flops.lora_flops_per_token(
            workload.architecture()["config"],
            lo.r,
            lo.target_modules,
            workload.train.gradient_checkpointing,
            workload.train.max_length,
        )
        out = replace(out, flops_per_step=fpt * samples * workload.train.max_length)
        known = peak_flops.peak(gpu)
        out = replace(out, peak_flops_of=known[0] if known else None)
        if step_ms and known:
            out = replace(out, mfu=flops.mfu(out.flops_per_step, step_ms / 1000, known[1]))
    except (KeyError, ValueError, TypeError):
        pass
    return out


def diagnosis_text(d: Diagnosis) -> str:
    """A :func:`diagnosis` as one line of its known parts."""
    parts = []
    if d.gpu_busy is not None:
        parts.append(
            f"GPU busy {d.gpu_busy:.0%} ({d.kernel_ms:.0f} ms of kernels in a {d.step_ms:.0f} ms step): {d.bound}"
        )
    if d.launches_per_sample is not None:
        parts.append(f"{d.launches_per_sample:,.0f} kernel launches per sample")
    if d.host_us_per_launch is not None:
        parts.append(f"{d.host_us_per_launch:.1f} us of step per launch")
    if d.ops:
        parts.append(f"{d.ops:,.0f} aten ops per step")
    if d.mfu is not None:
        parts.append(f"MFU {d.mfu:.1%} (LoRA-correct FLOPs)")
    elif d.flops_per_step and d.gpu_busy is not None and d.peak_flops_of is None:  # a GPU the table lacks
        parts.append("MFU unknown (no peak FLOPS known for this GPU)")
    return "; ".join(parts)
