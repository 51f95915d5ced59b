"""Command line: ``python -m harness {baseline update | compare | report | overhead | calibrate | ab}``.

Each command prints one line and exits 2 on bad input; ``compare`` exits 1 on a regression.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from . import baseline as bl
from . import report
from .session import Options, PerfSession, load_records
from .spec import SpecError, Workload


class UsageError(Exception):
    pass


def _records(dirs: list[str]) -> list[dict]:
    """Records of the results dirs; runs made before boot ids were recorded take their dir as their machine."""
    out = []
    for d in dirs:
        p = Path(d) / "runs.jsonl"
        if not p.exists():
            raise UsageError(f"{d}: no runs.jsonl here; pass a --results-dir of an earlier session")
        out += [dict(r, machine=r.get("machine") or f"dir:{d}") for r in load_records(d)]
    return out


def _group(records: list[dict], where: str) -> dict[str, tuple[Workload, list[dict]]]:
    """Records by workload name, with the workload rebuilt from the records; one hash per name."""
    out: dict[str, tuple[Workload, list[dict]]] = {}
    for r in records:
        spec = r.get("workload_spec")
        if spec is None:
            raise UsageError(f"{where}: run {r.get('run_id')} has no workload_spec; it was written by an older harness")
        name = r["workload"]
        if name in out and out[name][0].hash != r["workload_hash"]:
            raise UsageError(f"{where}: {name} was run with two different specs (hash {out[name][0].hash} and {r['workload_hash']}); "
                             "pass the results dirs of one spec only")
        if name not in out:
            out[name] = (Workload.from_dict(spec), [])
        out[name][1].append(r)
    return out


def cmd_baseline_update(args) -> int:
    recs = _records(args.results_dirs)
    other = sorted({r["gpu"] for r in recs if r["gpu"] != args.gpu})
    recs = [r for r in recs if r["gpu"] == args.gpu]
    if not recs:
        raise UsageError(f"no runs on {args.gpu} in {', '.join(args.results_dirs)}" + (f" (found {', '.join(other)})" if other else ""))
    groups = _group(recs, " + ".join(args.results_dirs))
    names = args.workload or list(groups)
    staged = []
    command = "python -m harness " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    datas = []
    for name in names:
        if name not in groups:
            raise UsageError(f"no runs of {name} on {args.gpu}; found {', '.join(groups)}")
        w, rs = groups[name]
        datas.append(bl.from_runs(w, args.gpu, rs, command, note=args.note or "", min_repeats=args.min_repeats))
    for data in datas:  # all refusals happen before anything is written
        path = bl.path_for(args.baselines_dir, args.gpu, data["workload"]["name"])
        staged.append((path, bl.read_any(path), data))
        bl.write(args.baselines_dir, data)
    print("\n".join(report.baseline_table(staged)))
    return 0


def _session_against_file(path: Path, b_dirs: list[str], args) -> PerfSession:
    """A PerfSession whose records are B's, judged against a committed baseline file (baselines/<gpu>/<workload>.json)."""
    b = _group(_records(b_dirs), "B")
    name, gpu = path.stem, path.parent.name
    if name not in b:
        raise UsageError(f"{path} is the baseline of {name}, but B has runs of {', '.join(b) or 'nothing'} only")
    gpus_b = sorted({r["gpu"] for r in b[name][1]})
    if gpus_b != [gpu] and not args.allow_gpu_mismatch:
        raise UsageError(f"{path} was recorded on {gpu} but B ran on {', '.join(gpus_b)}; timings across GPUs are not comparable (--allow-gpu-mismatch to force)")
    try:
        base = bl.load(path.parent.parent, gpu, b[name][0])
    except bl.BaselineError as exc:
        raise UsageError(str(exc)) from None
    return _judge({name: b[name]}, {name: base}, gpus_b[0], b_dirs, args)


def _judge(b: dict, baselines: dict, gpu: str, b_dirs: list[str], args) -> PerfSession:
    """A finished PerfSession holding B's records, judged against ``baselines`` (threshold overrides applied)."""
    if args.alpha is not None or args.threshold is not None:
        for base in baselines.values():
            base.data.setdefault("thresholds", {}).update({k: v for k, v in (("alpha", args.alpha), ("runtime", args.threshold)) if v is not None})
    workloads = {n: b[n][0] for n in baselines}
    cases = [(n, d.id) for n, w in workloads.items() for d in w.decompositions if any(r["decomposition_id"] == d.id for r in b[n][1])]
    s = PerfSession(Options(gpu=gpu, results_dir=Path(b_dirs[0]), command="python -m harness " + " ".join(sys.argv[1:])), workloads, cases, progress=lambda m: None)
    s.records = [r for n in baselines for r in b[n][1]]
    s.executed = True
    s.__dict__["baselines"] = baselines
    return s


