"""The plan of an interleaved comparison, pure: which pairs each launch serves, the order inside each pair, and the
turns that make a pair.

A **pair** is one block of each side in an order drawn per pair from a seeded RNG. At the step grain a block is
``block_steps`` optimizer steps of one side; at the micro grain the two sides take turns at single micro-batches (each
turn's order drawn as well), and a side's ``block_steps x grad_accum`` turns make its block
(:func:`blocks.merge_units`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from harness.judging import paired as pd


@dataclass(frozen=True)
class Turn:
    """One block of one side: ``k`` steps (one micro-batch when ``micro``), recorded with ``where``."""

    side: str
    k: int
    micro: bool
    where: dict


@dataclass(frozen=True)
class ComparisonPlan:
    schedule: pd.Plan  # pairs, launches, where each launch starts, the planned looks
    orders: tuple[str, ...]  # "ab" or "ba" per pair
    unit_orders: tuple[tuple[str, ...], ...] | None  # per pair, the order of each micro-batch turn (micro grain)
    block_steps: int
    micro_per_step: int  # micro-batches per optimizer step (grad_accum)

    @classmethod
    def make(
        cls, pairs: int, launches: int, look_every: int | None, block_steps: int, grain: str, grad_accum: int, seed: int
    ) -> ComparisonPlan:
        rng = random.Random(seed)
        draw = lambda: "ab" if rng.random() < 0.5 else "ba"  # noqa: E731
        orders = tuple(draw() for _ in range(pairs))
        units = block_steps * grad_accum
        unit_orders = tuple(tuple(draw() for _ in range(units)) for _ in range(pairs)) if grain == "micro" else None
        return cls(pd.Plan(pairs, launches, look_every), orders, unit_orders, block_steps, grad_accum)

    @property
    def n_units(self) -> int:
        """Turns per side in one pair."""
        return self.block_steps * self.micro_per_step if self.unit_orders is not None else 1

    def planned(self, launch: int) -> int:
        """Pairs launch ``launch`` (1-based) was planned to serve."""
        s = self.schedule
        return (s.starts[launch] if launch < s.launches else s.pairs) - s.starts[launch - 1]

    def turns(self, i: int) -> Iterator[Turn]:
        """The turns of 0-based pair ``i``, in the order they run."""
        if self.unit_orders is None:
            for pos, side in enumerate(self.orders[i], 1):
                yield Turn(
                    side,
                    self.block_steps,
                    False,
                    {"pair": i + 1, "position": pos, "order": self.orders[i], "warmup": False},
                )
            return
        for u, order in enumerate(self.unit_orders[i], 1):
            for pos, side in enumerate(order, 1):
                yield Turn(
                    side,
                    1,
                    True,
                    {
                        "pair": i + 1,
                        "position": pos,
                        "order": order,
                        "warmup": False,
                        "unit": u,
                        "units": self.n_units,
                        "micro_per_step": self.micro_per_step,
                    },
                )
