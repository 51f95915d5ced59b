"""The checks across the decompositions of one workload: an order of two decompositions that the baseline establishes
must not be reversed with confidence now (:class:`OrderingCheck`), and all of them, training on the same samples per
step, must agree on their per-step losses (:class:`EquivalenceCheck`). Pure, like :mod:`harness.judging.stats`, whose
estimates and verdicts they use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.judging.stats import Verdict, holm, log_ratio, reachable
from harness.judging.thresholds import ALPHA


@dataclass(frozen=True)
class OrderingCheck:
    """A pair the baseline orders with confidence must not be reversed with confidence now.

    Established in the baseline: two-sided Welch on logs at alpha. Reversed now: one-sided at alpha,
    Holm-corrected over the asserted pairs. Pairs the baseline cannot tell apart are ties, not asserted.
    """

    alpha: float = ALPHA

    def decide(self, workload: str, base: dict[str, Sequence[float]], cur: dict[str, Sequence[float]]) -> list[Verdict]:
        ids = [d for d in base if d in cur]
        ties, asserted = [], []  # asserted: (fast, slow, baseline slow/fast, current estimate of slow/fast)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                e = log_ratio(base[a], base[b], self.alpha / 2)  # ratio b/a in the baseline
                if reachable(self.alpha, len(base[a]), len(base[b])) and e.p_above(1.0) < self.alpha / 2:
                    asserted.append((a, b, e.ratio, log_ratio(cur[a], cur[b], self.alpha)))
                elif reachable(self.alpha, len(base[a]), len(base[b])) and e.p_below(1.0) < self.alpha / 2:
                    asserted.append((b, a, 1 / e.ratio, log_ratio(cur[b], cur[a], self.alpha)))
                else:
                    ties.append((a, b, e))
        rejected = holm([now.p_below(1.0) for *_, now in asserted], self.alpha) if asserted else []
        out = []
        for (fast, slow, was, now), rev in zip(asserted, rejected):
            case = f"{workload}:{fast}<{slow}"
            details = {
                "faster": fast,
                "slower": slow,
                "ratio_base": was,
                "ratio_now": now.ratio,
                "p_reversed": now.p_below(1.0),
            }
            if rev:
                out.append(
                    Verdict(
                        "ordering",
                        case,
                        "fail",
                        f"ORDER REVERSED: baseline has {fast} faster than {slow} (x{was:.3f}); now {slow}/{fast} "
                        f"= x{now.ratio:.3f} (p={now.p_below(1.0):.2g}, Holm over {len(asserted)} pairs)",
                        details,
                    )
                )
            elif now.ratio < 1:
                out.append(
                    Verdict(
                        "ordering",
                        case,
                        "inconclusive",
                        f"{fast} faster than {slow} in the baseline (x{was:.3f}); "
                        f"now x{now.ratio:.3f}, not confidently reversed",
                        details,
                    )
                )
            else:
                out.append(
                    Verdict(
                        "ordering",
                        case,
                        "pass",
                        f"{fast} faster than {slow}: {slow}/{fast} baseline x{was:.3f}, now x{now.ratio:.3f}",
                        details,
                    )
                )
        for a, b, e in ties:
            out.append(
                Verdict(
                    "ordering",
                    f"{workload}:{a}~{b}",
                    "tie",
                    f"{a} and {b}: the baseline cannot tell them apart ({b}/{a} x{e.ratio:.3f}, CI [{e.lo:.3f}, "
                    f"{e.hi:.3f}]); not asserted",
                    {"ratio_base": e.ratio},
                )
            )
        return out


LOSS_RTOL = {"fp32": 1e-3, "bf16": 3e-2, "fp16": 1e-2}


@dataclass(frozen=True)
class EquivalenceCheck:
    """All decompositions of a workload train on the same samples per step, so per-step losses must agree."""

    rtol: float

    def decide(self, workload: str, losses: dict[str, Sequence[float]]) -> Verdict:
        ids = list(losses)
        ref = ids[0]
        worst, where = 0.0, None
        for d in ids[1:]:
            a, b = losses[ref], losses[d]
            if len(a) != len(b):
                return Verdict("equivalence", workload, "fail", f"{ref} ran {len(a)} steps but {d} ran {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                err = abs(x - y) / max(abs(x), 1e-12) if math.isfinite(x) and math.isfinite(y) else math.inf
                if err > worst:
                    worst, where = err, (d, i + 1, x, y)
        detail = {"max_rel_diff": worst, "rtol": self.rtol}
        if worst > self.rtol:
            d, step, x, y = where
            return Verdict(
                "equivalence",
                workload,
                "fail",
                f"losses differ: step {step}, {ref} {x:.6g} vs {d} {y:.6g} (rel {worst:.2g} > {self.rtol:g}); "
                "the decompositions did different work",
                detail,
            )
        return Verdict(
            "equivalence",
            workload,
            "pass",
            f"per-step losses of {', '.join(ids)} agree (max rel diff {worst:.2g} <= {self.rtol:g})",
            detail,
        )
