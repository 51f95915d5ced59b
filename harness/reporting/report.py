"""Reports of a session: its data (:class:`harness.results.suite_report.ReportData`, the JSON report), Markdown and
terminal lines.

``build`` gathers everything once; the renderers only format it. What a case's numbers say about its step is read by
:mod:`harness.reporting.step_analysis`; the end of a pytest session and the baseline before/after table are
:mod:`harness.reporting.session_summary`'s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from statistics import median

from harness.files import refuse_links, write_atomic
from harness.judging import baseline as bl
from harness.judging import census_diff
from harness.judging.stats import Sample
from harness.record import PHASES, median_phases
from harness.reporting.report_head import BAD_WORKLOAD, head_lines
from harness.reporting.step_analysis import (
    diagnosis,
    diagnosis_text,
    moved_text,
    probe_moved,
    step_moved,
    where,
    where_text,
)
from harness.reporting.unread import unread
from harness.results.report_row import ReportRow, RowCensus, RowWork, Spread
from harness.results.repro import repro
from harness.results.run import Run
from harness.results.suite_report import ReportData, ReportEnv
from harness.results.verdict import Verdict

GIB = 2**30


def _rng(s: Sample, fmt: str) -> Spread | None:
    return None if not len(s) else Spread(s.median, s.min, s.max, len(s), s.cv, fmt)


def _phases(runs: list[Run]) -> dict | None:
    """Median over runs of each run's median steady-state phase time (ms per optimizer step)."""
    return median_phases([r.phase_medians() for r in runs])


def _launch_us(probes: list[dict | None]) -> float | None:
    """Median ``launch_us`` over the runs' ``host_probe`` records that have one."""
    v = [p["launch_us"] for p in probes if p and p.get("launch_us")]
    return median(v) if v else None


def _gpu_busy(runs: list[Run]) -> float | None:
    util = [g["util_pct"] for r in runs for g in (r.gpu_samples or ())]
    return median(util) / 100.0 if util else None


def _baseline_sample(b, d: str, metric: str) -> Sample:
    """The stored baseline's values of ``metric`` for decomposition ``d``; empty without a stored baseline."""
    return Sample(tuple(b.values(d, metric))) if isinstance(b, bl.Baseline) else Sample(())


def _row(judge, w: str, d: str, v) -> ReportRow:
    """One case's row of report.json: its split, its runs and their measurements, the baseline's, and its runtime
    verdict ``v`` (None when none was given)."""
    runs = judge.runs(w, d, ok_only=False)
    ok = [r for r in runs if r.ok]
    wl = judge.workloads[w]
    dec = wl.decomposition(d)
    b = judge.baselines.get(w)
    kern = [r.profile["kernel_ms_per_step"] for r in ok if r.profile]
    return ReportRow(
        workload=w,
        decomposition=d,
        micro_batch=dec.micro_batch,
        grad_accum=dec.grad_accum,
        world_size=dec.world_size,
        effective_batch=wl.effective_batch,
        steps=wl.train.max_steps,
        runs=len(runs),
        ok=len(ok),
        failures=tuple(sorted({r.status for r in runs if not r.ok})),
        step_time_ms=_rng(judge.metric(w, d, "step_time_median_ms"), ".1f"),
        train_runtime_s=_rng(judge.metric(w, d, "train_runtime_s"), ".2f"),
        peak_reserved_gib=_rng(Sample(tuple(x / GIB for x in judge.peaks(w, d))), ".2f"),
        tokens_per_s=_rng(judge.metric(w, d, "tokens_per_s"), ".0f"),
        phases_ms=_phases(ok),
        gpu_busy=_gpu_busy(ok),
        kernel_ms_per_step=median(kern) if kern else None,
        host_launch_us=_launch_us([r.host_probe for r in ok]),
        baseline_host_launch_us=_launch_us(b.values(d, "host_probe")) if isinstance(b, bl.Baseline) else None,
        baseline_step_time_ms=_rng(_baseline_sample(b, d, "step_time_median_ms"), ".1f"),
        baseline_train_runtime_s=_rng(_baseline_sample(b, d, "train_runtime_s"), ".2f"),
        baseline_phases_ms=b.phases(d) if isinstance(b, bl.Baseline) else None,
        verdict=v.outcome if v else None,
        ratio=(v.details.get("ratio") if v else None),
        ratio_lo=(v.details.get("lo") if v else None),
        ratio_hi=(v.details.get("hi") if v else None),
        step_traces_ms=tuple(r.step_times_ms for r in ok),
        warmup_steps=wl.measure.warmup_steps,
    )


