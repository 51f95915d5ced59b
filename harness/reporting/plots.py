"""matplotlib PNGs from a report's data (:func:`harness.reporting.report.build`): written next to report.md."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from harness.files import atomic_path  # noqa: E402
from harness.record import PHASES  # noqa: E402
from harness.reporting.report import PLOTS  # noqa: E402
from harness.results.report_row import ReportRow  # noqa: E402
from harness.results.suite_report import ReportData  # noqa: E402

PHASE_COLORS = dict(zip(PHASES, ("#8da0cb", "#66c2a5", "#fc8d62", "#e78ac3", "#bbbbbb")))


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG atomically and close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _label(r: ReportRow) -> str:
    return f"{r.workload}\n{r.micro_batch}×{r.grad_accum}"


def step_times(data: ReportData) -> Figure:
    """Median steady-state step time per decomposition, current against baseline, whiskers = run range."""
    rows = [r for r in data.rows if r.step_time_ms or r.baseline_step_time_ms]
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(rows)), 3.6))
    for i, r in enumerate(rows):
        for off, s, color, name in (
            (-0.18, r.baseline_step_time_ms, "#999999", "baseline"),
            (0.18, r.step_time_ms, "#1b9e77", "current"),
        ):
            if not s:
                continue
            ax.bar(i + off, s.median, width=0.34, color=color, label=name if i == 0 else None)
            ax.errorbar(
                i + off,
                s.median,
                yerr=[[s.median - s.min], [s.max - s.median]],
                color="black",
                capsize=3,
                lw=1,
            )
        if r.ratio is not None:
            top = max((s.max for s in (r.step_time_ms, r.baseline_step_time_ms) if s), default=0)
            ax.text(i, top * 1.03, f"{(r.ratio - 1) * 100:+.1f}%\n{r.verdict}", ha="center", fontsize=8)
    ax.set_xticks(range(len(rows)), [_label(r) for r in rows], fontsize=8)
    ax.set_ylabel("median step time, ms (whiskers: run range)")
    ax.set_title(f"Step time per decomposition on {data.env.gpu or data.gpu}", fontsize=10)
    if ax.get_legend_handles_labels()[0]:  # a census-only session has no timed run to plot
        ax.legend(fontsize=8)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    return fig


def phases(data: ReportData) -> Figure:
    """Stacked median phase times per optimizer step."""
    rows = [r for r in data.rows if r.phases_ms]
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(rows)), 3.6))
    for i, r in enumerate(rows):
        bottom = 0.0
        for p, c in PHASE_COLORS.items():
            v = max(r.phases_ms.get(p, 0.0), 0.0)
            ax.bar(i, v, bottom=bottom, color=c, width=0.6, label=p if i == 0 else None)
            bottom += v
        if r.kernel_ms_per_step:
            ax.plot(
                [i - 0.3, i + 0.3],
                [r.kernel_ms_per_step] * 2,
                color="black",
                lw=2,
                label="GPU kernel time" if i == 0 else None,
            )
    ax.set_xticks(range(len(rows)), [_label(r) for r in rows], fontsize=8)
    ax.set_ylabel("ms per optimizer step (median)")
    ax.set_title("Where the step goes", fontsize=10)
    if rows:
        ax.legend(fontsize=8, loc="upper right")
    else:
        ax.text(0.5, 0.5, "no phase data (runs with --no-phases)", ha="center", transform=ax.transAxes)
    return fig


def traces(data: ReportData) -> Figure:
    """Every run's step times, one panel per decomposition."""
    rows = [r for r in data.rows if r.step_traces_ms]
    fig, axes = plt.subplots(1, max(len(rows), 1), figsize=(max(4, 3.2 * len(rows)), 3.2), sharey=False, squeeze=False)
    for ax, r in zip(axes[0], rows):
        for j, t in enumerate(r.step_traces_ms):
            ax.plot(range(1, len(t) + 1), t, lw=0.8, alpha=0.8, label=f"run {j + 1}")
        if r.warmup_steps:
            ax.axvspan(0.5, r.warmup_steps + 0.5, color="#dddddd", zorder=0, label="warm-up (skipped)")
        ax.set_title(f"{r.workload} {r.micro_batch}×{r.grad_accum}", fontsize=9)
        ax.set_xlabel("optimizer step")
        steady = [x for t in r.step_traces_ms for x in t[r.warmup_steps or 0 :]]
        if steady:
            ax.set_ylim(0, 1.25 * max(steady))  # warm-up steps may run off the top
    axes[0][0].set_ylabel("step time, ms")
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=7)
    return fig


FIGURES = dict(zip(PLOTS, (step_times, phases, traces)))


def write_all(data: ReportData, out: str | Path) -> list[Path]:
    return [save(make(data), Path(out) / name) for name, make in FIGURES.items()]
