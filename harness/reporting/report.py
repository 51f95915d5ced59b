"""Reports of a session: a data dict (the JSON report), Markdown, terminal lines and the baseline before/after table.

``build`` gathers everything once; the renderers only format it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from statistics import median

from harness.files import write_atomic
from harness.judging import baseline as bl
from harness.judging import census_diff, flops, peak_flops
from harness.judging.stats import Sample
from harness.record import PHASES, median_phases, run_phases
from harness.reporting.report_head import head_lines
from harness.results import formats

GIB = 2**30


def _rng(s: Sample, fmt: str) -> dict | None:
    return None if not len(s) else {"median": s.median, "min": s.min, "max": s.max, "n": len(s), "cv": s.cv, "fmt": fmt}


def _phases(runs: list[dict]) -> dict | None:
    """Median over runs of each run's median steady-state phase time (ms per optimizer step)."""
    return median_phases([run_phases(r) for r in runs])


def where(row: dict) -> list[tuple[str, float, float]]:
    """Where the step time moved against the baseline: (phase, change in ms, relative change) per phase,
    largest absolute change first; empty when this session or the baseline has no phase timings.
    Descriptive (medians of medians), not a test: it points at the phase to look at, the verdict says whether it matters."""
    cur, base = row.get("phases_ms"), row.get("baseline_phases_ms")
    if not cur or not base:
        return []
    out = [(p, cur[p] - base[p], (cur[p] / base[p] - 1) if base[p] else float("nan")) for p in PHASES if p in cur and p in base]
    return sorted(out, key=lambda x: -abs(x[1]))


def _step_moved(row: dict) -> float | None:
    """Median step time minus the baseline's (ms): the total that :func:`where` splits into phases."""
    cur, base = row.get("step_time_ms"), row.get("baseline_step_time_ms")
    return cur["median"] - base["median"] if cur and base else None


def _moved(d: float, r: float, unit: str = "") -> str:
    """One phase's change: ``+30.0 ms (+50%)``, without the percentage when the baseline phase was 0."""
    return f"{d:+.1f}{unit}" + (f" ({r:+.0%})" if r == r else "")


def probe_moved(row: dict) -> float | None:
    """Relative change of the host probe's launch time (``host_probe.launch_us``, medians) against the
    baseline's runs: +0.12 means this machine's host issues tiny ops 12% slower. None without both.
    Descriptive: a step time that moved with it points at the machine rather than the code."""
    cur, base = row.get("host_launch_us"), row.get("baseline_host_launch_us")
    return cur / base - 1 if cur and base else None


def _launch_us(probes: list[dict | None]) -> float | None:
    """Median ``launch_us`` over the runs' ``host_probe`` records that have one."""
    v = [p["launch_us"] for p in probes if p and p.get("launch_us")]
    return median(v) if v else None


def _where_text(row: dict, top: int | None = None) -> str:
    step = _step_moved(row)
    head = f"median step {step:+.1f} ms; " if step is not None else ""
    probe = probe_moved(row)
    tail = f"; host launch probe {probe:+.0%} vs baseline" if probe is not None else ""
    return head + ", ".join(f"{p} {_moved(d, r, ' ms')}" for p, d, r in where(row)[:top]) + tail


def diagnosis(census: dict, step_ms: float | None, workload, gpu: str) -> dict:
    """What limits the step, from a census and the median step time: GPU busy fraction (kernel time / step
    time), kernel launches per sample, host time per launch (step time / launches), host-bound (GPU busy
    below 50%) or GPU-bound (80% or more), and MFU from LoRA-correct FLOPs against ``gpu``'s peak (its full name, or a
    short name of one model: :mod:`harness.judging.peak_flops`; none for a GPU the table does not know)."""
    out: dict = {"step_ms": step_ms, "kernel_ms": census.get("kernel_ms"), "kernels": census.get("kernels"), "ops": census.get("ops")}
    samples = workload.effective_batch
    if census.get("kernels"):
        out["launches_per_sample"] = census["kernels"] / samples
    if step_ms and census.get("kernel_ms"):
        busy = census["kernel_ms"] / step_ms
        out.update(gpu_busy=busy, host_us_per_launch=step_ms * 1000 / census["kernels"],
                   bound="host-bound" if busy < 0.5 else "GPU-bound" if busy >= 0.8 else "mixed")
    try:
        lo = workload.lora
        fpt = flops.lora_flops_per_token(workload.architecture()["config"], lo.r, lo.target_modules, workload.train.gradient_checkpointing,
                                               workload.train.max_length)
        out["flops_per_step"] = fpt * samples * workload.train.max_length
        known = peak_flops.peak(gpu)
        out["peak_flops_of"] = known[0] if known else None
        if step_ms and known:
            out["mfu"] = flops.mfu(out["flops_per_step"], step_ms / 1000, known[1])
    except (KeyError, ValueError, TypeError):
        pass
    return out


