"""What ``python -m harness advise`` shows: the terminal table and report lines, the workload TOML lines that pin
the recommended split, and the plot of step time and peak memory against the micro-batch.

Pure formatting of an advice's :class:`Findings` (:func:`harness.workflows.advise.advise` builds them): nothing here
runs or measures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.results.verdict import Verdict
from harness.spec import Workload
from harness.workflows.advise_probe import GIB, Drift, Probe

__all__ = ["GIB", "Answer", "Findings", "plot", "report_lines", "toml_lines"]


@dataclass(frozen=True)
class Answer:
    """The split the advice recommends (None when none fits) and the ``lines`` that say why; ``fastest``: the fastest
    split found (by the interleaved comparisons, else by the probes); ``ties``: the splits within the threshold of it;
    ``fits``: the splits that fit; ``open``: those not separated from it within the budget."""

    recommended: str | None
    lines: tuple[str, ...]
    ties: tuple[str, ...] = ()
    fastest: str | None = None
    fits: tuple[str, ...] = ()
    open: tuple[str, ...] = ()

    def to_json(self) -> dict:
        if self.recommended is None:  # no split fits
            return {"recommended": None, "lines": list(self.lines), "ties": list(self.ties)}
        return {
            "recommended": self.recommended,
            "fastest": self.fastest,
            "ties": list(self.ties),
            "fits": list(self.fits),
            "open": list(self.open),
            "lines": list(self.lines),
        }


def screened(v: Verdict | None) -> bool:
    """Whether a split's verdict is its probes' estimate (screened), not an interleaved comparison's."""
    return v is not None and v.details.get("screened") is True


@dataclass(frozen=True)
class Findings:
    """Everything an advice found on ``gpu``: its ``splits`` of ``effective_batch`` (largest micro-batch first), the
    probe of each, the fastest by the probes, the verdict of each other split against it (``compared``), the answer,
    the screen asked for and the one used (widened by the ``drift``), and the settings and the splits whose comparison
    failed to measure (``failed``)."""

    workload: str
    gpu: str
    effective_batch: int
    splits: tuple[str, ...]
    probes: Mapping[str, Probe]
    fastest_probe: str | None
    compared: Mapping[str, Verdict]
    answer: Answer
    screen: float = 1.5
    screen_used: float | None = None
    drift: Drift | None = None
    threshold: float | None = None
    alpha: float | None = None
    budget_minutes: float | None = None
    probe_steps: int | None = None
    failed: tuple[str, ...] = ()
    session_id: str = ""
    wall_s: float = 0.0

    def sections(self) -> dict:
        """What the advice's ``report.json`` holds besides its workload, GPU, comparisons and failed splits, in the
        order it is written (:class:`harness.results.advice.Advice`)."""
        return {
            "effective_batch": self.effective_batch,
            "splits": list(self.splits),
            "probes": {s: p.to_json() for s, p in self.probes.items()},
            "fastest_probe": self.fastest_probe,
            "answer": self.answer.to_json(),
            "threshold": self.threshold,
            "alpha": self.alpha,
            "budget_minutes": self.budget_minutes,
            "screen": self.screen,
            "screen_used": self.screen_used,
            "drift": self.drift.to_json() if self.drift else None,
            "probe_steps": self.probe_steps,
            "session_id": self.session_id,
            "wall_s": self.wall_s,
        }


def toml_lines(w: Workload, rec: str, gpu: str, note: str) -> str:
    return (
        f"# {w.name} on {gpu}: {note} (python -m harness advise)\n[batch]\neffective = {w.effective_batch}\n"
        f'decompositions = ["{rec}"]\n'
    )


