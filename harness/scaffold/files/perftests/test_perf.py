"""The suite's performance cases (one run, runtime and memory check per workload x decomposition; one ordering and one
equivalence check per workload), from the installed harness: ``pytest perftests --gpu=NAME``."""

from harness.cases import *  # noqa: F401,F403
