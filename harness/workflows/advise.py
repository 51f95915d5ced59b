"""``python -m harness advise``: which micro-batch x grad-accum split of an effective batch is fastest on this GPU,
with evidence.

1. **Enumerate** every split ``micro x grad_accum`` of the effective batch (world size 1), largest micro-batch first
   (:meth:`harness.spec.Workload.with_splits`).
2. **Check fit.** A probe per split ``m x G`` (:mod:`harness.workflows.advise_probe`): a short run of ``m x 1``
   (``--probe-steps`` timed steps after the warm-up, then a census window), every probe in one worker process (the
   imports are paid once), largest micro-batch first. An out-of-memory result means "does not fit", with the
   allocator's message, and the next probe runs; every probe is kept in ``<results-dir>/probe/runs.jsonl`` as soon as
   it ends. The runner kills the worker's process group, so no GPU process is left behind. A split's step is estimated
   from its probe (:func:`harness.workflows.advise_probe.estimate_step`): a probe of a whole ``1 x 64`` step would take
   64 micro-batches, and the time per micro-batch does not depend on how many are accumulated.
3. **Compare** the splits that fit: the fastest by the estimates (F) against each other split S, block-interleaved on
   two resident workers that train the real splits (:func:`harness.sidebyside.run.interleave` with ``decomposition_b``;
   blocks of about ``--block-seconds``), each comparison stopping at its first conclusive look or at its share of
   ``--total-budget-minutes``. Both sides train the same effective batch per optimizer step, so the ratio of step times
   is the ratio of throughput. The nearest split is always compared; a split beyond it estimated more than
   ``--screen`` times slower than F (default 1.5, several times the launch-to-launch spread of one machine; widened by
   the probe series' drift) is called slower without a comparison: its ratio is the estimate, marked "screened", with
   no interval.
4. **Answer**: the recommended split with its ratio against every other split (and the interval), its peak memory and,
   from each probe's census, what limits each split (host-bound or GPU-bound, kernel launches per sample, GPU busy
   fraction); a terminal table, ``report.md`` / ``report.json``, ``advice.png`` (step time and peak memory against the
   micro-batch) and the workload TOML lines that pin the split (:mod:`harness.workflows.advise_report`).
5. **Sanity.** Splits within ``--threshold`` of the fastest (a ``pass`` verdict: S is not slower than F by more than the
   threshold) tie with it; among ties the one with the least peak memory is recommended. If only micro-batch 1 fits,
   gradient accumulation is the only option, and the answer says so.

Each comparison is read from its own report only (one with the id of the run advise started); an earlier advice's
report in the results dir is removed when this one starts. Exit code 0 with a recommendation; 3 when no split fits
(every probe out of memory or failed) or a comparison failed to measure (a worker died; the answer is still written); 2
on bad input; 130 and 143 on Ctrl-C and SIGTERM (docs/exit-codes.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import NamedTuple

from harness import exits
from harness.errors import BadInput
from harness.files import ensure_dir, new_id, refuse_link, refuse_links, results_lock, write_atomic, write_json_atomic
from harness.judging.thresholds import ALPHA, INTERLEAVED
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.advice import Advice
from harness.results.verdict import Verdict
from harness.sidebyside.config import ComparisonConfig
from harness.spec import Workload
from harness.spec_folder import load_workload
from harness.workflows.advise_probe import GIB, Probe, probe
from harness.workflows.advise_report import Answer, Findings, plot, report_lines


def block_steps_for(step_ms: float, block_seconds: float) -> int:
    """Optimizer steps per block: about ``block_seconds`` of the slower side's steps, at least 1."""
    return max(1, math.ceil(block_seconds * 1000 / step_ms)) if step_ms and step_ms > 0 else 1


# what a launch of two resident workers is planned to cost, with a margin (docs/evidence/the-advisor-on-an-h200/)
STARTUP_S = 30.0