def _with_readings(row: ReportRow, judge, gpu_name: str) -> ReportRow:
    """The row with what its numbers say: where its step moved (one line, for report.json readers such as the
    regression-issue script), its work verdict, and its census with the diagnosis drawn from it."""
    cs = judge.censuses(row.workload, row.decomposition)
    wv = judge.work(row.workload, row.decomposition)
    census = RowCensus.from_json(cs[0]) if cs else None
    step = row.step_time_ms or row.baseline_step_time_ms
    step_ms = step.median if step else None
    return replace(
        row,
        where=where_text(row) if row.phases_ms and row.baseline_phases_ms else None,
        work=RowWork(wv.outcome, tuple(wv.details.get("lines", []))) if wv is not None else None,
        diagnosis=diagnosis(census, step_ms, judge.workloads[row.workload], gpu_name) if census else None,
        census=census,
    )


def _listed(kind: str, case: str, outcome: str, message: str, gpu: str) -> Verdict:
    """A verdict as report.json lists it, with the command that reproduces it on a runner (null where none can be
    made)."""
    made = repro(kind, case, gpu)
    return Verdict(outcome, message, {} if made is not None else {"repro": None}, kind=kind, case=case, repro=made)


def build(
    judge,
    session_id: str = "",
    command: str = "",
    inject_slowdown: float = 0.0,
    notes: tuple[str, ...] = (),
    recorded: tuple[str, ...] | None = None,
    broken: Mapping[str, str] | None = None,
) -> ReportData:
    """Everything a report shows (this is report.json): the judge's records and verdicts, and what ran;
    ``notes``: what the reader of the records skipped (a torn line of runs.jsonl), said at the top of the report, as is
    ``data_unread``, the workloads whose text does not reach the model;
    ``recorded``: in a session of --update-baselines, the baselines it wrote (there "no baseline" is no news: those
    skips are left out); ``broken``: the workloads the session could not run, by name, with their one line: one failed
    verdict each (kind ``bad-workload``, the workload's name as its case), first, as the regression-issue script and
    the results store read the verdicts."""
    verdicts = {v.case: v for v in judge.runtime.values()}
    rows = [_row(judge, w, d, verdicts.get(f"{w}-{d}")) for w, d in judge.cases]
    envs = [ReportEnv.from_json(r.env) for r in judge.records if r.env]
    gpu_name = next((e.gpu for e in envs if e.gpu), judge.gpu)  # the full name: its peak
    first = next((r for r in judge.records if r.env), None)
    base_versions = {w: b.env.get("versions", {}) for w, b in judge.baselines.items() if isinstance(b, bl.Baseline)}
    return ReportData(
        gpu=judge.gpu,
        session_id=session_id,
        command=command,
        inject_slowdown=inject_slowdown,
        rows=tuple(_with_readings(row, judge, gpu_name) for row in rows),
        incomplete=judge.incomplete,
        notes=notes,
        data_unread=tuple(unread(judge)),
        verdicts=tuple(
            _listed(BAD_WORKLOAD, name, "fail", f"not run: {line}", judge.gpu) for name, line in (broken or {}).items()
        )
        + tuple(
            _listed(v.kind, v.case, v.outcome, v.message, judge.gpu)
            for v in judge.all()
            if not (recorded is not None and v.details.get("missing_baseline"))
        ),
        recorded=recorded,
        env=envs[0] if envs else ReportEnv(),
        versions=(first.versions if first is not None else None) or {},
        baseline_versions=base_versions,
    )


def _delta(row: ReportRow) -> str:
    if row.ratio is None:
        return "-"
    lo, hi = row.ratio_lo, row.ratio_hi
    ci = f" [{(lo - 1) * 100:+.1f}, {(hi - 1) * 100:+.1f}]" if lo == lo and hi == hi else ""
    return f"{(row.ratio - 1) * 100:+.1f}%{ci}"


def _fmt(s: Spread | None) -> str:
    return s.text() if s else "-"


def version_diff(data: ReportData) -> list[str]:
    out = []
    for w, base in data.baseline_versions.items():
        for pkg, ver in sorted(data.versions.items()):
            if base.get(pkg) != ver:
                out.append(f"{pkg} {base.get(pkg)} -> {ver} (vs baseline of {w})")
    return out


