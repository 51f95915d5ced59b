"""Test-only work injected into side B of a comparison, sized on this machine to slow B's step by a target share.

The injected work is all that differs between the sides: side A carries the same forward hook on every LoRA layer, at 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from statistics import fmean, median

from harness.judging.blocks import pairs_of
from harness.measuring.resident.messages import BlockReport
from harness.results.block import Block

CALIBRATION_PROBE_CASTS = 4.0  # units (or casts) per LoRA forward that calibrate_injection tries first
CALIBRATION_ROUNDS = 2  # rounds per probe: the injection's own clock needs few
CALIBRATION_PROBES = 3  # 4 units, then twice the amount that the measured curve puts at the target


@dataclass(frozen=True)
class Probe:
    """One amount of injected work tried (``casts``), the share of the rest of B's step that its own clock measured
    and the B/A wall ratio beside it (the median over its rounds)."""

    casts: float
    share: float
    ratio: float


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate_injection` measured and chose, as the settings record it (``inject_calibration``): the
    ``target`` share, the clock and kind of the work, the block steps and rounds per probe, every probe, the last
    probe's amount, share and wall ratio, and the amount chosen (``casts``)."""

    target: float
    clock: str
    kind: str
    block_steps: int
    rounds: int
    probes: tuple[Probe, ...]
    probe_casts: float
    share: float
    ratio_with: float
    casts: float

    def to_json(self) -> dict:
        return asdict(self) | {"probes": [asdict(p) for p in self.probes]}


def calibrate_injection(
    workers: dict,
    k: int,
    target: float,
    record: Callable[[str, BlockReport, float | None], Block] = lambda s, rep, amt: Block.from_json(
        rep.to_json() | {"side": s, "launch": 1}
    ),
    kind: str = "host",
) -> Calibration:
    """The amount of injected work per LoRA forward (fractional; units of host work, or casts with ``kind="casts"``:
    :class:`~harness.measuring.injected_work.InjectWork`) that makes side B's step about ``target`` slower (0.05 = 5%)
    on this machine, aimed by the injection's own clock. A round is an A block (its hook at 0) and a B block at
    ``probe``, each ``k`` steps. B's worker reports the host time of its injected work per step (``inject_ms``,
    ``InjectWork.spent_s``), and the probe's ``share`` is the median over its rounds of ``inject_ms / (B's mean step -
    inject_ms)``: the work against the rest of the same block's step, so that the CPU's speed, which moves both,
    cancels. The probes walk a piecewise-linear curve through (0, 0) and every probe so far (casts cost more for the
    first of a call than for the next): 4 first, then the amount that the curve puts at the target, twice; the answer is
    the last such amount.

    Why the injection's clock and not a wall-time ratio: the B/A ratio of two blocks has the pair sigma of the
    comparison itself, so sizing by it takes many rounds and still misses by several points
    (docs/evidence/how-to-inject-a-known-slowdown/). The clock is the added step time where the step is host-bound and
    the work touches no memory that the step reads (host work; casts do). Either way the comparison's estimate is the
    measured slowdown; ``inject_ms`` of every block of B is in ``blocks.jsonl`` and the report (:func:`injected_share`).

    The injected work is all that differs between the sides: side A carries the same forward hook on every LoRA layer,
    at 0 (the command starts it so); without it B's hook calls alone would slow B as well.
    ``record(side, report, amount)`` sees every calibration block and gives it back as its :class:`Block`; each probe's
    B/A wall ratio is kept as a check."""
    a_amount = 0.0 if workers["a"].inject_work else None  # A's hook, where it has one, does no work
    probe, rounds = CALIBRATION_PROBE_CASTS, CALIBRATION_ROUNDS
    curve: list[tuple[float, float]] = [(0.0, 0.0)]
    probes: list[Probe] = []
    for _ in range(CALIBRATION_PROBES):
        shares: list[float] = []
        logs: list[float] = []
        for _ in range(rounds):
            a = record("a", workers["a"].block(k, inject=a_amount), a_amount)
            b = record("b", workers["b"].block(k, inject=probe), probe)
            inject_ms = b.inject_ms  # B's worker times its injected work in every block
            shares.append(inject_ms / max(fmean(b.step_times_ms) - inject_ms, 1e-9))
            logs.append(math.log(median(b.step_times_ms) / median(a.step_times_ms)))
        probes.append(Probe(probe, median(shares), math.exp(median(logs))))
        curve = sorted(set(curve) | {(probe, median(shares))})
        probe = min(256.0, max(0.05, _at_target(curve, target)))
    last = probes[-1]
    return Calibration(target, "own", kind, k, rounds, tuple(probes), last.casts, last.share, last.ratio, probe)


def _at_target(curve: list[tuple[float, float]], target: float) -> float:
    """The amount at which the piecewise-linear curve through ``curve`` (amount, share; sorted, with (0, 0)) reaches
    ``target``: interpolated inside the bracket that holds it, else extrapolated along the last segment that rises."""
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if y0 <= target <= y1 and y1 > y0:
            return x0 + (target - y0) * (x1 - x0) / (y1 - y0)
    rising = [(p, q) for p, q in zip(curve, curve[1:]) if q[1] > p[1]]
    if not rising:
        return 4 * max(x for x, _ in curve)  # no cost measured yet: try far more
    (x0, y0), (x1, y1) = rising[-1] if target > curve[-1][1] else rising[0]
    return max(0.0, x0 + (target - y0) * (x1 - x0) / (y1 - y0))


def injected_share(blocks: list[Block]) -> dict | None:
    """The sized injection as its own clock saw it over the measured blocks of B: the median of ``inject_ms`` / (the
    block's mean step - ``inject_ms``), the nominal slowdown to set beside the measured one; None without the clock. At
    the micro grain a block is B's side of a pair, its units merged into steps (:func:`pairs_of`)."""
    if any(x.unit is not None for x in blocks):
        blocks = [p.b for p in pairs_of(blocks)]
    b = [x for x in blocks if x.side == "b" and not x.warmup and x.inject_ms is not None]
    if not b:
        return None
    shares = [x.inject_ms / max(fmean(x.step_times_ms) - x.inject_ms, 1e-9) for x in b]
    return {"inject_ms": median(x.inject_ms for x in b), "share": median(shares), "blocks": len(b)}
