import math

import pytest

from harness.judging.decomposition_checks import EquivalenceCheck, OrderingCheck
from harness.judging.stats import (
    MemoryCheck,
    RuntimeCheck,
    Sample,
    holm,
    log_ratio,
    mannwhitney_min_p,
    reachable,
)


def test_log_ratio_interval_contains_truth_and_is_symmetric_in_logs():
    base = [100, 102, 98, 101, 99]
    cur = [110, 112, 108, 111, 109]
    e = log_ratio(base, cur, 0.05)
    assert e.lo < 1.10 < e.hi
    assert math.isclose(math.log(e.ratio) - math.log(e.lo), math.log(e.hi) - math.log(e.ratio))
    assert e.p_above(1.0) < 1e-4 and e.p_below(1.0) > 0.999


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]
    assert holm([0.2, 0.001], 0.05) == [False, True]


def test_mannwhitney_reachability_matches_asv_trap():
    assert math.isclose(mannwhitney_min_p(4, 4), 0.0286, abs_tol=1e-3)
    assert math.isclose(mannwhitney_min_p(6, 6), 0.00216, abs_tol=1e-4)
    assert mannwhitney_min_p(6, 6) > 0.002  # asv's p < 0.002 can never flag at 6 vs 6
    assert not reachable(0.05, 1, 5) and reachable(0.05, 2, 2)


def test_runtime_outcomes():
    base = [100.0, 101, 99, 100.5, 99.5]
    chk = RuntimeCheck(alpha=0.05, threshold=0.05)
    v = chk.decide(
        {
            "same": (base, [100.2, 99.8, 100.4, 99.6, 100.1]),
            "slow": (base, [120.0, 121, 119, 120.5, 119.5]),
            "fast": (base, [80.0, 81, 79, 80.5, 79.5]),
            "noisy": (base, [95.0, 115, 100, 108, 90]),
            "one": (base, [130.0]),
        }
    )
    assert v["same"].outcome == "pass"
    assert v["slow"].outcome == "regression" and "x1.200" in v["slow"].message and "CI [" in v["slow"].message
    assert v["fast"].outcome == "improvement" and "--update-baselines" in v["fast"].message
    assert v["noisy"].outcome == "inconclusive"
    assert v["one"].outcome == "inconclusive" and "cannot reach alpha" in v["one"].message
    assert v["slow"].failed and not v["noisy"].failed and not v["same"].failed


def test_holm_is_applied_over_the_session():
    base = [100.0, 101, 99, 100.5, 99.5]
    borderline = [107.0, 108.5, 106, 108, 107.5]
    alone = RuntimeCheck(0.05, 0.05).decide({"a": (base, borderline)})["a"]
    crowd = RuntimeCheck(0.05, 0.05).decide({f"c{i}": (base, borderline if i == 0 else base) for i in range(50)})["c0"]
    assert alone.details["p_regression"] == crowd.details["p_regression"]
    assert "Holm over 50" in crowd.details["correction"]
    assert alone.outcome == "regression" and crowd.outcome != "regression"


def test_ordering_asserts_only_established_pairs():
    base = {"1x4": [1700, 1720, 1690, 1710, 1705], "2x2": [460, 470, 455, 465, 462], "4x1": [458, 468, 463, 455, 470]}
    same = OrderingCheck(0.05).decide("w", base, base)
    outcomes = {v.case: v.outcome for v in same}
    assert outcomes["w:2x2<1x4"] == "pass" and outcomes["w:4x1<1x4"] == "pass"
    assert outcomes["w:2x2~4x1"] == "tie"
    flipped = dict(base, **{"1x4": [400, 405, 398, 402, 401]})
    bad = {v.case: v.outcome for v in OrderingCheck(0.05).decide("w", base, flipped)}
    assert bad["w:4x1<1x4"] == "fail" and bad["w:2x2<1x4"] == "fail"


