"""pytest-benchmark bridge through its public API only: a replay timer and ``benchmark.pedantic``.

pytest-benchmark has no API for timings measured elsewhere. A timer passed with the benchmark
marker, ``@pytest.mark.benchmark(timer=REPLAY)``, is read before and after each round; ``pedantic``
never calibrates, so each round's duration is exactly the next replayed step time.
"""

from __future__ import annotations


class ReplayClock:
    """A clock that only moves when :meth:`step` replays the next measured duration (seconds)."""

    __name__ = "replay_clock"  # pytest-benchmark prints the timer's name

    def __init__(self) -> None:
        self.now = 0.0
        self._pending: list[float] = []

    def __call__(self) -> float:
        return self.now

    def load(self, seconds: list[float]) -> int:
        self._pending = list(seconds)
        return len(self._pending)

    def step(self) -> None:
        self.now += self._pending.pop(0)


REPLAY = ReplayClock()


def record(benchmark, judge, workload: str, decomp: str) -> None:
    """Replay the case's steady-state step times (all runs) as rounds, and attach extra_info."""
    runs = judge.runs(workload, decomp)
    steps = [t / 1000.0 for r in runs for t in r.steady_step_times_ms]
    if not steps:
        return
    benchmark.group = workload
    benchmark.extra_info.update(
        {
            "decomposition": decomp,
            "runs": len(runs),
            "unit": "seconds per optimizer step (steady state)",
            "train_runtime_s": [r.train_runtime_s for r in runs],
            "step_time_median_ms": [r.step_time_median_ms for r in runs],
            "peak_reserved_bytes": [r.peak_reserved_bytes for r in runs],
            "peak_allocated_bytes": [r.peak_allocated_bytes for r in runs],
            "tokens_per_s": [r.tokens_per_s for r in runs],
            "versions": runs[0].versions,
            "workload_hash": runs[0].workload_hash,
        }
    )
    rounds = REPLAY.load(steps)
    benchmark.pedantic(REPLAY.step, rounds=rounds, iterations=1, warmup_rounds=0)
