"""The command that reproduces a verdict on a runner of its GPU, from the verdict's kind and case: the one place that
writes it. Reports store it as the verdict's ``repro`` (the suite's report.json, an interleaved comparison's, the
store's alerts for the regression-issue script); the issue script and ``python -m harness alert`` show it.

* runtime, memory, and a timing alert of the store (``env-timing``): the case's timed runs,
  ``pytest perftests --gpu=G --workload W -k MxG --repeats 5``;
* work, and a census alert of the store (``env-census``): the case's census,
  ``pytest perftests --gpu=G --workload W --census -k MxG``;
* ordering, equivalence (their case is a workload): every split of the workload;
* interleaved: ``python -m harness interleave`` of the case on ``gpu``, with the two interpreters it compared (two
  splits against each other, ``W-MxG-vs-MxG``, are the advisor's: no command).

A case's names come from a report, which anyone who can write the file may have made: a command is written only of
names a workload or a split can have (an interpreter's path is quoted for the shell), else there is none.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

REPEATS = 5  # timed runs per split, --repeats' default: the nightly's single run is too few to see a step time by
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a workload's or GPU's name: nothing a shell would expand
SPLIT = r"[1-9][0-9]*x[1-9][0-9]*(?:x[1-9][0-9]*)?"  # a decomposition id: micro x grad-accum [x world size]
CASE = re.compile(rf"(?P<workload>.+)-(?P<split>{SPLIT})")
PAIR = re.compile(rf".+-{SPLIT}-vs-{SPLIT}")  # two splits of one workload, B's against A's
TIMED = ("runtime", "memory", "env-timing")
CENSUS = ("work", "env-census")
WORKLOAD = ("ordering", "equivalence")


def split_case(case: str) -> tuple[str, str] | None:
    """``(workload, split)`` of a case id ``W-MxG``; None when it is not one."""
    case = case.strip()
    m = CASE.fullmatch(case)
    return (m["workload"], m["split"]) if m and NAME.fullmatch(m["workload"]) and not PAIR.fullmatch(case) else None


def _cases(case: str) -> list[tuple[str, str]] | None:
    """The cases of a store alert's case, ``W-MxG[, W-MxG...] since SESSION``; None when any is not a case id."""
    subject = case.split(" since ")[0]
    found = [split_case(c) for c in subject.split(",")]
    cases = [c for c in found if c is not None]
    return cases if cases and len(cases) == len(found) else None


def _pytest(gpu: str, cases: Sequence[tuple[str, str | None]], census: bool) -> str:
    workloads = list(dict.fromkeys(w for w, _ in cases))
    splits = list(dict.fromkeys(s for _, s in cases if s))
    words = ["pytest", "perftests", f"--gpu={gpu}", *(x for w in workloads for x in ("--workload", w))]
    words += ["--census"] if census else []
    words += ["-k", shlex.quote(" or ".join(splits))] if splits else []
    return " ".join(words + ([] if census else ["--repeats", str(REPEATS)]))


def _interleave(gpu: str, case: str, python_a: str | None, python_b: str | None) -> str | None:
    if not (c := split_case(case)):
        return None  # neither a case id nor two splits of a workload against each other (the advisor's comparison)
    words = ["python", "-m", "harness", "interleave", "--gpu", gpu, "--workload", c[0], "--decomposition", c[1]]
    words += ["--python-a", shlex.quote(python_a)] if python_a else []
    words += ["--python-b", shlex.quote(python_b)] if python_b else []
    return " ".join(words)


def repro(kind: str, case: str, gpu: str, python_a: str | None = None, python_b: str | None = None) -> str | None:
    """The command that reproduces a verdict of ``kind`` on ``case`` on a runner of ``gpu`` (a short name such as l4,
    or cpu); ``python_a`` and ``python_b``: the interpreters an interleaved verdict compared. None for a kind or case
    it has no command for."""
    if not isinstance(gpu, str) or not NAME.fullmatch(gpu) or not isinstance(case, str):
        return None
    if kind == "bad-workload":  # the one line that says why it cannot run, before any training
        return f"pytest perftests --gpu={gpu} --workload {case} --collect-only" if NAME.fullmatch(case) else None
    if kind in WORKLOAD:
        return _pytest(gpu, [(case, None)], census=False) if NAME.fullmatch(case) else None
    if kind == "interleaved":
        return _interleave(gpu, case, python_a, python_b)
    if kind in TIMED or kind in CENSUS:
        cases = _cases(case) if kind.startswith("env-") else [c] if (c := split_case(case)) else None
        return _pytest(gpu, cases, census=kind in CENSUS) if cases else None
    return None
