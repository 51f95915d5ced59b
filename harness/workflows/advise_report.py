"""What ``python -m harness advise`` shows: the terminal table and report lines, the workload TOML lines that pin
the recommended split, and the plot of step time and peak memory against the micro-batch.

Pure formatting of an advice's report dict (:func:`harness.workflows.advise.advise` builds it): nothing here runs or
measures.
"""

from __future__ import annotations

from pathlib import Path

from harness.spec import Workload

GIB = 1024**3


def toml_lines(w: Workload, rec: str, gpu: str, note: str) -> str:
    return (
        f"# {w.name} on {gpu}: {note} (python -m harness advise)\n[batch]\neffective = {w.effective_batch}\n"
        f'decompositions = ["{rec}"]\n'
    )


def report_lines(r: dict, w: Workload) -> list[str]:
    from harness.reporting.step_analysis import diagnosis, diagnosis_text

    a = r["answer"]
    rec = a.get("recommended")
    head = (
        f"{'split':<7} {'fits':<9} {'m x 1 ms':>9} {'est. step ms':>12} {'peak GiB':>9} "
        f"{'vs ' + (rec or '-') + ' [interval]':>34}"
        "  diagnosis (per micro-batch, from the m x 1 probe's census)"
    )
    lines = [head, "-" * len(head)]
    for s in r["splits"]:
        p = r["probes"][s]
        fits = "yes" if p["status"] == "ok" else ("no (OOM)" if p["status"] == "oom" else p["status"])
        probe_ms = f"{p['probe_ms']:.1f}" if p.get("probe_ms") else "-"
        step = f"{p['step_ms']:.0f}" if p.get("step_ms") else "-"
        peak = f"{p['peak_reserved_bytes'] / GIB:.2f}" if p.get("peak_reserved_bytes") else "-"
        c = r["compared"].get(s)
        if s == rec:
            vs = "recommended"
        elif c and c.get("screened"):
            vs = f"~x{c['ratio']:.2f} by the probes, screened"
        elif c and c.get("ratio") and rec == r["fastest_probe"]:
            vs = f"x{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] {c['outcome']}"
        elif c and c.get("ratio"):
            vs = f"x{c['ratio']:.3f} vs {r['fastest_probe']} {c['outcome']}"
        else:
            vs = "-"
        diag = ""
        if p.get("census"):
            m = int(s.split("x")[0])
            diag = diagnosis_text(diagnosis(p["census"], p.get("probe_ms"), w.with_splits(m), r["gpu"]))
        lines.append(f"{s:<7} {fits:<9} {probe_ms:>9} {step:>12} {peak:>9} {vs:>34}  {diag}")
    lines.append(
        f"(m x 1 ms: median step of the probe, one micro-batch per step; est. step ms: a whole m x G step from it, see "
        f"estimate_step; the nearest split is compared block-interleaved, and so is every split estimated within "
        f"x{r.get('screen_used') or r.get('screen', 1.5):.2f} of the fastest; the rest are screened)"
    )
    if r.get("drift"):
        lines.append(
            f"drift check: the {r['drift']['probe']} probe at the start and at the end of the probe series: "
            f"{r['drift']['first_ms']:.1f} -> {r['drift']['last_ms']:.1f} ms (x{r['drift']['ratio']:.3f})"
        )
    lines.append("")
    for s in r["splits"]:
        if r["probes"][s]["status"] == "oom":
            lines.append(f"{s} does not fit: {r['probes'][s]['error']}")
    if rec:
        lines.append(f"RECOMMENDED: {rec} (effective batch {r['effective_batch']} on {r['gpu']})")
    lines += a["lines"]
    if rec:
        note = "; ".join(a["lines"][:1]) or "fastest split"
        lines += ["", "pin it in the workload:", *toml_lines(w, rec, r["gpu"], note).splitlines()]
    return lines


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    micro = [int(s.split("x")[0]) for s in r["splits"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    ok = [(m, r["probes"][s]) for m, s in zip(micro, r["splits"]) if r["probes"][s]["status"] == "ok"]
    ax.plot([m for m, _ in ok], [p["step_ms"] for _, p in ok], "o-", color="C0", label="estimated step (m x 1 probe)")
    f = r.get("fastest_probe")
    meas = [
        (int(s.split("x")[0]), r["probes"][f]["step_ms"] * c["ratio"])
        for s, c in r["compared"].items()
        if f and c.get("ratio") and not c.get("screened")
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
    for m, s in zip(micro, r["splits"]):
        if r["probes"][s]["status"] != "ok":
            ax.axvline(m, color="C3", ls=":", lw=1)
            ax.annotate(
                "does not fit", (m, ax.get_ylim()[1] if ok else 1), color="C3", rotation=90, va="top", fontsize=8
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("micro-batch (grad accum = effective / micro)")
    ax.set_ylabel("ms per optimizer step", color="C0")
    mem = [(m, p["peak_reserved_bytes"] / GIB) for m, p in ok if p.get("peak_reserved_bytes")]
    if mem:
        ax2 = ax.twinx()
        ax2.plot([m for m, _ in mem], [g for _, g in mem], "s--", color="C1", label="peak reserved")
        ax2.set_ylabel("peak reserved GiB", color="C1")
    rec = r["answer"].get("recommended")
    ax.set_title(f"{r['workload']} on {r['gpu']}, effective batch {r['effective_batch']}: recommended {rec or 'none'}")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