def pairs_for(seconds: float, k: int, pair_step_ms: float, launches: int, most: int) -> int:
    """Pairs to plan for a comparison of ``seconds``: what fits after ``launches`` start-ups, at ``k`` steps of each
    side per pair (``pair_step_ms``: one step of each, estimated), so that every launch gets its share of the pairs
    before the budget ends; at least 4 per launch and at most ``most``."""
    fit = (seconds - launches * STARTUP_S) / (k * pair_step_ms / 1000.0) if pair_step_ms > 0 else most
    return int(min(most, max(4 * launches, fit)))


def recommend(splits: list[str], probes: dict[str, Probe], compared: dict[str, Verdict], fastest: str | None) -> Answer:
    """The answer from the probes and the interleaved verdicts of each split S against the fastest F (outcome of S/F).

    Pure: no runs. ``compared[S]`` has an ``outcome`` (regression: S slower than F by more than the threshold; pass:
    not slower by more than it, a tie; improvement: S faster by more than it; inconclusive) and the ratio S/F with its
    interval."""
    fits = [s for s in splits if probes[s].fits]
    if not fits:
        return Answer(None, ("no split fits on this device: every probe ran out of memory or failed",))
    outcome = {s: v.outcome for s, v in compared.items()}
    lines = []
    best = fastest or fits[0]
    faster = [s for s in fits if outcome.get(s) == "improvement"]
    if faster:
        best = min(faster, key=lambda s: compared[s].ratio or 0.0)
        lines.append(
            f"the probes ranked {fastest} first, "
            f"but the interleaved comparison found {best} faster by more than the threshold"
        )
    ties = sorted(
        [best] + [s for s in fits if s != best and outcome.get(s) == "pass" and not faster],
        key=lambda s: splits.index(s),
    )
    rec = best
    if len(ties) > 1:
        mem = {s: probes[s].peak_reserved_bytes for s in ties}
        if all(v is not None for v in mem.values()):
            rec = min(ties, key=lambda s: (mem[s], splits.index(s)))
            lines.append(
                f"{', '.join(ties)} tie (within the threshold of each other's speed): {rec} needs the least memory "
                f"({mem[rec] / GIB:.2f} GiB)"
            )
        else:
            lines.append(
                f"{', '.join(ties)} tie (within the threshold); "
                f"no peak memory was measured here, so the fastest estimate, {best}, stays"
            )
    open_ = [s for s in fits if s != best and outcome.get(s) in (None, "inconclusive") and s not in ties]
    if open_:
        lines.append(
            f"not separated from {best} with confidence within the budget: {', '.join(open_)} "
            "(more minutes narrow them)"
        )
    elif len(fits) > 1 and not faster and len(ties) == 1:
        lines.append(
            f"{best} is faster than every other split that fits, each by more than the threshold, with confidence"
        )
    if fits == [splits[-1]] and len(splits) > 1:
        lines.append(
            f"only micro-batch {splits[-1].split('x')[0]} fits: gradient accumulation is the only option on this device"
        )
    return Answer(rec, tuple(lines), tuple(ties), best, tuple(fits), tuple(open_))