def terminal_lines(data: ReportData) -> list[str]:
    head = (
        f"{'case':<26} {'runs':>5} {'median step ms [range]':>26} {'train_runtime s [range]':>24} "
        f"{'Δ vs baseline [CI]':>22}  verdict"
    )
    lines = ([data.incomplete] if data.incomplete else []) + [f"note: {n}" for n in data.notes]
    lines += [f"data: {u['line']}" for u in data.data_unread]
    lines += [*head_lines(data), "", head, "-" * len(head)]
    for r in data.rows:
        runs = f"{r.ok}/{r.runs}"
        lines.append(
            f"{r.case:<26} {runs:>5} "
            f"{_fmt(r.step_time_ms):>26} {_fmt(r.train_runtime_s):>24} {_delta(r):>22}  {r.verdict or '-'}"
            + (f" ({', '.join(r.failures)})" if r.failures else "")
        )
    moved = [r for r in data.rows if r.verdict in ("regression", "inconclusive", "improvement") and where(r)]
    lines += [f"  where {r.case} moved vs baseline (medians): {where_text(r, 3)}" for r in moved]
    lines += [f"  work {r.case}: {diagnosis_text(r.diagnosis)}" for r in data.rows if r.diagnosis]
    lines.append("")
    skips: dict[str, list[str]] = {}
    for v in data.verdicts:
        if v.outcome == "skip":
            skips.setdefault(v.message, []).append(f"{v.kind} {v.case}")
        elif v.kind != "runtime" or v.outcome != "pass":
            lines.append(f"{v.kind:<12} {v.case:<28} {v.outcome:<12} {v.message}")
    for msg, which in skips.items():
        lines.append(
            f"{'skipped':<12} {len(which)} check(s) ({', '.join(sorted({w.split()[0] for w in which}))}): {msg}"
        )
    diff = version_diff(data)
    vers = ", ".join(f"{k} {v}" for k, v in data.versions.items())
    lines += ["", f"versions: {vers}" if vers else "versions: (no successful run)"]
    lines += [f"  differs from baseline: {d}" for d in diff] or (
        ["  same as the baseline"] if data.baseline_versions else []
    )
    return lines


