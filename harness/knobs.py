"""The suite's environment variables, declared once. Everything a command does is set on its command line
(:mod:`harness.options`); these few come from the environment because a runner sets them for every command it runs, or
because only the self-tests use them. ``docs/environment.md`` lists them, and a self-test keeps every read of a
``HARNESS_`` variable here."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    """One environment variable: its name, what it does, and whether only the self-tests set it."""

    name: str
    help: str
    test_only: bool = False

    def get(self) -> str | None:
        """Its value, stripped; None where it is unset or empty."""
        value = os.environ.get(self.name, "").strip()
        return value or None


ROOT = Knob(
    "HARNESS_ROOT",
    "the project whose workloads/, baselines/ and perf-results/ the commands' relative defaults name "
    "(default: the current directory where it holds workloads/)",
)
MACHINE = Knob(
    "HARNESS_MACHINE",
    "a runner's own name for its class of machine (l4-gcp), under which its results and baselines are filed in place "
    "of the detected GPU's short name",
)
CACHE_DIR = Knob(
    "HARNESS_CACHE_DIR",
    "where resolved model architectures are cached (default: a folder of this user's in the temporary directory)",
)
FAULTS = Knob("HARNESS_FAULTS", "faults injected into runs by case and repeat (1x4#1=sigkill@2)", test_only=True)
INJECT_KIND = Knob("HARNESS_INJECT_KIND", "the kind of work --inject-work adds (casts by default)", test_only=True)

KNOBS = (ROOT, MACHINE, CACHE_DIR, FAULTS, INJECT_KIND)