def advise(
    *,
    gpu: str,
    workload: str,
    effective: int | None = None,
    budget_minutes: float = 10.0,
    probe_steps: int = 3,
    block_seconds: float = 0.8,
    pairs: int = 200,
    launches: int = 2,
    alpha: float = ALPHA,
    threshold: float = INTERLEAVED,
    census: bool = True,
    screen: float = 1.5,
    cpus: list[int] | None = None,
    memory_limit_micro: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/advise",
    run_timeout: float = RUN_TIMEOUT_S,
    out: Callable[[str], None] = print,
) -> Advice:
    """Run the advice (module docstring) and return it; ``memory_limit_micro`` (test-only) makes splits with a larger
    micro-batch run out of memory at their first step, as a GPU too small for them would."""
    t0 = time.time()
    check_options(budget_minutes, screen)
    w = load_workload(workloads_dir, workload).with_splits(effective)
    splits = [d.id for d in w.decompositions]
    with fresh_results(results_dir) as root:
        out(
            f"advise {w.name} on {gpu}: effective batch {w.effective_batch}, splits {', '.join(splits)} "
            f"(largest micro-batch first); budget {budget_minutes:g} min; results in {root}"
        )
        probes, drift = probe(
            w,
            w.decompositions,
            root,
            gpu=gpu,
            probe_steps=probe_steps,
            run_timeout=run_timeout,
            memory_limit_micro=memory_limit_micro,
            census=census,
            out=out,
        )
        fits = [s for s in splits if probes[s].fits]
        fastest = min(fits, key=lambda s: step_of(probes[s])) if fits else None
        # the screen widens by the drift seen over the probe series; the nearest split is always compared
        wide = screen * (drift.widest if drift else 1.0)
        config = partial(
            ComparisonConfig,
            workload=w.name,
            gpu=gpu,
            alpha=alpha,
            threshold=threshold,
            cpus=tuple(cpus or ()),
            warmup_steps=max(w.measure.warmup_steps, 1),
            run_timeout=run_timeout,
        )
        budget = Budget(t0, budget_minutes, block_seconds, pairs, launches)
        compared, failed = compare_splits(w, fits, fastest, probes, wide, root, config, budget, out)
        found = Findings(
            workload=w.name,
            gpu=gpu,
            effective_batch=w.effective_batch,
            splits=tuple(splits),
            probes=probes,
            fastest_probe=fastest,
            compared=compared,
            answer=recommend(splits, probes, compared, fastest),
            threshold=threshold,
            alpha=alpha,
            budget_minutes=budget_minutes,
            screen=screen,
            screen_used=wide if fits else None,
            drift=drift,
            probe_steps=probe_steps,
            failed=tuple(failed),
            session_id=new_id("advise"),
            wall_s=time.time() - t0,
        )
        return written(found, w, root, out)


def check_options(budget_minutes: float, screen: float) -> None:
    """BadInput, one line, for a budget or a screen that cannot plan any advice, NaN and infinity included (no range
    check holds for NaN)."""
    for name, value, low, what in (
        ("--total-budget-minutes", budget_minutes, 0, "a positive number"),
        ("--screen", screen, 1, "a number above 1 (a ratio of estimated step times)"),
    ):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and value > low):
            raise BadInput(f"{name} must be {what}, got {value!r}")


OUTPUTS = ("report.json", "report.md", "advice.png")  # what the advice writes into its results dir


@contextmanager
def fresh_results(results_dir: str | Path) -> Iterator[Path]:
    """The results dir, made and held (:func:`~harness.files.results_lock`: refused at once beside another run writing
    there), with an earlier advice's report removed from it."""
    root = ensure_dir(results_dir)
    with results_lock(root):
        for name in (*OUTPUTS, "probe"):
            refuse_link(root / name)
        for name in ("report.json", "report.md"):  # an earlier advice's: never read as this one's, whatever stops this
            (root / name).unlink(missing_ok=True)
        yield root


class Budget(NamedTuple):
    """What the interleaved comparisons may spend: ``minutes`` from ``t0`` in all, blocks of about ``block_seconds``, at
    most ``pairs`` pairs and ``launches`` launches per comparison."""

    t0: float
    minutes: float
    block_seconds: float
    pairs: int
    launches: int


def step_of(p: Probe) -> float:
    """The estimated step of a probe that fits."""
    assert p.step_ms is not None, "a probe that fits has an estimated step"
    return p.step_ms


def split_verdict(outcome: str, message: str, ratio: float | None, interval: tuple | None, **details) -> Verdict:
    """A split's verdict against the fastest as the advice writes it: a ratio or interval it lacks is written as null
    (``ratio``, ``lo``, ``hi``), then ``details``."""
    lacking = ({"ratio": None} if ratio is None else {}) | ({"lo": None, "hi": None} if interval is None else {})
    return Verdict(outcome, message, {**lacking, **details}, ratio=ratio, interval=interval)


