"""Performance cases: one run check, one runtime verdict and one memory verdict per workload x
decomposition; one ordering and one equivalence verdict per workload. Runs happen once per session
(the ``perf_session`` fixture), interleaved across the selected cases.

A project's ``perftests/test_perf.py`` imports them (``from harness.cases import *``), so that its cases are the
installed harness's: ``python -m harness init`` writes that file."""

import pytest

from harness.judging.stats import Verdict
from harness.record import PHASES
from harness.reporting import bench

__all__ = [
    "test_run",
    "test_runtime",
    "test_work",
    "test_interleaved",
    "test_memory",
    "test_ordering",
    "test_equivalence",
    "test_record_baseline",
]

PHASE_SLACK = 1.05  # measured phases may exceed the step by at most 5%


def judge(verdicts, request):
    verdicts = [verdicts] if isinstance(verdicts, Verdict) else verdicts
    lines = "\n".join(v.message for v in verdicts)
    if any(v.failed for v in verdicts):
        pytest.fail(lines, pytrace=False)
    inconclusive = [v for v in verdicts if v.outcome == "inconclusive"]
    missing = [v for v in verdicts if v.outcome == "skip"]
    if inconclusive and request.config.getoption("fail_inconclusive"):
        pytest.fail(lines, pytrace=False)
    if any(v.details.get("missing_baseline") for v in missing) and request.config.getoption("require_baseline"):
        pytest.fail(lines, pytrace=False)
    if len(missing) == len(verdicts):
        pytest.skip(lines)
    if inconclusive:
        pytest.skip("INCONCLUSIVE: " + lines)
    print(lines)


def test_run(perf_session, perf_case):
    """Every run of the case finished, and its measured phases fit inside its steps."""
    runs = perf_session.judge().runs(*perf_case, ok_only=False)
    if not runs and perf_session.options.repeats == 0:
        census = perf_session.judge().runs(*perf_case, ok_only=False, census=True)
        bad = [r for r in census if not r.ok]
        if bad or not census:
            pytest.fail(
                f"the census run of {perf_case} " + (f"failed: {bad[0].error or ''}" if bad else "was not made"),
                pytrace=False,
            )
        pytest.skip("a census-only session (--repeats 0): no timed run")
    if not runs and perf_session.incomplete:
        pytest.skip(perf_session.incomplete)
    assert runs, f"no run of {perf_case} was executed"
    bad = [r for r in runs if not r.ok]
    if bad:
        msg = [f"{len(bad)} of {len(runs)} run(s) failed"]
        for r in bad:
            kind = "oom (does not fit)" if r.status == "oom" else r.status
            msg.append(f"run {r.repeat}: {kind}: {r.error or ''}" + (f" (signal {r.signal})" if r.signal else ""))
            msg.append("  stderr tail: " + "\n  ".join((r.stderr_tail or "").strip().splitlines()[-8:]))
        pytest.fail("\n".join(msg), pytrace=False)
    for r in runs:
        ph, steps = r.phases_ms, r.step_times_ms or ()
        if not ph:
            continue
        for i in range(r.warmup_steps or 0, len(steps)):
            measured = sum(ph[p][i] for p in PHASES[:-1])
            step = steps[i]
            assert measured <= PHASE_SLACK * step, (
                f"run {r.repeat} step {i + 1}: measured phases {measured:.1f} ms exceed the step's {step:.1f} ms by "
                "more than 5%: mis-measured"
            )


@pytest.mark.benchmark(timer=bench.REPLAY)
def test_runtime(perf_session, perf_case, request, benchmark):
    """Verdict against the baseline; the step times are also replayed into pytest-benchmark."""
    bench.record(benchmark, perf_session.judge(), *perf_case)
    judge(perf_session.judge().runtime[f"{perf_case[0]}-{perf_case[1]}"], request)


def test_work(perf_session, perf_case, request):
    """Only with --census: the case's work per optimizer step (every count exact; GPU kernel time) against the
    baseline's census."""
    v = perf_session.judge().work(*perf_case)
    if v is None:
        pytest.fail(f"no census run of {perf_case[0]}-{perf_case[1]} finished; see runs.jsonl", pytrace=False)
    judge(v, request)


def test_interleaved(perf_interleave, perf_case, request):
    """Only with --interleave-python-b: the case against that interpreter's environment, interleaved on this machine in
    blocks of steps on resident workers; a regression of B fails, an inconclusive comparison is skipped (or fails with
    --fail-inconclusive)."""
    code, verdict = perf_interleave(perf_case)
    if verdict is None:
        pytest.fail(
            f"the interleaved comparison of {perf_case[0]}-{perf_case[1]} made no verdict (exit code {code}); see its "
            "output above",
            pytrace=False,
        )
    if verdict.outcome == "regression":
        pytest.fail(verdict.message, pytrace=False)
    if verdict.outcome == "inconclusive":
        if request.config.getoption("fail_inconclusive"):
            pytest.fail(verdict.message, pytrace=False)
        pytest.skip("INCONCLUSIVE: " + verdict.message)
    print(verdict.message)


def test_memory(perf_session, perf_case, request):
    judge(perf_session.judge().memory(*perf_case), request)


def test_ordering(perf_session, perf_workload, request):
    judge(perf_session.judge().ordering(perf_workload), request)


def test_equivalence(perf_session, perf_workload, request):
    judge(perf_session.judge().equivalence(perf_workload), request)


def test_record_baseline(perf_session, perf_workload, request):
    """Only with --update-baselines: write the baseline of this workload (refusals fail here)."""
    from harness.judging.baseline import BaselineError

    try:
        perf_session.update_baselines_for(perf_workload)
    except BaselineError as exc:
        pytest.fail(str(exc), pytrace=False)