def test_memory_threshold_is_max_of_relative_and_absolute():
    gib = 2**30
    chk = MemoryCheck(rel=0.02, abs_bytes=64 * 2**20)
    assert chk.decide("c", [4 * gib], [4 * gib + 60 * 2**20]).outcome == "pass"  # 60 MiB < max(82 MiB, 64 MiB)
    assert chk.decide("c", [4 * gib], [4 * gib + 90 * 2**20]).outcome == "fail"
    assert chk.decide("c", [1 * gib], [1 * gib + 63 * 2**20]).outcome == "pass"  # 2% of 1 GiB < 64 MiB floor


def test_equivalence():
    a = [2.0, 1.9, 1.8]
    assert EquivalenceCheck(1e-3).decide("w", {"1x4": a, "4x1": [2.0, 1.9000001, 1.8]}).outcome == "pass"
    bad = EquivalenceCheck(1e-3).decide("w", {"1x4": a, "4x1": [2.0, 1.7, 1.8]})
    assert bad.outcome == "fail" and "step 2" in bad.message
    assert EquivalenceCheck(1e-3).decide("w", {"1x4": a, "4x1": a[:2]}).outcome == "fail"


def test_sample_summary():
    s = Sample((1.0, 2.0, 3.0))
    assert (s.median, s.min, s.max) == (2.0, 1.0, 3.0) and math.isclose(s.cv, 0.5)
    assert Sample((1.0,)).cv is None


def test_machine_ratio_is_a_prediction_interval_over_machines():
    from harness.judging.stats import estimate, machine_ratio

    # two machines 20% apart, each quiet inside: run-level Welch would call the session "known"; it is not
    groups = [[700.0, 705, 698], [890.0, 880, 895]]
    e = machine_ratio(groups, [800.0, 802, 798], 0.05)
    assert e.unit == "machine" and e.machines == 2 and e.df == 1 and e.n_base == 6
    k_means = [sum(math.log(v) for v in g) / 3 for g in groups]
    assert math.isclose(e.se, abs(k_means[0] - k_means[1]) / math.sqrt(2) * math.sqrt(1.5))
    assert e.lo < 0.5 and e.hi > 1.5  # one degree of freedom: nothing can be told apart yet
    assert estimate([[100.0, 101], [99.0, 100]], [100.0, 100.5], 0.05).unit == "machine"
    one = estimate([[100.0, 101, 99]], [100.0, 100.5], 0.05)  # one machine: the run stays the unit
    assert one.unit == "run" and one.n_base == 3
    v = RuntimeCheck(0.05, 0.05).decide({"c": (groups, [1600.0, 1610, 1590])})["c"]
    assert "unit: machine; the baseline spans 2 machines" in v.message and v.details["unit"] == "machine"


def test_smallest_flagged_is_where_the_verdict_flips():
    from harness.judging.stats import smallest_flagged

    groups = [[400.0, 410, 405], [440.0, 445, 436]]
    edge = smallest_flagged(groups, 0.05, 0.05)
    base = math.exp(sum(sum(math.log(v) for v in g) / 3 for g in groups) / 2)
    chk = RuntimeCheck(0.05, 0.05)
    assert chk.decide({"c": (groups, [base * edge * 1.01] * 3)})["c"].outcome == "regression"
    assert chk.decide({"c": (groups, [base * edge * 0.99] * 3)})["c"].outcome == "inconclusive"


@pytest.mark.parametrize("seed", range(5))
def test_welch_interval_matches_scipy(seed):
    """scipy as the oracle: the hand-written Welch on logs gives scipy's t, df, one-sided p and interval."""
    import numpy as np
    from scipy import stats as st

    rng = np.random.default_rng(seed)
    base, cur = np.exp(rng.normal(5, 0.05, 5 + seed)), np.exp(rng.normal(5.03, 0.08, 4 + 2 * seed))
    e = log_ratio(base.tolist(), cur.tolist(), 0.05)
    ref = st.ttest_ind(np.log(cur), np.log(base), equal_var=False, alternative="greater")
    assert e.log_diff / e.se == pytest.approx(ref.statistic) and e.df == pytest.approx(ref.df)
    assert e.p_above(1.0) == pytest.approx(ref.pvalue)
    lo, hi = st.ttest_ind(np.log(cur), np.log(base), equal_var=False).confidence_interval(0.90)
    assert (e.lo, e.hi) == pytest.approx((math.exp(lo), math.exp(hi)))
