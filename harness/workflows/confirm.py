"""``python -m harness confirm REPORT``: no regression alert on a stored-baseline verdict alone.

A runtime regression against a stored baseline can be a real slowdown, or a machine slower than the
baseline's (machines differ by 8-15%, and one machine's speed drifts). Before an alert, each runtime
regression of ``REPORT`` (a suite's ``report.json``) is re-measured on this machine: ``python -m harness
interleave`` of that case, A = ``--python-a`` (the reference environment, e.g. the pinned one) against
B = ``--python-b`` (the environment the report measured), in ``<results-dir>/<case>``.

Outcomes, per runtime regression of the report:

* **confirmed**: the interleaved comparison also says regression; the verdict stays a regression, its
  message followed by the interleaved one.
* **unconfirmed**: the interleaved comparison says pass, improvement or inconclusive, or no
  comparison could be made (a worker died); the verdict becomes ``unconfirmed`` (not a failure) and
  says why. When A and B are the same environment (the same prefix and the same installed distributions, as
  :mod:`harness.measuring.interpreters` says; two virtualenvs of one base interpreter are two environments) nothing
  can confirm it on this machine: without a library change, a stored-baseline regression is the machine, its driver
  or noise; it stays on the history page, without an alert.

Each comparison is judged by the result its call returns; an earlier run's report in the case's folder is never read.

Every other verdict (memory, ordering, equivalence, work, failed runs) is kept as it is. The result is
written as ``<results-dir>/report.json`` in the report's own format, for the regression-issue script (an earlier
confirmation's report there is removed first); exit code 1 when a regression or a failed check remains, else 3 when
a comparison failed to measure (a worker died), else 0. Ctrl-C and SIGTERM stop it at once (130, 143).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness import exits
from harness.errors import BadInput
from harness.files import ensure_dir, new_id, refuse_link, results_lock, write_json_atomic
from harness.results import formats
from harness.results.comparison import ComparisonResult
from harness.results.suite_report import SuiteReport
from harness.results.verdict import Verdict
from harness.sidebyside.config import ComparisonConfig
from harness.values import TEXT, Items, Obj, load_json, mismatch

UNCONFIRMED = "unconfirmed"
# what confirm reads of a suite report: each case's row, and each verdict's kind, case, outcome and message
ROW = Obj({"workload": TEXT, "decomposition": TEXT}, required=("workload", "decomposition"))
REPORT = Obj(
    {
        "gpu": TEXT,
        "rows": Items(ROW),
        "verdicts": Items(Obj({"kind": TEXT, "case": TEXT, "outcome": TEXT, "message": TEXT}, required=("kind",))),
    }
)


def read_suite_report(path: Path) -> SuiteReport:
    """The suite report to confirm; ValueError, one line naming the file, for anything else."""
    if not path.is_file():
        raise BadInput(
            f"{path}: no such report; pass the report.json of a suite session (pytest perftests ... --results-dir DIR)"
        )
    try:
        data = load_json(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: not a JSON report ({exc.msg} at line {exc.lineno})") from None
    except (OSError, ValueError) as exc:  # nested too deep, a number of too many digits, not UTF-8
        raise BadInput(f"{path}: not a JSON report ({exc}); pass the report.json of a suite session") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("verdicts"), list)
        or not isinstance(data.get("rows"), list)
    ):
        raise BadInput(
            f"{path}: not a suite report (no 'verdicts' and 'rows'); pass the report.json of a suite session"
        )
    cases = {f"{r['workload']}-{r['decomposition']}" for r in data["rows"] if mismatch(r, ROW) is None}
    why = mismatch(data, REPORT) or next(
        (
            f"verdicts[{i}] is a runtime regression of {v['case']!r}, which has no row"
            for i, v in enumerate(data["verdicts"])
            if v.get("kind") == "runtime" and v.get("outcome") == "regression" and v.get("case") not in cases
        ),
        None,
    )
    if why is not None:
        raise BadInput(f"{path}: {why}; pass the report.json of a suite session as it wrote it")
    try:
        return SuiteReport.of(formats.SUITE_REPORT.read(data, str(path)), path=path)
    except formats.FormatError as exc:
        raise BadInput(str(exc)) from None


def judged(v: Verdict, made: ComparisonResult, case_dir: Path, out: Callable[[str], None]) -> Verdict:
    """The stored-baseline verdict ``v`` once its interleaved comparison ``made`` has measured it."""
    iv = made.verdict or Verdict(
        "none", f"no interleaved verdict from this run (exit code {made.exit_code}); see {case_dir}"
    )
    if iv.outcome == "regression":
        out(f"  {v.case}: CONFIRMED: {iv.message}")
        return replace(v, interleaved=iv, message=f"{v.message}; confirmed interleaved on this machine: {iv.message}")
    out(f"  {v.case}: unconfirmed: {iv.message}")
    return unconfirmed(v, f"interleaved on this machine {iv.message}", interleaved=iv)


def same_environment(v: Verdict, out: Callable[[str], None]) -> Verdict:
    """``v`` when A and B are one environment: nothing here can confirm it."""
    out(f"  {v.case}: unconfirmed (A and B are the same environment)")
    return unconfirmed(
        v,
        "A and B are the same environment, so nothing on this machine can confirm it (without a library change it is "
        "the machine, its driver or noise)",
    )


def unconfirmed(v: Verdict, why: str, interleaved: Verdict | None = None) -> Verdict:
    """``v`` unconfirmed for the reason ``why``: not a failure, its stored message kept beside the new one."""
    return replace(
        v,
        outcome=UNCONFIRMED,
        message=f"{v.message}; unconfirmed: {why}; no alert",
        details={**v.details, "stored_message": v.message},
        interleaved=interleaved,
    )


def confirm(
    report: str | Path,
    template: ComparisonConfig | None = None,
    *,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/confirm",
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """Re-measure every runtime regression of ``report`` interleaved on this machine (module docstring), each case with
    the settings of ``template`` (its workload and decomposition are the case's; default: the defaults). Returns the
    confirmed report, as written to ``results_dir/report.json``."""
    from harness.measuring.env import detect_gpu, resolve_gpu
    from harness.measuring.interpreters import environment, interpreter
    from harness.sidebyside.run import interleave

    path = Path(report)
    found = read_suite_report(path)
    try:  # the report's regressions are re-measured here: on its GPU, never on another
        gpu = resolve_gpu(found.gpu or "auto", detect_gpu())
    except ValueError as exc:
        raise BadInput(f"{path}: a report of {found.gpu} cannot be confirmed here ({exc})") from None
    root = ensure_dir(results_dir)
    with results_lock(root):  # refused at once beside another run writing there
        # an earlier confirmation's: never taken for this one's, whatever stops this
        (root / "report.json").unlink(missing_ok=True)
        template = template or ComparisonConfig(workload="", decomposition="")
        pa, pb = interpreter(template.python_a, "a"), interpreter(template.python_b, "b")
        rows = found.sections["rows"]
        cases = {f"{r['workload']}-{r['decomposition']}": (r["workload"], r["decomposition"]) for r in rows}
        todo = [v.case for v in found.verdicts if v.kind == "runtime" and v.outcome == "regression" and v.case]
        out(f"confirm {path}: {len(todo)} runtime regression(s) against the stored baseline; A {pa}, B {pb}")
        # the prefix and the distributions, not the binary
        same = bool(todo) and environment(pa, "a").same_as(environment(pb, "b"))
        verdicts: list[Verdict] = []
        failed: list[str] = []
        for v in found.verdicts:
            if v.kind != "runtime" or v.outcome != "regression" or not v.case:
                verdicts.append(v)
                continue
            if same:
                verdicts.append(same_environment(v, out))
                continue
            workload, dec = cases[v.case]
            case_dir = root / v.case
            refuse_link(case_dir)
            made = interleave(
                replace(
                    template,
                    gpu=gpu,
                    workload=workload,
                    decomposition=dec,
                    python_a=pa,
                    python_b=pb,
                    workloads_dir=str(workloads_dir),
                    results_dir=str(case_dir),
                ),
                out=out,
            )
            if made.exit_code == exits.MEASUREMENT_FAILED:
                failed.append(v.case)
            verdicts.append(judged(v, made, case_dir, out))
        settings = {"report": str(path), "python_a": pa, "python_b": pb, "same_environment": same}
        return written(found, verdicts, settings, todo, failed, root, out)


def written(
    found: SuiteReport,
    verdicts: list[Verdict],
    settings: dict,
    regressions: list[str],
    failed: list[str],
    root: Path,
    out: Callable[[str], None],
) -> SuiteReport:
    """The confirmed report: ``found`` with ``verdicts`` and its ``confirm`` section (``settings``, the
    ``regressions`` re-measured, those confirmed and those whose comparison ``failed`` to measure), written to
    ``root/report.json`` with its one summary line."""
    confirmed = [v.case for v in verdicts if v.interleaved is not None and v.outcome == "regression"]
    section = {
        **settings,
        "regressions": regressions,
        "confirmed": confirmed,
        "failed": failed,
        "session_id": new_id("confirm"),
    }
    failing = [v for v in verdicts if v.failed]
    done = replace(
        found,
        verdicts=tuple(verdicts),
        sections={**found.sections, "confirm": section},
        exit_code=exits.REGRESSION if failing else exits.MEASUREMENT_FAILED if failed else exits.OK,
        path=root / "report.json",
    )
    write_json_atomic(root / "report.json", done.to_json())
    out(
        f"{len(confirmed)} of {len(regressions)} runtime regression(s) confirmed; "
        f"{len(failing)} failing verdict(s) remain"
        + (f"; the comparison of {', '.join(failed)} failed to measure" if failed else "")
        + f"; wrote {root / 'report.json'}"
    )
    return done