def report_lines(r: Findings, w: Workload) -> list[str]:
    from harness.reporting.step_analysis import diagnosis, diagnosis_text
    from harness.results.report_row import RowCensus

    a = r.answer
    rec = a.recommended
    head = (
        f"{'split':<7} {'fits':<9} {'m x 1 ms':>9} {'est. step ms':>12} {'peak GiB':>9} "
        f"{'vs ' + (rec or '-') + ' [interval]':>34}"
        "  diagnosis (per micro-batch, from the m x 1 probe's census)"
    )
    lines = [head, "-" * len(head)]
    for s in r.splits:
        p = r.probes[s]
        fits = "yes" if p.fits else ("no (OOM)" if p.status == "oom" else p.status)
        probe_ms = f"{p.probe_ms:.1f}" if p.probe_ms else "-"
        step = f"{p.step_ms:.0f}" if p.step_ms else "-"
        peak = f"{p.peak_reserved_bytes / GIB:.2f}" if p.peak_reserved_bytes else "-"
        c = r.compared.get(s)
        if s == rec:
            vs = "recommended"
        elif c is not None and screened(c):
            vs = f"~x{c.ratio:.2f} by the probes, screened"
        elif c is not None and c.ratio and c.interval and rec == r.fastest_probe:
            vs = f"x{c.ratio:.3f} [{c.interval[0]:.3f}, {c.interval[1]:.3f}] {c.outcome}"
        elif c is not None and c.ratio:
            vs = f"x{c.ratio:.3f} vs {r.fastest_probe} {c.outcome}"
        else:
            vs = "-"
        diag = ""
        if p.census:
            m = int(s.split("x")[0])
            diag = diagnosis_text(diagnosis(RowCensus.from_json(p.census), p.probe_ms, w.with_splits(m), r.gpu))
        lines.append(f"{s:<7} {fits:<9} {probe_ms:>9} {step:>12} {peak:>9} {vs:>34}  {diag}")
    lines.append(
        f"(m x 1 ms: median step of the probe, one micro-batch per step; est. step ms: a whole m x G step from it, see "
        f"estimate_step; the nearest split is compared block-interleaved, and so is every split estimated within "
        f"x{r.screen_used or r.screen:.2f} of the fastest; the rest are screened)"
    )
    if r.drift:
        lines.append(
            f"drift check: the {r.drift.probe} probe at the start and at the end of the probe series: "
            f"{r.drift.first_ms:.1f} -> {r.drift.last_ms:.1f} ms (x{r.drift.ratio:.3f})"
        )
    lines.append("")
    lines += [f"{s} does not fit: {r.probes[s].error}" for s in r.splits if r.probes[s].status == "oom"]
    if rec:
        lines.append(f"RECOMMENDED: {rec} (effective batch {r.effective_batch} on {r.gpu})")
    lines += a.lines
    if rec:
        note = "; ".join(a.lines[:1]) or "fastest split"
        lines += ["", "pin it in the workload:", *toml_lines(w, rec, r.gpu, note).splitlines()]
    return lines


def plot(r: Findings, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    micro = [int(s.split("x")[0]) for s in r.splits]
    fig, ax = plt.subplots(figsize=(7, 4))
    ok = [(m, r.probes[s]) for m, s in zip(micro, r.splits) if r.probes[s].fits]
    ax.plot([m for m, _ in ok], [p.step_ms for _, p in ok], "o-", color="C0", label="estimated step (m x 1 probe)")
    f = r.fastest_probe
    meas = [
        (int(s.split("x")[0]), (r.probes[f].step_ms or 0.0) * c.ratio)
        for s, c in r.compared.items()
        if f and c.ratio and not screened(c)
    ]
    if meas:  # the interleaved ratios, placed on the fastest split's estimate
        ax.plot(
            [m for m, _ in meas],
            [v for _, v in meas],
            "D",
            color="C2",
            mfc="none",
            ms=9,
            label="fastest x interleaved ratio",
        )
        ax.legend(loc="upper center", fontsize=8)
    ax.set_yscale("log")
    for m, s in zip(micro, r.splits):
        if not r.probes[s].fits:
            ax.axvline(m, color="C3", ls=":", lw=1)
            ax.annotate(
                "does not fit", (m, ax.get_ylim()[1] if ok else 1), color="C3", rotation=90, va="top", fontsize=8
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("micro-batch (grad accum = effective / micro)")
    ax.set_ylabel("ms per optimizer step", color="C0")
    mem = [(m, p.peak_reserved_bytes / GIB) for m, p in ok if p.peak_reserved_bytes]
    if mem:
        ax2 = ax.twinx()
        ax2.plot([m for m, _ in mem], [g for _, g in mem], "s--", color="C1", label="peak reserved")
        ax2.set_ylabel("peak reserved GiB", color="C1")
    rec = r.answer.recommended
    ax.set_title(f"{r.workload} on {r.gpu}, effective batch {r.effective_batch}: recommended {rec or 'none'}")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