def screened(
    others: list[str], fastest: str, probes: dict[str, Probe], wide: float, out: Callable[[str], None]
) -> dict[str, Verdict]:
    """The splits of ``others`` (in the order of their estimates) beyond the nearest one, estimated more than ``wide``
    times slower than ``fastest``: called slower by their estimate, without a comparison."""
    compared: dict[str, Verdict] = {}
    for s in [s for s in others[1:] if step_of(probes[s]) > wide * step_of(probes[fastest])]:
        r = step_of(probes[s]) / step_of(probes[fastest])
        compared[s] = split_verdict(
            "regression",
            f"estimated x{r:.2f} of {fastest} by the probes, beyond the screen x{wide:.2f}: not interleaved",
            r,
            None,
            screened=True,
        )
        out(
            f"{s}: estimated x{r:.2f} of {fastest} by the probes (beyond the screen, x{wide:.2f}): "
            "slower, not interleaved"
        )
    return compared


def compare_splits(
    w: Workload,
    fits: list[str],
    fastest: str | None,
    probes: dict[str, Probe],
    wide: float,
    root: Path,
    config: Callable[..., ComparisonConfig],
    budget: Budget,
    out: Callable[[str], None],
) -> tuple[dict[str, Verdict], list[str]]:
    """Each split of ``fits`` but ``fastest``, screened (:func:`screened`) or interleaved against ``fastest`` in its
    share of what is left of the budget; ``config`` makes the comparison's configuration from the settings of one
    comparison. Returns the verdicts of S/F per split and the splits whose comparison failed to measure."""
    from harness.sidebyside.run import interleave

    others = sorted((s for s in fits if s != fastest), key=lambda s: step_of(probes[s]))
    compared = screened(others, fastest, probes, wide, out)
    failed: list[str] = []
    others = [s for s in others if s not in compared]
    for i, s in enumerate(others):
        left = budget.minutes - (time.time() - budget.t0) / 60
        share = left / (len(others) - i)
        if share < 0.5:
            out(f"{s} against {fastest}: not compared, {left:.1f} min of the budget left")
            continue
        mine, theirs = step_of(probes[s]), step_of(probes[fastest])
        k = block_steps_for(max(mine, theirs), budget.block_seconds)
        n = pairs_for(share * 60, k, theirs + mine, budget.launches, budget.pairs)
        cfg = config(
            decomposition=fastest,
            decomposition_b=s,
            block_steps=k,
            pairs=n,
            launches=budget.launches,
            look_every=max(2, n // 8),
            budget_minutes=share,
            results_dir=str(root / f"{s}-vs-{fastest}"),
        )
        refuse_link(root / f"{s}-vs-{fastest}")
        made = interleave(cfg, workload=w, out=lambda line: out(f"  {line}"))
        if made.exit_code == exits.MEASUREMENT_FAILED:
            failed.append(s)
        v = made.verdict
        compared[s] = (
            split_verdict(v.outcome, v.message, v.ratio, v.interval, block_steps=k)
            if v is not None
            else split_verdict(
                "inconclusive", f"no verdict from this run (exit code {made.exit_code})", None, None, block_steps=k
            )
        )
    return compared, failed


def written(found: Findings, w: Workload, root: Path, out: Callable[[str], None]) -> Advice:
    """The advice of ``found``: its lines printed, and written to ``root`` as report.json, report.md and advice.png."""
    lines = report_lines(found, w)
    for ln in lines:
        out(ln)
    ok = found.answer.recommended and not found.failed
    advice = Advice(
        found.workload,
        found.gpu,
        found.compared,
        found.failed,
        found.sections(),
        exit_code=exits.OK if ok else exits.MEASUREMENT_FAILED,
    )
    refuse_links(*(root / name for name in OUTPUTS))  # each checked before the first is written
    write_json_atomic(root / "report.json", advice.to_json())
    write_atomic(
        root / "report.md",
        "# advise "
        + w.name
        + f" on {found.gpu}, effective batch {w.effective_batch}\n\n```\n"
        + "\n".join(lines)
        + "\n```\n",
    )
    try:
        plot(found, root / OUTPUTS[2])
    except Exception as exc:  # a plot never costs the measurements
        out(f"(no plot: {exc})")
    return advice
