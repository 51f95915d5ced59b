"""``harness.api`` refuses a bad argument before it does anything, with one line naming the call and the argument
(``harness.errors.UsageError``, a ``BadInput``): never a TypeError, AttributeError or IndexError from deep inside, and
never a probe trained before a budget that cannot plan anything is refused."""

import math
from pathlib import Path

import pytest

from harness import api
from harness.errors import BadInput, UsageError

ROOT = Path(__file__).resolve().parents[1]
W = {"gpu": "cpu", "workloads_dir": ROOT / "workloads"}


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda d: api.run_case(5, results_dir=d, **W), "api.run_case: workload must be a string, got 5"),
        (
            lambda d: api.run_case("tiny-qwen3", "4x1", steps="10", results_dir=d, **W),
            "api.run_case: steps must be an integer or None, got '10'",
        ),
        (lambda d: api.run_case("tiny-qwen3", repeat=2, results_dir=d, **W), "unexpected keyword argument 'repeat'"),
        (
            lambda d: api.census("tiny-qwen3", "4x1", results_dir=d, **W),
            "api.census: decompositions must be a list of strings or None, got '4x1'",
        ),
        (lambda d: api.judge(str(d)), "api.judge: results_dirs must be a list of strings or paths"),
        (lambda d: api.judge([]), "api.judge: results_dirs is empty"),
        (lambda d: api.side_by_side("tiny-qwen3"), "api.side_by_side: config must be a ComparisonConfig"),
        (lambda d: api.bisect({"workload": "tiny-qwen3"}), "api.bisect: config must be a BisectConfig"),
        (lambda d: api.confirm(5), "api.confirm: report must be a string or a path, got 5"),
        (
            lambda d: api.advise("tiny-qwen3", budget_minutes="10", results_dir=d, **W),
            "api.advise: budget_minutes must be a number, got '10'",
        ),
        (lambda d: api.run_case("tiny-qwen3", out="print", results_dir=d, **W), "out must be a function"),
    ],
)
def test_an_argument_of_the_wrong_type_is_one_line(tmp_path, no_training, call, says):
    with pytest.raises(UsageError) as err:
        call(tmp_path / "out")
    assert says in str(err.value) and "\n" not in str(err.value), err.value
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("budget", [math.nan, math.inf, 0, -1])
def test_advise_refuses_a_budget_that_plans_nothing_before_any_probe(tmp_path, no_training, budget):
    with pytest.raises(BadInput, match="--total-budget-minutes must be a positive number, got"):
        api.advise("tiny-qwen3", budget_minutes=budget, results_dir=tmp_path / "out", **W)
    assert not (tmp_path / "out").exists()