def diagnosis_text(d: dict) -> str:
    parts = []
    if d.get("gpu_busy") is not None:
        parts.append(f"GPU busy {d['gpu_busy']:.0%} ({d['kernel_ms']:.0f} ms of kernels in a {d['step_ms']:.0f} ms step): {d['bound']}")
    if d.get("launches_per_sample") is not None:
        parts.append(f"{d['launches_per_sample']:,.0f} kernel launches per sample")
    if d.get("host_us_per_launch") is not None:
        parts.append(f"{d['host_us_per_launch']:.1f} us of step per launch")
    if d.get("ops"):
        parts.append(f"{d['ops']:,.0f} aten ops per step")
    if d.get("mfu") is not None:
        parts.append(f"MFU {d['mfu']:.1%} (LoRA-correct FLOPs)")
    elif d.get("flops_per_step") and d.get("gpu_busy") is not None and d.get("peak_flops_of") is None:  # a GPU the table lacks
        parts.append("MFU unknown (no peak FLOPS known for this GPU)")
    return "; ".join(parts)


def _gpu_busy(runs: list[dict]) -> float | None:
    util = [g["util_pct"] for r in runs for g in (r.get("gpu_samples") or [])]
    return median(util) / 100.0 if util else None


def build(judge, session_id: str = "", command: str = "", inject_slowdown: float = 0.0, notes: tuple[str, ...] = (),
          recorded: tuple[str, ...] | None = None) -> dict:
    """Everything a report shows, as plain data (this is report.json): the judge's records and verdicts, and what ran;
    ``notes``: what the reader of the records skipped (a torn line of runs.jsonl), said at the top of the report;
    ``recorded``: in a session of --update-baselines, the baselines it wrote (there "no baseline" is no news: those skips are left out)."""
    rows = []
    verdicts = {v.case: v for v in judge.runtime.values()}
    for w, d in judge.cases:
        runs = judge.runs(w, d, ok_only=False)
        ok = [r for r in runs if r["status"] == "ok"]
        wl = judge.workloads[w]
        dec = wl.decomposition(d)
        b = judge.baselines.get(w)
        base_step = Sample(tuple(b.values(d, "step_time_median_ms"))) if isinstance(b, bl.Baseline) else Sample(())
        base_rt = Sample(tuple(b.values(d, "train_runtime_s"))) if isinstance(b, bl.Baseline) else Sample(())
        v = verdicts.get(f"{w}-{d}")
        kern = [r["profile"]["kernel_ms_per_step"] for r in ok if r.get("profile")]
        rows.append({
            "workload": w, "decomposition": d, "micro_batch": dec.micro_batch, "grad_accum": dec.grad_accum,
            "world_size": dec.world_size, "effective_batch": wl.effective_batch, "steps": wl.train.max_steps,
            "runs": len(runs), "ok": len(ok), "failures": sorted({r["status"] for r in runs if r["status"] != "ok"}),
            "step_time_ms": _rng(judge.metric(w, d, "step_time_median_ms"), ".1f"),
            "train_runtime_s": _rng(judge.metric(w, d, "train_runtime_s"), ".2f"),
            "peak_reserved_gib": _rng(Sample(tuple(x / GIB for x in judge.metric(w, d, "peak_reserved_bytes").values)), ".2f"),
            "tokens_per_s": _rng(judge.metric(w, d, "tokens_per_s"), ".0f"),
            "phases_ms": _phases(ok),
            "gpu_busy": _gpu_busy(ok),
            "kernel_ms_per_step": median(kern) if kern else None,
            "host_launch_us": _launch_us([r.get("host_probe") for r in ok]),
            "baseline_host_launch_us": _launch_us(b.values(d, "host_probe")) if isinstance(b, bl.Baseline) else None,
            "baseline_step_time_ms": _rng(base_step, ".1f"), "baseline_train_runtime_s": _rng(base_rt, ".2f"),
            "baseline_phases_ms": b.phases(d) if isinstance(b, bl.Baseline) else None,
            "verdict": v.outcome if v else None, "ratio": (v.details.get("ratio") if v else None),
            "ratio_lo": (v.details.get("lo") if v else None), "ratio_hi": (v.details.get("hi") if v else None),
            "step_traces_ms": [r["step_times_ms"] for r in ok], "warmup_steps": wl.measure.warmup_steps,
        })
    gpu_name = next((r["env"]["gpu"] for r in judge.records if (r.get("env") or {}).get("gpu")), judge.gpu)  # the full name: its peak
    for row in rows:  # the phase split as one line, for report.json readers (the regression-issue script)
        row["where"] = _where_text(row) if row["phases_ms"] and row["baseline_phases_ms"] else None
        cs = judge.censuses(row["workload"], row["decomposition"])
        wv = judge.work(row["workload"], row["decomposition"])
        row["work"] = {"outcome": wv.outcome, "lines": wv.details.get("lines", [])} if wv is not None else None
        if cs:
            step = (row["step_time_ms"] or row["baseline_step_time_ms"] or {}).get("median")
            row["diagnosis"] = diagnosis(cs[0], step, judge.workloads[row["workload"]], gpu_name)
            row["census"] = {k: cs[0].get(k) for k in ("ops", "kernels", "kernel_ms", "cpu_op_ms", "python_calls", "syncs", "alloc",
                                                         "attention_backend", "steps")}
        else:
            row["diagnosis"] = row["census"] = None
    env = next((r.get("env") for r in judge.records if r.get("env")), {}) or {}
    base_versions = {w: b.env.get("versions", {}) for w, b in judge.baselines.items() if isinstance(b, bl.Baseline)}
    return {
        "gpu": judge.gpu, "session_id": session_id, "command": command,
        "inject_slowdown": inject_slowdown, "rows": rows, "incomplete": judge.incomplete, "notes": list(notes),
        "verdicts": [{"kind": v.kind, "case": v.case, "outcome": v.outcome, "message": v.message} for v in judge.all()
                     if not (recorded is not None and v.details.get("missing_baseline"))],
        "recorded": None if recorded is None else list(recorded),
        "env": {k: env.get(k) for k in ("gpu", "gpu_count", "driver", "cuda", "cpu", "hostname", "attn_implementation", "gpu_clocks")},
        "versions": env.get("versions", {}), "baseline_versions": base_versions,
    }


