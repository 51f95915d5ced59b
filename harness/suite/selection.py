"""Which workloads a session runs, each checked before any training, and which of them are broken.

A session names its workloads (``--workload``) or takes those that run on its GPU. Each chosen workload is checked
here, before any run: its file loads, the device can run it, its inputs on disk parse
(:func:`harness.inputs.check_inputs`) and its stored baseline, where there is one, is of its hash. A workload that fails
a check, named or not, is kept aside with its one line, so that the others still run and the broken one is reported on
its own (the pytest plugin makes it one failed item and one failed verdict of the report). Only a name that no workload
file declares is refused (:class:`SpecError`): a typo of the command line, not a broken workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import BadInput
from harness.spec import SpecError, Workload
from harness.spec_folder import load_each


@dataclass(frozen=True)
class Request:
    """What a session asks for: the workloads folder, the names (none: every workload of the GPU), the GPU, ``--steps``,
    and the baselines folder whose baselines are checked against the workloads' hashes (None: not checked, e.g. while
    recording new ones)."""

    workloads_dir: Path
    gpu: str
    names: tuple[str, ...] = ()
    steps: int | None = None
    baselines_dir: Path | None = None

    def __post_init__(self):
        if not self.gpu:
            raise BadInput("a workload selection needs the GPU it is for ('cpu' or a GPU's short name)")
        if self.steps is not None and self.steps < 1:
            raise SpecError(f"--steps must be positive, got {self.steps}")


@dataclass(frozen=True)
class Selection:
    chosen: dict[str, Workload]
    broken: dict[Path, str] = field(default_factory=dict)  # workload file -> its one line, for the workloads not run
    names: dict[Path, str] = field(default_factory=dict)  # broken workload file -> the workload name it declares


def inputs_problem(w: Workload, path: Path) -> str | None:
    """Why the inputs of ``w`` (from ``path``) on disk do not pass (:func:`harness.inputs.check_inputs`), one line
    headed by the workload file; None when they do."""
    from harness.inputs import check_inputs

    try:
        check_inputs(w)
    except SpecError as exc:
        return f"{path}: {exc}"
    return None


def problem(w: Workload, path: Path, r: Request) -> str | None:
    """Why ``w`` (from ``path``) cannot run in this session, as one line naming the file and the key; None when it
    can."""
    try:
        w.check_device(r.gpu)  # e.g. [quantization] without bitsandbytes or on the CPU: its line names the workload
    except SpecError as exc:
        return str(exc)
    if (line := inputs_problem(w, path)) is not None:
        return line
    if r.baselines_dir is not None:
        from harness.judging import baseline as bl

        try:
            bl.load(r.baselines_dir, r.gpu, w)
        except bl.MissingBaseline:
            pass
        except bl.BaselineError as exc:
            return str(exc)
    return None


def select(r: Request) -> Selection:
    """The workloads of request ``r``, those that cannot run set aside with their lines; raises SpecError for a name
    that no workload file declares."""
    loaded = load_each(r.workloads_dir)
    if r.names:
        if unknown := loaded.unknown(r.names):
            raise SpecError(
                loaded.unknown_line(unknown, f"--workload {', '.join(unknown)}: no such workload in {r.workloads_dir}")
            )
        chosen = {n: loaded.workloads[n] for n in r.names if n in loaded.workloads}
        named = {loaded.broken_file(n): n for n in r.names if n not in loaded.workloads}
        broken = {path: loaded.broken[path] for path in named}
    else:
        chosen = {n: w for n, w in loaded.workloads.items() if w.runs_on(r.gpu)}
        broken, named = dict(loaded.broken), {p: loaded.declared.get(p, p.stem) for p in loaded.broken}
    chosen = {n: w.with_overrides(max_steps=r.steps) for n, w in chosen.items()}
    for name in list(chosen):
        path = loaded.files[name]
        if (line := problem(chosen[name], path, r)) is not None:
            broken[path], named[path] = line, name
            del chosen[name]
    return Selection(chosen, broken, named)
