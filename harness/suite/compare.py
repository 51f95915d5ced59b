"""Judging runs already made: ``compare`` (B against A), ``report`` and ``baseline update``.

Each is a function with keyword arguments (the CLI passes its parsed options); bad input raises
:class:`UsageError` with one line.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness.errors import BadInput, UsageError
from harness.files import ensure_dir, read_records, results_lock, write_atomic
from harness.judging import baseline as bl
from harness.judging.judge import Judge, load_baselines
from harness.record import run_problem
from harness.reporting import report, session_summary
from harness.results import formats
from harness.results.run import Run, plain
from harness.results.suite_report import SuiteReport
from harness.spec import Workload, changed_fields


def command_line() -> str:
    return "python -m harness " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def run_record(rec: dict, where: str) -> Run:
    """A line of runs.jsonl as its readers take it: upgraded to the current format and of the shape they read
    (:func:`harness.record.run_problem`); ValueError, one line naming the line and the run, otherwise."""
    rec = formats.RUN.read(rec, where)
    if (why := run_problem(rec)) is not None:
        raise BadInput(f"{where}: run {str(rec.get('run_id'))[:80]!r}: {why}")
    return Run.from_json(rec, where)


def any_run(rec: dict, where: str) -> Run:
    """A line of runs.jsonl upgraded to the current format, whatever the shape of its values."""
    return Run.from_json(rec, where)


def in_dir(run: Run, d: str | Path) -> Run:
    """``run`` as read from results dir ``d``: a run made before boot ids were recorded takes its dir as its
    machine."""
    return run.with_machine(run.machine or f"dir:{d}")


def records(dirs: list[str], skipped: list[str] | None = None, shape: bool = True) -> list[Run]:
    """Records of the results dirs, each dir once (``D D/ D/.`` is one dir); runs made before boot ids were recorded
    take their dir as their machine. A torn or malformed line, or with ``shape`` a record of the wrong shape
    (:func:`run_record`: a NaN or a string for a step time), is skipped: named in ``skipped`` when given (for the
    report), else on stderr. ``shape=False``: the caller refuses such a record itself (a baseline's schema)."""
    out, seen = [], set()
    for d in dirs:
        if Path(d).resolve() in seen:
            continue  # the same dir again: its runs would count twice
        seen.add(Path(d).resolve())
        if not (Path(d) / "runs.jsonl").exists():
            raise UsageError(f"{d}: no runs.jsonl here; pass a --results-dir of an earlier session")
        recs, lost = read_records(Path(d) / "runs.jsonl", run_record if shape else any_run)
        if skipped is not None:
            skipped += lost
        else:
            for line in lost:
                print(f"warning: {line}", file=sys.stderr)
        out += [in_dir(r, d) for r in recs]
    return out


def group(recs: list[Run], where: str) -> dict[str, tuple[Workload, list[Run]]]:
    """Records by workload name, with the workload rebuilt from the records; one hash per name."""
    out: dict[str, tuple[Workload, list[Run]]] = {}
    recorded: dict[
        str, str
    ] = {}  # the hash each run recorded (a harness that hashes differently still agrees with itself)
    for r in recs:
        spec = plain(r.workload_spec)
        if spec is None:
            raise UsageError(
                f"{where}: run {r.run_id or None} has no workload_spec; it was written by an older harness"
            )
        name = r.workload
        if recorded.setdefault(name, r.workload_hash) != r.workload_hash:
            raise UsageError(
                f"{where}: {name} was run with two different specs (hash {recorded[name]} and {r.workload_hash}); "
                "pass the results dirs of one spec only"
            )
        if name not in out:
            out[name] = (Workload.from_dict(spec), [])
        out[name][1].append(r)
    return out


def judge_of(
    groups: dict[str, tuple[Workload, list[Run]]],
    baselines: dict,
    gpu: str,
    alpha: float | None = None,
    threshold: float | None = None,
) -> Judge:
    """A judge of the records in ``groups`` (workloads that have a baseline entry), over the decompositions that ran."""
    workloads = {n: groups[n][0] for n in baselines}
    cases = tuple(
        (n, d.id)
        for n, w in workloads.items()
        for d in w.decompositions
        if any(r.decomposition_id == d.id for r in groups[n][1])
    )
    return Judge(
        workloads,
        cases,
        tuple(r for n in baselines for r in groups[n][1]),
        baselines,
        gpu=gpu,
        alpha=alpha,
        threshold=threshold,
    )


def _against_file(path: Path, b_dirs: list[str], alpha, threshold, allow_gpu_mismatch: bool) -> Judge:
    """B's records judged against a committed baseline file (baselines/<gpu>/<workload>.json)."""
    b = group(records(b_dirs), "B")
    name, gpu = path.stem, path.parent.name
    if name not in b:
        raise UsageError(f"{path} is the baseline of {name}, but B has runs of {', '.join(b) or 'nothing'} only")
    gpus_b = sorted({r.gpu for r in b[name][1]})
    if gpus_b != [gpu] and not allow_gpu_mismatch:
        raise UsageError(
            f"{path} was recorded on {gpu} but B ran on {', '.join(gpus_b)}; "
            "timings across GPUs are not comparable (--allow-gpu-mismatch to force)"
        )
    try:
        base = bl.load(path.parent.parent, gpu, b[name][0])
    except bl.BaselineError as exc:
        raise UsageError(str(exc)) from None
    return judge_of({name: b[name]}, {name: base}, gpus_b[0], alpha, threshold)


def against(
    a: list[str],
    b: list[str],
    alpha: float | None = None,
    threshold: float | None = None,
    allow_gpu_mismatch: bool = False,
) -> Judge:
    """B's records judged against A: A's ok runs as the baseline, or A's baseline file."""
    if len(a) == 1 and Path(a[0]).is_file():
        return _against_file(Path(a[0]), b, alpha, threshold, allow_gpu_mismatch)
    return runs_against(records(a), records(b), Path(a[0]), alpha, threshold, allow_gpu_mismatch)


def runs_against(
    recs_a: list[Run],
    recs_b: list[Run],
    source_a: Path,
    alpha: float | None = None,
    threshold: float | None = None,
    allow_gpu_mismatch: bool = False,
) -> Judge:
    """B's run records judged against A's: A's ok runs as the baseline (``source_a`` names where they came from)."""
    ga, gb = group([r for r in recs_a if r.ok], "A"), group(recs_b, "B")
    gpus_a = {r.gpu for _, rs in ga.values() for r in rs}
    gpus_b = {r.gpu for _, rs in gb.values() for r in rs}
    if gpus_a != gpus_b and not allow_gpu_mismatch:
        raise UsageError(
            f"A ran on {sorted(gpus_a)} but B on {sorted(gpus_b)}; "
            "timings across GPUs are not comparable (--allow-gpu-mismatch to force)"
        )
    gpu = sorted(gpus_b)[0]
    common = [n for n in gb if n in ga]
    if not common:
        raise UsageError(f"A and B share no workload (A: {', '.join(ga) or 'none'}; B: {', '.join(gb) or 'none'})")
    baselines = {}
    for n in common:
        wa, ra = ga[n]
        wb = gb[n][0]
        if wa.hash != wb.hash:
            raise UsageError(f"{n} differs between A and B: {'; '.join(changed_fields(wa.to_dict(), wb.to_dict()))}")
        baselines[n] = bl.Baseline(source_a, bl.from_runs(wa, gpu, ra, "compare", min_repeats=1, require_all=False))
    return judge_of(gb, baselines, gpu, alpha, threshold)


def compare(
    a: list[str],
    b: list[str],
    *,
    alpha: float | None = None,
    threshold: float | None = None,
    markdown: str | None = None,
    allow_gpu_mismatch: bool = False,
    out_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """Print B judged against A; with ``out_dir`` also write the full report there (report.json, report.md, job
    summary), under its lock: refused at once while a session or another command writes there. Returns the report; its
    exit code is 1 on a regression or failed check, else 0."""
    with ExitStack() as held:
        if out_dir:
            held.enter_context(results_lock(ensure_dir(out_dir)))
        judge = against(a, b, alpha, threshold, allow_gpu_mismatch)
        return judged(judge, a, b, markdown=markdown, out_dir=out_dir, out=out)


def judged(
    judge: Judge,
    a: list[str],
    b: list[str],
    *,
    markdown: str | None = None,
    out_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """The report of ``judge`` (B against A, named by ``a`` and ``b``): printed, written where asked, returned with its
    exit code, 1 on a regression or failed check, else 0. The caller holds ``out_dir``'s lock."""
    data = report.build(judge, command=command_line())
    out(f"A (baseline): {', '.join(a)}\nB (current):  {', '.join(b)}")
    out("\n".join(report.terminal_lines(data)))
    if markdown:
        write_atomic(markdown, report.markdown(data))
    if out_dir:
        out("wrote " + ", ".join(map(str, report.write(data, out_dir))))
    return SuiteReport.of(data.content(), exit_code=1 if any(v.failed for v in judge.all()) else 0)


def write_report(results_dirs: list[str], *, out_dir: str | None = None, **judging) -> SuiteReport:
    """report.md, report.json and plots for RESULTS_DIR(s) (:func:`_write_report`), in ``out_dir`` (default: the first
    results dir) under its lock: refused at once while a session or another command writes there. Exit 1 on a regression
    or a failed check (docs/exit-codes.md), else 0: the report's exit code."""
    dest = Path(out_dir or results_dirs[0])
    if out_dir is None and not dest.is_dir():
        records(results_dirs[:1])  # no such results dir: said as for any other
    dest.mkdir(parents=True, exist_ok=True)
    with results_lock(dest):
        return _write_report(results_dirs, dest, **judging)


def _write_report(
    results_dirs: list[str],
    dest: Path,
    *,
    baseline: list[str] | None = None,
    baselines_dir: str = "baselines",
    alpha: float | None = None,
    threshold: float | None = None,
    allow_gpu_mismatch: bool = False,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """report.md, report.json and plots in ``dest``, against ``baseline`` (results dirs or a file) or the stored
    baselines."""
    skipped: list[str] = []
    if baseline:
        judge = against(baseline, results_dirs, alpha, threshold, allow_gpu_mismatch)
    else:
        recs = records(results_dirs, skipped)
        groups = group(recs, " + ".join(results_dirs))
        gpu = recs[0].gpu
        baselines = load_baselines(baselines_dir, gpu, {n: w for n, (w, _) in groups.items()})
        ids = {r.run_id for r in recs}
        for name, base in baselines.items():  # a report of the very runs a baseline was recorded from compares nothing
            if isinstance(base, bl.Baseline) and ids & base.run_ids():
                baselines[name] = bl.MissingBaseline(
                    f"these runs of {name} are its baseline ({base.path}); not compared with themselves"
                )
        if bad := [b for b in baselines.values() if isinstance(b, bl.BadBaseline)]:
            raise bad[0]  # bad input, as in compare and a pytest session: no verdict against it
        judge = judge_of(groups, baselines, gpu, alpha, threshold)
    data = report.build(
        judge, command=command_line(), notes=tuple(f"{line}: a record lost on disk, not counted" for line in skipped)
    )
    paths = report.write(data, dest)
    try:
        from harness.reporting import plots

        paths += plots.write_all(data, dest)
    except ImportError as exc:
        out(f"plots skipped: {exc}")
    out("\n".join(report.terminal_lines(data)))
    out("wrote " + ", ".join(map(str, paths)))
    # docs/exit-codes.md: 1 on a regression or a failed check
    return SuiteReport.of(data.content(), exit_code=1 if any(v.failed for v in judge.all()) else 0)


def baseline_update(
    results_dirs: list[str],
    *,
    gpu: str,
    workload: list[str] | None = None,
    baselines_dir: str = "baselines",
    min_repeats: int = bl.MIN_REPEATS,
    note: str = "",
    out: Callable[[str], None] = print,
) -> int:
    """Record the runs of RESULTS_DIR(s) as the baseline of ``gpu``; every refusal happens before anything is
    written."""
    recs = records(results_dirs, shape=False)  # a run a baseline cannot hold is refused by name (bl.from_runs)
    other = sorted({r.gpu for r in recs if r.gpu != gpu})
    recs = [r for r in recs if r.gpu == gpu]
    if not recs:
        raise UsageError(
            f"no runs on {gpu} in {', '.join(results_dirs)}" + (f" (found {', '.join(other)})" if other else "")
        )
    for r in recs:  # the label is what --gpu said; the env is the device the worker found
        found = r.gpu_found
        if found is not None and found != gpu:
            raise UsageError(
                f"refusing to record a {gpu} baseline: run {r.run_id or None} in {', '.join(results_dirs)} "
                f"is labelled {gpu} but ran on "
                f"{found} (its env.gpu_short); record the baseline from runs made on a {gpu} machine"
            )
    groups = group(recs, " + ".join(results_dirs))
    datas = []
    for name in workload or list(groups):
        if name not in groups:
            raise UsageError(f"no runs of {name} on {gpu}; found {', '.join(groups)}")
        w, rs = groups[name]
        datas.append(bl.from_runs(w, gpu, rs, command_line(), note=note or "", min_repeats=min_repeats))
    staged = []
    with results_lock(
        ensure_dir(Path(baselines_dir) / gpu, "--baselines-dir"), "rerun this one when it has ended"
    ):  # two updates of one GPU's baselines: one at a time
        for data in datas:
            path = bl.path_for(baselines_dir, gpu, data.workload.name)
            staged.append((path, bl.read_any(path), data.to_json()))
            bl.write(baselines_dir, data)
    out("\n".join(session_summary.baseline_table(staged)))
    return 0