def _fmt(r: dict | None, unit: str = "") -> str:
    if not r:
        return "-"
    f = r["fmt"]
    return f"{r['median']:{f}}{unit} [{r['min']:{f}}-{r['max']:{f}}]" if r["n"] > 1 else f"{r['median']:{f}}{unit}"


def _delta(row: dict) -> str:
    if row["ratio"] is None:
        return "-"
    lo, hi = row["ratio_lo"], row["ratio_hi"]
    ci = f" [{(lo - 1) * 100:+.1f}, {(hi - 1) * 100:+.1f}]" if lo == lo and hi == hi else ""
    return f"{(row['ratio'] - 1) * 100:+.1f}%{ci}"


def version_diff(data: dict) -> list[str]:
    out = []
    for w, base in data["baseline_versions"].items():
        for pkg, ver in sorted(data["versions"].items()):
            if base.get(pkg) != ver:
                out.append(f"{pkg} {base.get(pkg)} -> {ver} (vs baseline of {w})")
    return out


def terminal_lines(data: dict) -> list[str]:
    head = f"{'case':<26} {'runs':>5} {'median step ms [range]':>26} {'train_runtime s [range]':>24} {'Δ vs baseline [CI]':>22}  verdict"
    lines = ([data["incomplete"]] if data.get("incomplete") else []) + [f"note: {n}" for n in data.get("notes") or []]
    lines += [*head_lines(data), "", head, "-" * len(head)]
    for r in data["rows"]:
        runs = f"{r['ok']}/{r['runs']}"
        lines.append(f"{r['workload'] + '-' + r['decomposition']:<26} {runs:>5} {_fmt(r['step_time_ms']):>26} {_fmt(r['train_runtime_s']):>24} {_delta(r):>22}  {r['verdict'] or '-'}"
                     + (f" ({', '.join(r['failures'])})" if r["failures"] else ""))
    moved = [r for r in data["rows"] if r["verdict"] in ("regression", "inconclusive", "improvement") and where(r)]
    lines += [f"  where {r['workload']}-{r['decomposition']} moved vs baseline (medians): {_where_text(r, 3)}" for r in moved]
    lines += [f"  work {r['workload']}-{r['decomposition']}: {diagnosis_text(r['diagnosis'])}" for r in data["rows"] if r.get("diagnosis")]
    lines.append("")
    skips: dict[str, list[str]] = {}
    for v in data["verdicts"]:
        if v["outcome"] == "skip":
            skips.setdefault(v["message"], []).append(f"{v['kind']} {v['case']}")
        elif v["kind"] != "runtime" or v["outcome"] != "pass":
            lines.append(f"{v['kind']:<12} {v['case']:<28} {v['outcome']:<12} {v['message']}")
    for msg, which in skips.items():
        lines.append(f"{'skipped':<12} {len(which)} check(s) ({', '.join(sorted({w.split()[0] for w in which}))}): {msg}")
    diff = version_diff(data)
    vers = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    lines += ["", f"versions: {vers}" if vers else "versions: (no successful run)"]
    lines += [f"  differs from baseline: {d}" for d in diff] or (["  same as the baseline"] if data["baseline_versions"] else [])
    return lines


