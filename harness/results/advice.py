"""What the advice returns: which micro-batch x grad-accum split of the effective batch is fastest on this machine, the
probes and the interleaved comparisons it rests on, and the TOML lines that pin it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.stored import Stored
from harness.results.verdict import Verdict


@dataclass(frozen=True)
class Advice(Stored):
    """``workload`` and ``gpu``: what was advised on; ``recommended``: the split it recommends (None when none fits);
    ``compared``: per split, its verdict against the fastest probe (outcome, ratio, interval, message; the block steps
    it ran with in ``details``); ``failed``: the splits whose comparison failed to measure; ``sections``: every other
    key of ``report.json`` (``probes``, ``answer``, ``splits``, ...); ``exit_code`` 3 when no split fits or a comparison
    failed to measure."""

    FORMAT = formats.ADVICE
    workload: str = ""
    gpu: str | None = None
    compared: Mapping[str, Verdict] = field(default_factory=dict)
    failed: tuple[str, ...] = ()
    sections: Mapping[str, Any] = field(default_factory=dict)
    exit_code: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "compared", MappingProxyType(dict(self.compared)))
        object.__setattr__(self, "failed", tuple(self.failed))
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))

    @property
    def recommended(self) -> str | None:
        """The split the advice recommends, or None when none fits."""
        answer = self.sections.get("answer")
        return answer.get("recommended") if isinstance(answer, Mapping) else None

    def content(self) -> dict:
        return {
            "workload": self.workload,
            "gpu": self.gpu,
            **self.sections,
            "compared": {s: v.to_json() for s, v in self.compared.items()},
            "failed": list(self.failed),
        }

    @classmethod
    def of(cls, content: dict, path: Path | None = None, exit_code: int = 0) -> Advice:
        rest = {k: v for k, v in content.items() if k != formats.KEY}
        made = {s: Verdict.from_json(v) for s, v in (rest.pop("compared", None) or {}).items()}
        return cls(
            str(rest.pop("workload", "")),
            rest.pop("gpu", None),
            {s: v for s, v in made.items() if v is not None},
            tuple(rest.pop("failed", None) or ()),
            rest,
            exit_code,
        )