def _case_table(rows: tuple[ReportRow, ...]) -> list[str]:
    """The Markdown table of the cases: split, runs, times against the baseline, verdict, memory, phases."""
    out = [
        "| workload | micro × GA | eff. batch | runs | train_runtime s, median [range] | step ms, median [range] "
        "| Δ step vs baseline [CI] | verdict | peak reserved GiB | tokens/s "
        "| phases ms/step: data / fwd / bwd / opt / other | GPU busy |",
        "|---|---|---:|---:|---|---|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        ph = r.phases_ms
        phases = " / ".join(f"{ph[p]:.1f}" for p in PHASES) if ph else "-"
        busy = f"{r.gpu_busy:.0%}" if r.gpu_busy is not None else "-"
        tps = f"{r.tokens_per_s.median:.0f}" if r.tokens_per_s else "-"
        split = f"{r.micro_batch} × {r.grad_accum}{'' if r.world_size == 1 else ' × ' + str(r.world_size)}"
        out.append(
            f"| {r.workload} | {split} | {r.effective_batch} | "
            f"{r.ok}/{r.runs} | {_fmt(r.train_runtime_s)} | {_fmt(r.step_time_ms)} | {_delta(r)} "
            f"| {r.verdict or '-'} | {_fmt(r.peak_reserved_gib)} | {tps} | {phases} | {busy} |"
        )
    return out


def _where_table(rows: tuple[ReportRow, ...]) -> list[str]:
    """The Markdown table of where the step time moved, for the cases with phase timings on both sides."""
    moved = [r for r in rows if where(r)]
    if not moved:
        return []
    out = [
        "",
        "### Where the step time moved against the baseline (ms per optimizer step, medians; descriptive, not a test)",
        "",
        "| case | step | " + " | ".join(PHASES) + " | host launch probe |",
        "|---|---:|" + "---:|" * (len(PHASES) + 1),
    ]
    for r in moved:
        d = {p: moved_text(x, y) for p, x, y in where(r)}
        step, probe = step_moved(r), probe_moved(r)
        out.append(
            f"| {r.case} | {'-' if step is None else f'{step:+.1f}'} | "
            + " | ".join(d.get(p, "-") for p in PHASES)
            + f" | {'-' if probe is None else f'{probe:+.0%}'} |"
        )
    return out


def _num(x) -> str:
    return "-" if x is None else census_diff.num(x)


def _census_table(rows: tuple[ReportRow, ...]) -> list[str]:
    """The Markdown table of the work per step, for the cases with a census."""
    counted = [(r, r.census) for r in rows if r.census]
    if not counted:
        return []
    out = [
        "",
        "### Work per optimizer step (census: counts that do not depend on the machine's speed)",
        "",
        "| case | aten ops | kernels | kernel ms | Python calls | attention | work vs baseline | diagnosis |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for r, c in counted:
        km = "-" if c.kernel_ms is None else f"{c.kernel_ms:.1f}"
        work = f"{r.work.outcome}: {'; '.join(r.work.lines) or 'same'}" if r.work else "-: same"
        out.append(
            f"| {r.case} | {_num(c.ops)} | {_num(c.kernels)} | {km} | {_num(c.python_calls)} | "
            f"{c.attention_backend} | {work} | {diagnosis_text(r.diagnosis) if r.diagnosis else ''} |"
        )
    return out


def _verdict_lines(verdicts: tuple[Verdict, ...]) -> list[str]:
    """The Markdown list of verdicts: regressions and failures, the skips once per reason, the orderings and
    equivalences that held."""
    bad = [v for v in verdicts if v.outcome not in ("pass", "tie", "skip")]
    out = ["", "### Verdicts", ""]
    judged = [v for v in verdicts if v.outcome != "skip"]
    out += [
        f"- **{v.outcome}** {v.kind} `{v.case}`: {v.message}"
        + (f"\n  - reproduce on a runner: `{v.repro}`" if v.repro else "")
        for v in bad
    ] or (["- no regression or failure among the judged checks"] if judged else [])
    for msg in dict.fromkeys(v.message for v in verdicts if v.outcome == "skip"):
        n = sum(1 for v in verdicts if v.outcome == "skip" and v.message == msg)
        out.append(f"- skipped ({n} check{'s' if n > 1 else ''}): {msg}")
    other = [v for v in verdicts if v.kind in ("ordering", "equivalence") and v.outcome in ("pass", "tie")]
    out += [f"- {v.outcome} {v.kind} `{v.case}`: {v.message}" for v in other]
    return out


def _software_lines(data: ReportData, gpu: str) -> list[str]:
    """The Markdown section on the machine and the library versions, with how they differ from the baseline's."""
    env = data.env
    hw = (
        f"- GPU: {gpu} × {env.gpu_count}, driver {env.driver}, CUDA {env.cuda}, attention {env.attn_implementation}"
        if env.gpu
        else f"- no GPU (CPU run), attention {env.attn_implementation}"
    )
    out = [
        "",
        "### Software",
        "",
        hw,
        f"- host CPU: {env.cpu}",
        "- " + ", ".join(f"{k} {v}" for k, v in data.versions.items()),
    ]
    return out + [f"- differs from baseline: {d}" for d in version_diff(data)]


def markdown(data: ReportData) -> str:
    gpu = data.env.gpu or "CPU"
    out = [f"## LoRA fine-tuning performance: {gpu} ({data.gpu})", ""]
    verdict, *rest = head_lines(data)
    out += [f"**{verdict}**", "", *[f"- {ln}" for ln in rest], ""]
    if data.incomplete:
        out += [f"**{data.incomplete}**", ""]
    out += [x for n in data.notes for x in (f"**note:** {n}", "")]
    out += [x for u in data.data_unread for x in (f"**data:** {u['line']}", "")]
    if data.inject_slowdown:
        out += [f"**Injected slowdown {data.inject_slowdown:.0%}** (sensitivity self-check)", ""]
    out += _case_table(data.rows) if data.rows else []  # none where every workload was broken
    out += _where_table(data.rows)
    out += _census_table(data.rows)
    out += _verdict_lines(data.verdicts)
    out += _software_lines(data, gpu)
    out += ["", f"Command: `{data.command}`", ""]
    return "\n".join(out)


# What a report writes into its results dir: report.json and report.md here, the plots of harness.reporting.plots
FILES = ("report.json", "report.md")
PLOTS = ("step_times.png", "phases.png", "step_traces.png")


def write(data: ReportData, results_dir: str | Path) -> list[Path]:
    """report.json and report.md in the results dir (atomic); the Markdown also goes to $GITHUB_STEP_SUMMARY. Every
    file of the report, its plots included, is checked before the first is written (:func:`refuse_links`)."""
    d = Path(results_dir)
    refuse_links(*(d / name for name in (*FILES, *PLOTS)))
    md = markdown(data)
    paths = [d / name for name in FILES]
    write_atomic(paths[0], json.dumps(data.to_json(), indent=1, default=str))
    write_atomic(paths[1], md)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as fh:
            fh.write(md + "\n")
    return paths