def markdown(data: dict) -> str:
    env = data["env"]
    gpu = env.get("gpu") or "CPU"
    out = [f"## LoRA fine-tuning performance: {gpu} ({data['gpu']})", ""]
    verdict, *rest = head_lines(data)
    out += [f"**{verdict}**", "", *[f"- {ln}" for ln in rest], ""]
    if data.get("incomplete"):
        out += [f"**{data['incomplete']}**", ""]
    out += [x for n in data.get("notes") or [] for x in (f"**note:** {n}", "")]
    if data["inject_slowdown"]:
        out += [f"**Injected slowdown {data['inject_slowdown']:.0%}** (sensitivity self-check)", ""]
    out += ["| workload | micro × GA | eff. batch | runs | train_runtime s, median [range] | step ms, median [range] | Δ step vs baseline [CI] | verdict | peak reserved GiB | tokens/s | phases ms/step: data / fwd / bwd / opt / other | GPU busy |",
            "|---|---|---:|---:|---|---|---|---|---:|---:|---|---:|"]
    for r in data["rows"]:
        ph = r["phases_ms"]
        phases = " / ".join(f"{ph[p]:.1f}" for p in PHASES) if ph else "-"
        busy = f"{r['gpu_busy']:.0%}" if r["gpu_busy"] is not None else "-"
        mem = _fmt(r["peak_reserved_gib"]) if r["peak_reserved_gib"] else "-"
        tps = f"{r['tokens_per_s']['median']:.0f}" if r["tokens_per_s"] else "-"
        out.append(f"| {r['workload']} | {r['micro_batch']} × {r['grad_accum']}{'' if r['world_size'] == 1 else ' × ' + str(r['world_size'])} | {r['effective_batch']} | "
                   f"{r['ok']}/{r['runs']} | {_fmt(r['train_runtime_s'])} | {_fmt(r['step_time_ms'])} | {_delta(r)} | {r['verdict'] or '-'} | {mem} | {tps} | {phases} | {busy} |")
    moved = [r for r in data["rows"] if where(r)]
    if moved:
        out += ["", "### Where the step time moved against the baseline (ms per optimizer step, medians; descriptive, not a test)", "",
                "| case | step | " + " | ".join(PHASES) + " | host launch probe |", "|---|---:|" + "---:|" * (len(PHASES) + 1)]
        for r in moved:
            d = {p: _moved(x, y) for p, x, y in where(r)}
            step, probe = _step_moved(r), probe_moved(r)
            out.append(f"| {r['workload']}-{r['decomposition']} | {'-' if step is None else f'{step:+.1f}'} | " + " | ".join(d.get(p, "-") for p in PHASES)
                       + f" | {'-' if probe is None else f'{probe:+.0%}'} |")
    counted = [r for r in data["rows"] if r.get("census")]
    if counted:
        out += ["", "### Work per optimizer step (census: counts that do not depend on the machine's speed)", "",
                "| case | aten ops | kernels | kernel ms | Python calls | attention | work vs baseline | diagnosis |", "|---|---:|---:|---:|---:|---|---|---|"]
        for r in counted:
            c, w = r["census"], r.get("work") or {}

            def n(x):
                return "-" if x is None else census_diff.num(x)
            km = "-" if c.get("kernel_ms") is None else f"{c['kernel_ms']:.1f}"
            out.append(f"| {r['workload']}-{r['decomposition']} | {n(c.get('ops'))} | {n(c.get('kernels'))} | {km} | {n(c.get('python_calls'))} | "
                       f"{c.get('attention_backend')} | {w.get('outcome', '-')}: {'; '.join(w.get('lines') or []) or 'same'} | {diagnosis_text(r['diagnosis'])} |")
    bad = [v for v in data["verdicts"] if v["outcome"] not in ("pass", "tie", "skip")]
    out += ["", "### Verdicts", ""]
    judged = [v for v in data["verdicts"] if v["outcome"] != "skip"]
    out += [f"- **{v['outcome']}** {v['kind']} `{v['case']}`: {v['message']}" for v in bad] or (["- no regression or failure among the judged checks"] if judged else [])
    for msg in dict.fromkeys(v["message"] for v in data["verdicts"] if v["outcome"] == "skip"):
        n = sum(1 for v in data["verdicts"] if v["outcome"] == "skip" and v["message"] == msg)
        out.append(f"- skipped ({n} check{'s' if n > 1 else ''}): {msg}")
    other = [v for v in data["verdicts"] if v["kind"] in ("ordering", "equivalence") and v["outcome"] in ("pass", "tie")]
    out += [f"- {v['outcome']} {v['kind']} `{v['case']}`: {v['message']}" for v in other]
    hw = (f"- GPU: {gpu} × {env.get('gpu_count')}, driver {env.get('driver')}, CUDA {env.get('cuda')}, attention {env.get('attn_implementation')}"
          if env.get("gpu") else f"- no GPU (CPU run), attention {env.get('attn_implementation')}")
    out += ["", "### Software", "", hw,
            f"- host CPU: {env.get('cpu')}", "- " + ", ".join(f"{k} {v}" for k, v in data["versions"].items())]
    out += [f"- differs from baseline: {d}" for d in version_diff(data)]
    out += ["", f"Command: `{data['command']}`", ""]
    return "\n".join(out)