def _session_against(a_dirs: list[str], b_dirs: list[str], args) -> PerfSession:
    """A PerfSession whose records are B's and whose baselines are built from A's ok runs, or read from A's baseline file."""
    if len(a_dirs) == 1 and Path(a_dirs[0]).is_file():
        return _session_against_file(Path(a_dirs[0]), b_dirs, args)
    a, b = _group([r for r in _records(a_dirs) if r["status"] == "ok"], "A"), _group(_records(b_dirs), "B")
    gpus_a = {r["gpu"] for _, rs in a.values() for r in rs}
    gpus_b = {r["gpu"] for _, rs in b.values() for r in rs}
    if gpus_a != gpus_b and not args.allow_gpu_mismatch:
        raise UsageError(f"A ran on {sorted(gpus_a)} but B on {sorted(gpus_b)}; timings across GPUs are not comparable (--allow-gpu-mismatch to force)")
    gpu = sorted(gpus_b)[0]
    common = [n for n in b if n in a]
    if not common:
        raise UsageError(f"A and B share no workload (A: {', '.join(a) or 'none'}; B: {', '.join(b) or 'none'})")
    baselines = {}
    for n in common:
        wa, ra = a[n]
        wb = b[n][0]
        if wa.hash != wb.hash:
            from .spec import changed_fields

            raise UsageError(f"{n} differs between A and B: {'; '.join(changed_fields(wa.to_dict(), wb.to_dict()))}")
        baselines[n] = bl.Baseline(Path(a_dirs[0]), bl.from_runs(wa, gpu, ra, "compare", min_repeats=1, require_all=False))
    return _judge(b, baselines, gpu, b_dirs, args)


def cmd_compare(args, out_dir: str | None = None) -> int:
    """Print B judged against A; with ``out_dir`` also write the full report there (report.json, report.md, job summary)."""
    s = _session_against(args.a, args.b, args)
    data = report.build(s)
    print(f"A (baseline): {', '.join(args.a)}\nB (current):  {', '.join(args.b)}")
    print("\n".join(report.terminal_lines(data)))
    if args.markdown:
        bl.write_atomic(args.markdown, report.markdown(data))
    if out_dir:
        print("wrote " + ", ".join(map(str, report.write(data, out_dir))))
    failed = [v for v in s.all_verdicts() if v.failed]
    return 1 if failed else 0


def cmd_ab(args) -> int:
    from .ab import run_rounds

    sides = run_rounds(args)
    if sides is None:
        return 0
    a, b = sides
    args.a, args.b, args.markdown, args.allow_gpu_mismatch = [str(a)], [str(b)], None, False
    return cmd_compare(args, out_dir=args.results_dir)  # report.json beside the runs: the regression-issue script reads it


def cmd_report(args) -> int:
    s = _session_against(args.baseline or args.results_dirs, args.results_dirs, args) if args.baseline else None
    if s is None:
        recs = _records(args.results_dirs)
        groups = _group(recs, " + ".join(args.results_dirs))
        s = PerfSession(Options(gpu=recs[0]["gpu"], results_dir=Path(args.results_dirs[0]), baselines_dir=Path(args.baselines_dir)),
                        {n: w for n, (w, _) in groups.items()},
                        [(n, d.id) for n, (w, rs) in groups.items() for d in w.decompositions if any(r["decomposition_id"] == d.id for r in rs)],
                        progress=lambda m: None)
        s.records, s.executed = recs, True
        for name, base in s.baselines.items():  # a report of the very runs a baseline was recorded from compares nothing
            ids = {r["run_id"] for d in base.decompositions() for r in base.data["decompositions"][d]["runs"]} if isinstance(base, bl.Baseline) else set()
            if ids & {r["run_id"] for r in recs if r["workload"] == name}:
                s.baselines[name] = bl.MissingBaseline(f"these runs of {name} are its baseline ({base.path}); not compared with themselves")
    data = report.build(s)
    out = Path(args.out or args.results_dirs[0])
    out.mkdir(parents=True, exist_ok=True)
    paths = report.write(data, out)
    try:
        from . import plots

        paths += plots.write_all(data, out)
    except ImportError as exc:
        print(f"plots skipped: {exc}")
    print("\n".join(report.terminal_lines(data)))
    print("wrote " + ", ".join(map(str, paths)))
    return 0


