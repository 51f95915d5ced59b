"""What a session ran on, as the alerts compare it: the library pins (which the interleaved A/B of the nightly judges)
and the environment around them (which nothing else judges: the driver, CUDA, the torch build, the image, the runner's
host)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.store.session import Case, Session

PINS = (
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
)  # library versions; a change of them is not an environment change
SPEC = "workload spec"  # the workload hash of a case, compared like a pin
ENVIRONMENT = (
    "driver",
    "cuda",
    "torch",
    "python",
    "image",
    "runner",
    "hostname",
    "gpu_name",
    "gpu_count",
    "gpu_clocks",
    "interconnect",
    "platform",
    "cpu",
    "cpu_count",
    "harness",
)
QUIET = (
    "harness",
)  # changes most nights (the repository's commit): named where something moved, never a line of its own


@dataclass(frozen=True)
class Change:
    """One field that differs between two sessions: its name, its value before and after (None where missing)."""

    name: str
    old: Any
    new: Any

    @property
    def quiet(self) -> bool:
        """A field that changes most nights (:data:`QUIET`)."""
        return self.name in QUIET

    def to_json(self) -> dict:
        return {"name": self.name, "old": self.old, "new": self.new}


def pins(rec: Session, case: Case | None = None) -> dict[str, Any]:
    """The library pins of a session (and the workload spec of one of its cases): what must be equal for an environment
    alert."""
    v = rec.versions or {}
    out = {lib: v.get(lib) for lib in PINS}
    if case is not None:
        out[SPEC] = case.workload_hash
    return out


def changes(before: Mapping[str, Any], after: Mapping[str, Any], keys: tuple[str, ...] = ENVIRONMENT) -> list[Change]:
    """A :class:`Change` for every field of ``keys`` that differs between two flat mappings (a missing one is None)."""
    return [Change(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]


def _environment(rec: Session) -> dict[str, Any]:
    return {k: rec.env.value(k) for k in ENVIRONMENT}


def env_changes(before: Session, after: Session) -> list[Change]:
    """How the environment of session record ``after`` differs from that of ``before``."""
    return changes(_environment(before), _environment(after))


def pin_changes(before: Session, after: Session, case_before: Case | None = None, case_after: Case | None = None):
    """How the library pins (and the cases' workload specs) differ between two sessions."""
    return changes(pins(before, case_before), pins(after, case_after), (*PINS, SPEC))


def text(chs: list[Change], quiet: bool = True) -> str:
    """``driver 580.1→590.2; image (none)→sha256:…``; the quiet fields (the harness commit) left out when ``quiet``."""
    shown = [c for c in chs if not (quiet and c.quiet)]
    return "; ".join(f"{c.name} {_short(c.old)}→{_short(c.new)}" for c in shown) or "no recorded environment change"


def _short(v) -> str:
    if v is None:
        return "(none)"
    s = str(v)
    return s if len(s) <= 40 else s[:39] + "…"