def write(data: dict, results_dir: str | Path) -> list[Path]:
    """report.json and report.md in the results dir (atomic); the Markdown also goes to $GITHUB_STEP_SUMMARY."""
    d = Path(results_dir)
    md = markdown(data)
    paths = [d / "report.json", d / "report.md"]
    write_atomic(paths[0], json.dumps(formats.SUITE_REPORT.stamp(data), indent=1, default=str))
    write_atomic(paths[1], md)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as fh:
            fh.write(md + "\n")
    return paths


def baseline_table(staged) -> list[str]:
    """Before/after rows for --update-baselines: per decomposition, median step time and train_runtime."""
    lines = [f"{'baseline':<34} {'before: step ms / runtime s (n)':>32}  ->  {'after':<28}"]
    for path, old, new in staged:
        for d, dec in new["decompositions"].items():
            def summ(runs):
                st = [r["step_time_median_ms"] for r in runs if r.get("step_time_median_ms")]
                rt = [r["train_runtime_s"] for r in runs if r.get("train_runtime_s")]
                return f"{median(st):.1f} / {median(rt):.2f} ({len(runs)})" if st and rt else (f"- / {median(rt):.2f} ({len(runs)})" if rt else "none")
            before = summ(((old or {}).get("decompositions") or {}).get(d, {}).get("runs", [])) if old else "none"
            lines.append(f"{new['workload']['name'] + ' ' + d:<34} {before:>32}  ->  {summ(dec['runs']):<28}")
        lines.append(f"written: {path}" + ("" if old is None else " (the old values stay in git history)"))
    return lines


def terminal_summary(tr, session) -> None:
    """The end of a pytest session: report files, the summary table, and the baseline before/after table."""
    o = session.options
    recorded = session.recorded
    data = build(session.judge(), session.session_id, o.command, o.inject_slowdown, notes=tuple(session.notes),
                 recorded=tuple(str(path) for path, _old, _new in recorded) if o.update_baselines else None)
    paths = write(data, o.results_dir)
    try:
        from harness.reporting import plots

        paths += plots.write_all(data, o.results_dir)
    except ImportError as exc:  # matplotlib is an optional extra
        tr.write_line(f"plots skipped: {exc}")
    tr.section("perf summary")
    for line in terminal_lines(data):
        tr.write_line(line)
    tr.write_line("report: " + ", ".join(str(p) for p in paths))
    if recorded:
        tr.section("baseline update")
        lines = baseline_table(recorded)
        for line in lines:
            tr.write_line(line)
        write_atomic(Path(o.results_dir) / "baseline-update.md", "```\n" + "\n".join(lines) + "\n```\n")