def cmd_overhead(args) -> int:
    from .overhead import measure, micro, micro_report

    if args.micro:
        steps = dict(kv.split("=") for kv in args.micro.split(","))  # "1x4=1510,4x1=394"
        print("\n".join(micro_report(micro(), {d: (int(d.split("x")[1]), float(ms)) for d, ms in steps.items()})))
        return 0
    return measure(args)


def cmd_calibrate(args) -> int:
    from .calibrate import calibrate

    return calibrate(args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    bp = sub.add_parser("baseline", help="baseline store").add_subparsers(dest="bcmd", required=True)
    up = bp.add_parser("update", help="record the runs of RESULTS_DIR(s) as the baseline of --gpu")
    up.add_argument("results_dirs", nargs="+")
    up.add_argument("--gpu", required=True)
    up.add_argument("--workload", action="append")
    up.add_argument("--baselines-dir", default="baselines")
    up.add_argument("--min-repeats", type=int, default=bl.MIN_REPEATS)
    up.add_argument("--note", default="")
    up.set_defaults(fn=cmd_baseline_update)
    cp = sub.add_parser("compare", help="compare results dir B against A (a results dir, or a baseline file such as "
                        "baselines/h200/qwen3-1.7b-lora.json) with the suite's statistics; exit 1 on a regression")
    cp.add_argument("a", nargs=1)
    cp.add_argument("b", nargs=1)
    cp.add_argument("--alpha", type=float)
    cp.add_argument("--threshold", type=float)
    cp.add_argument("--markdown", help="also write the Markdown report here")
    cp.add_argument("--allow-gpu-mismatch", action="store_true")
    cp.set_defaults(fn=cmd_compare)
    rp = sub.add_parser("report", help="write report.md, report.json and plots for RESULTS_DIR(s)")
    rp.add_argument("results_dirs", nargs="+")
    rp.add_argument("--baseline", nargs="*", help="results dir(s) to use as the baseline instead of baselines/")
    rp.add_argument("--baselines-dir", default="baselines")
    rp.add_argument("--out")
    rp.add_argument("--alpha", type=float)
    rp.add_argument("--threshold", type=float)
    rp.add_argument("--allow-gpu-mismatch", action="store_true")
    rp.set_defaults(fn=cmd_report)
    op = sub.add_parser("overhead", help="phases on vs off, interleaved ABBA, on one decomposition")
    op.add_argument("--micro", metavar="DECOMP=MS,...", help="instead: time one mark and one hook pair here and report their share of steps of these lengths")
    op.add_argument("--gpu")
    op.add_argument("--workload")
    op.add_argument("--decomposition")
    op.add_argument("--pairs", type=int, default=5)
    op.add_argument("--steps", type=int)
    op.add_argument("--workloads-dir", default="workloads")
    op.add_argument("--results-dir", default="perf-results/overhead")
    op.add_argument("--timeout", type=float, default=1800)
    op.set_defaults(fn=cmd_overhead)
    ca = sub.add_parser("calibrate", help="A/A and injected-slowdown runs; prints the minimum detectable slowdown")
    ca.add_argument("--gpu", required=True)
    ca.add_argument("--workload", required=True)
    ca.add_argument("--repeats", type=int, default=5)
    ca.add_argument("--slowdown", type=float, default=0.10)
    ca.add_argument("--steps", type=int)
    ca.add_argument("--workloads-dir", default="workloads")
    ca.add_argument("--results-dir", default="perf-results/calibrate")
    ca.add_argument("--timeout", type=float, default=1800)
    ca.set_defaults(fn=cmd_calibrate)
    ab = sub.add_parser("ab", help="one workload under two Python environments, interleaved on this machine; B judged against A")
    ab.add_argument("--gpu", required=True)
    ab.add_argument("--workload", required=True)
    ab.add_argument("--decomposition", action="append", help="only these decompositions (repeatable); default all")
    ab.add_argument("--python-a", help="interpreter of side A (default: this one)")
    ab.add_argument("--python-b", required=True, help="interpreter of side B, e.g. .tox/latest/bin/python")
    ab.add_argument("--inject-slowdown-b", type=float, default=0.0, help="sensitivity self-check: slow side B by this fraction")
    ab.add_argument("--skip-same-versions", action="store_true",
                    help="make no runs when A and B have the same python and library versions (nightly: no new release)")
    ab.add_argument("--repeats", type=int, default=5)
    ab.add_argument("--steps", type=int)
    ab.add_argument("--alpha", type=float)
    ab.add_argument("--threshold", type=float)
    ab.add_argument("--workloads-dir", default="workloads")
    ab.add_argument("--results-dir", default="perf-results/ab")
    ab.add_argument("--timeout", type=float, default=1800)
    ab.set_defaults(fn=cmd_ab)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except (UsageError, SpecError, bl.BaselineError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
