"""The baseline store: ``baselines/<gpu>/<workload>.json``, human-readable and diff-friendly.

A baseline holds the workload spec and hash, the environment it was recorded in, its provenance
(measured by this suite or imported from a published source), its thresholds, and per
decomposition the run-level samples plus each run's steady-state step times. Loading refuses, with
one line that says what to do, a missing file, an unreadable one, a wrong schema, a key of the wrong type
or out of range (:mod:`harness.judging.baseline_schema`: finite positive step times, thresholds and alpha in range, a
run to compare against per decomposition), another GPU and another workload hash (naming the fields that changed).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.files import write_atomic
from harness.judging.baseline_schema import problem
from harness.judging.census_diff import normalize
from harness.judging.thresholds import ALPHA, MEMORY_ABS_MIB, MEMORY_REL
from harness.record import median_phases
from harness.results.baseline import (
    SCHEMA,
    BaselineCensus,
    BaselineDecomposition,
    BaselineFile,
    BaselineRun,
    BaselineWorkload,
    Provenance,
)
from harness.results.run import Run, plain
from harness.spec import Decomposition, Workload, changed_fields
from harness.values import load_json

RUN_KEYS = (
    "step_time_median_ms",
    "train_runtime_s",
    "peak_reserved_bytes",
    "peak_allocated_bytes",
    "tokens_per_s",
    "host_probe",
)
PEAK_KEYS = ("peak_reserved_bytes", "peak_allocated_bytes")  # kept with a census run too
# kernel_time: the practical threshold of the census's GPU kernel time per optimizer step (its noise is far
# below wall time's: docs/evidence/are-census-counts-deterministic/); census counts are compared exactly
DEFAULT_THRESHOLDS = {
    "alpha": ALPHA,
    "runtime": 0.05,
    "memory_rel": MEMORY_REL,
    "memory_abs_mib": MEMORY_ABS_MIB,
    "kernel_time": 0.005,
}
# CPU runners share cores with everything else; a looser practical threshold keeps false alarms away.
GPU_DEFAULTS = {"cpu": {"runtime": 0.10}}
MIN_REPEATS = 5


def default_thresholds(gpu: str) -> dict[str, float]:
    """The thresholds a new baseline of ``gpu`` gets."""
    return {**DEFAULT_THRESHOLDS, **GPU_DEFAULTS.get(gpu, {})}


@dataclass(frozen=True)
class Thresholds:
    """The thresholds a baseline is judged with: ``alpha`` (the level of its tests), ``runtime`` (the practical
    threshold of a runtime regression, 0.05 is +5%), ``memory_rel`` and ``memory_abs_mib`` (of a memory regression:
    both must be exceeded) and ``kernel_time`` (of the census's GPU kernel time per step)."""

    alpha: float
    runtime: float
    memory_rel: float
    memory_abs_mib: float
    kernel_time: float

    @classmethod
    def of(cls, gpu: str, stored: Mapping[str, float] | None = None) -> Thresholds:
        """The defaults of ``gpu`` with the ones a baseline file sets (its ``thresholds``, checked by the loader)."""
        return cls(**{**default_thresholds(gpu), **(stored or {})})


class BaselineError(Exception):
    """A baseline cannot be used. ``str(err)`` is one line: what is wrong and what to do."""


class MissingBaseline(BaselineError):
    pass


class BadBaseline(BaselineError):
    """A stored baseline that is broken (unreadable, another schema, a key missing, a bad value, filed under another
    GPU): bad input, refused before any run, unlike one that is missing or of another version of its workload."""


def path_for(root: str | Path, gpu: str, workload: str) -> Path:
    return Path(root) / gpu / f"{workload}.json"


@dataclass(frozen=True)
class Baseline:
    """A stored baseline (``data``, read from ``path``), or one made of other runs for a comparison."""

    path: Path
    data: BaselineFile

    @property
    def gpu(self) -> str:
        return self.data.gpu

    @property
    def imported(self) -> bool:
        return self.data.provenance.kind == "imported"

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds.of(self.gpu, self.data.thresholds)

    @property
    def env(self) -> dict:
        return plain(self.data.env) or {}

    def decompositions(self) -> list[str]:
        return list(self.data.decompositions)

    def _entry(self, decomp: str) -> BaselineDecomposition:
        """The entry of ``decomp``; an empty one where the baseline has none."""
        return self.data.decompositions.get(decomp) or BaselineDecomposition()

    def run_ids(self) -> set[str]:
        """The ids of the timed runs the baseline was recorded from."""
        return {r.run_id for d in self.data.decompositions.values() for r in d.runs if r.run_id is not None}

    def phases(self, decomp: str) -> dict[str, float] | None:
        """Median over the baseline's runs of each phase (ms per optimizer step); None if no run recorded phases."""
        return median_phases([plain(r.phases_ms) for r in self._entry(decomp).runs])

    def values(self, decomp: str, key: str, census: bool = False) -> list[Any]:
        """The timed runs' values of the field ``key`` (``step_time_median_ms``, ...), or (``census``) the census
        runs' (their peak memory, say)."""
        entry = self._entry(decomp)
        runs: tuple[BaselineRun | BaselineCensus, ...] = (entry.census or ()) if census else entry.runs
        return [v for r in runs if (v := getattr(r, key)) is not None]

    def grouped(self, decomp: str, key: str) -> list[list[float]]:
        """``values`` split by the machine each run was made on (one group when the baseline records none)."""
        out: dict[str | None, list[float]] = {}
        for r in self._entry(decomp).runs:
            if (v := getattr(r, key)) is not None:
                out.setdefault(r.machine, []).append(v)
        return list(out.values())

    def runtime_metric(self, decomp: str) -> str:
        """The metric runtime verdicts use: steady-state step time where recorded, else train_runtime."""
        return "step_time_median_ms" if self.values(decomp, "step_time_median_ms") else "train_runtime_s"

    def census(self, decomp: str) -> list[dict]:
        """The censuses recorded for ``decomp`` (one per census run), each with its ``machine``."""
        return [dict(normalize(plain(c.census)) or {}, machine=c.machine) for c in self._entry(decomp).census or ()]

    def census_grouped(self, decomp: str, key: str) -> list[list[float]]:
        """A census value (e.g. ``kernel_ms``) of each census run, grouped by machine."""
        out: dict[str | None, list[float]] = {}
        for c in self._entry(decomp).census or ():
            if (v := (normalize(plain(c.census)) or {}).get(key)) is not None:
                out.setdefault(c.machine, []).append(v)
        return list(out.values())

    def losses(self, decomp: str) -> list[float | None] | None:
        losses = self._entry(decomp).losses
        return list(losses) if losses is not None else None


def load(root: str | Path, gpu: str, workload: Workload) -> Baseline:
    """Load and check the baseline of ``workload`` on ``gpu``. Raises :class:`BaselineError`."""
    path = path_for(root, gpu, workload.name)
    record = (  # the command that records one: the runs a first baseline needs, with its census
        f"pytest perftests --gpu={gpu} --workload {workload.name} --repeats {MIN_REPEATS} --census --update-baselines"
    )
    if not path.exists():
        raise MissingBaseline(f"no baseline for {workload.name} on {gpu} ({path}); record one with `{record}`")
    try:
        data = load_json(path.read_text())
    except (OSError, ValueError) as exc:  # not JSON, nested too deep, a number of too many digits, not UTF-8
        raise BadBaseline(
            f"baseline {path} is unreadable ({type(exc).__name__}: {exc}); restore it from git or record a new one"
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise BadBaseline(
            f"baseline {path} has schema {got!r}, this suite reads schema {SCHEMA}; "
            "record a new one with --update-baselines"
        )
    for key in ("gpu", "workload", "provenance", "decompositions"):
        if key not in data:
            raise BadBaseline(f"baseline {path} lacks '{key}'; restore it from git or record a new one")
    if (why := problem(data)) is not None:
        raise BadBaseline(
            f"baseline {path}: {why}; correct it, restore it from git or record a new one with --update-baselines"
        )
    base = BaselineFile.from_json(data)
    if base.gpu != gpu:
        raise BadBaseline(
            f"baseline {path} was recorded on {base.gpu!r}, not {gpu!r}; "
            f"move it to baselines/{base.gpu}/ or record one on {gpu}"
        )
    if base.workload.hash != workload.hash:
        diff = changed_fields(plain(base.workload.spec) or {}, workload.to_dict())
        raise BaselineError(
            f"baseline {path} is for another version of {workload.name} "
            f"(hash {base.workload.hash} != {workload.hash}): "
            f"{'; '.join(diff) or 'fields unknown'}; rerun with the baseline's settings or record a new baseline "
            f"with `{record}`"
        )
    return Baseline(path, base)


def _compact(obj: Any) -> str:
    """JSON with two-space indent but lists of numbers on one line, so diffs stay readable."""
    text = json.dumps(obj, indent=2)
    return (
        re.sub(
            r"\[\s+([-+0-9.eE,\s]+?)\s+\]",
            lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
            text,
        )
        + "\n"
    )


def unique_runs(records: list[Run], workload: str) -> list[Run]:
    """``records`` with each run once (by ``run_id``, the first kept): one results dir passed twice (``D D/ D/.``), or
    a copy of it, adds no runs, so a repeat minimum cannot be met by repetition. Raises BaselineError for two different
    records of one run id (the machine label, taken from the results dir's name, aside)."""
    seen: dict = {}
    out = []
    for r in records:
        rid = r.run_id or None
        if rid is not None and rid in seen:
            if replace(r, machine=None) != replace(seen[rid], machine=None):
                raise BaselineError(
                    f"refusing to record a baseline for {workload}: run {rid} is recorded twice with different values; "
                    "pass each results dir once and leave out edited copies"
                )
            continue
        seen[rid] = r
        out.append(r)
    return out


def record_problem(r: Run) -> str | None:
    """Why a run record cannot go into a baseline (a key it is built from missing or of the wrong type), or None."""
    if not (r.run_id and isinstance(r.run_id, str)) or not (r.decomposition_id and isinstance(r.decomposition_id, str)):
        return "run_id or decomposition_id is not a string"
    if r.is_census:
        return None
    if r.detail("census") is not None:
        return "census is not an object"
    steps, warm = r.step_times_ms, r.warmup_steps
    if not (isinstance(steps, tuple) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in steps)):
        return "step_times_ms is not a list of numbers"
    if not (isinstance(warm, int) and not isinstance(warm, bool) and warm >= 0):
        return f"warmup_steps is {warm!r}, not a whole number >= 0"
    return None


def check_runs(
    workload: Workload, records: list[Run], min_repeats: int = MIN_REPEATS, require_all: bool = True
) -> None:
    """Refuse to record a baseline from failed runs or too few repeats (each run counted once). Raises BaselineError."""
    failed = [r for r in records if not r.ok]
    if failed:
        kinds = ", ".join(sorted({f"{r.decomposition_id}: {r.status}" for r in failed}))
        raise BaselineError(
            f"refusing to record a baseline for {workload.name}: {len(failed)} run(s) failed ({kinds}); "
            "fix them and rerun"
        )
    profiled = [r for r in records if r.profile_steps or r.inject_slowdown or r.inject_work]
    if profiled:
        raise BaselineError(
            f"refusing to record a baseline for {workload.name}: {len(profiled)} run(s) were profiled or had injected "
            "slowdown or work; record from plain runs"
        )
    records = [r for r in unique_runs(records, workload.name) if not r.is_census]
    ran = {r.decomposition_id for r in records}
    for d in workload.decompositions:
        if not require_all and d.id not in ran:
            continue
        n = sum(1 for r in records if r.decomposition_id == d.id)
        if n < min_repeats:
            raise BaselineError(
                f"refusing to record a baseline for {workload.name}: "
                f"{d.id} has {n} run(s), at least {min_repeats} needed; rerun with --repeats {min_repeats}"
            )


def _run_row(r: Run) -> BaselineRun:
    """A timed run as a baseline keeps it: its ids, host and machine, the run keys, its steady step times and phases."""
    return BaselineRun(
        run_id=r.run_id,
        session_id=r.session_id,
        host=r.hostname,
        machine=r.machine_id,
        **{k: plain(getattr(r, k)) for k in RUN_KEYS},
        steady_step_times_ms=tuple(round(x, 3) for x in r.steady_step_times_ms),
        phases_ms=r.phase_medians(),
    )


def _decomposition(d: Decomposition, records: list[Run]) -> BaselineDecomposition | None:
    """The baseline entry of decomposition ``d``: its timed runs, the first one's losses and its census runs whose
    window fit; None where ``records`` hold no run of it."""
    rs = [r for r in records if r.decomposition_id == d.id and not r.is_census]
    if not rs and not any(r.decomposition_id == d.id for r in records):
        return None
    census = tuple(
        BaselineCensus(
            run_id=r.run_id,
            machine=r.machine_id,
            versions=r.versions,
            census=r.census.to_json(),
            **{k: getattr(r, k) for k in PEAK_KEYS},
        )
        for r in records
        if r.decomposition_id == d.id and r.census is not None and r.census.fits
    )
    return BaselineDecomposition(
        decomposition=d.as_dict(),
        runs=tuple(_run_row(r) for r in rs),
        losses=rs[0].losses if rs else None,
        census=census or None,
    )


def _provenance(records: list[Run], decs: Mapping[str, BaselineDecomposition], command: str, note: str) -> Provenance:
    """Where a measured baseline comes from: the command, its sessions, hosts and machines, and the note (by default,
    over how many sessions and machines it was gathered)."""
    sessions = sorted({r.session_id for r in records if r.session_id})
    hosts = sorted({r.hostname for r in records if r.hostname})
    machines = sorted({row.machine for d in decs.values() for row in d.runs if row.machine})
    return Provenance(
        kind="measured",
        recorded_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        command=command,
        sessions=tuple(sessions),
        hosts=tuple(hosts),
        machines=tuple(machines),
        note=note
        or (
            f"gathered over {len(sessions)} sessions on {len(hosts)} machine(s) of this kind"
            if len(sessions) > 1
            else ""
        ),
    )


def from_runs(
    workload: Workload,
    gpu: str,
    records: list[Run],
    command: str,
    thresholds: dict | None = None,
    note: str = "",
    min_repeats: int = MIN_REPEATS,
    require_all: bool = True,
) -> BaselineFile:
    """Baseline data from the ok runs of ``workload`` (one hash), each run once. Raises BaselineError on a refusal, also
    for a run whose values a baseline cannot hold (a NaN or negative step time)."""
    check_runs(workload, records, min_repeats, require_all)
    records = unique_runs(records, workload.name)
    for r in records:
        if (why := record_problem(r)) is not None:
            raise BaselineError(
                f"refusing to make a baseline of {workload.name} from these runs: run {r.run_id or None}: {why}; "
                "leave that run's results dir out or rerun it"
            )
    bad = sorted({r.workload_hash for r in records} - {workload.hash})
    if bad:
        raise BaselineError(
            f"refusing to record a baseline for {workload.name}: "
            f"runs of another spec (hash {', '.join(map(str, bad))}) are mixed in"
        )
    decs: dict[str, BaselineDecomposition] = {}
    for d in workload.decompositions:
        if (entry := _decomposition(d, records)) is not None:
            decs[d.id] = entry
    timed = [r for r in records if not r.is_census] or records
    data = BaselineFile(
        schema=SCHEMA,
        gpu=gpu,
        workload=BaselineWorkload(name=workload.name, hash=workload.hash, spec=workload.to_dict()),
        env=plain(timed[0].env) or {},
        provenance=_provenance(records, decs, command, note),
        thresholds={**default_thresholds(gpu), **(thresholds or {})},
        decompositions=decs,
    )
    if (why := problem(data.to_json(), need_runs=False)) is not None:
        raise BaselineError(
            f"refusing to make a baseline of {workload.name} from these runs: {why}; "
            "leave that run's results dir out or rerun it"
        )
    return data


def write(root: str | Path, data: BaselineFile) -> Path:
    return write_json(path_for(root, data.gpu, data.workload.name), data.to_json())


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """A baseline's JSON written as it is given (an imported baseline's, made by hand), in the baselines' layout."""
    write_atomic(path, _compact(data))
    return path


def read_any(path: str | Path) -> dict | None:
    """The raw JSON of an existing baseline file, or None (for before/after tables)."""
    try:
        return load_json(Path(path).read_text())
    except (OSError, ValueError):
        return None


def record(
    root: str | Path,
    workload: Workload,
    gpu: str,
    records: list[Run],
    command: str,
    note: str = "",
    min_repeats: int = MIN_REPEATS,
) -> tuple[Path, dict | None, dict]:
    """Write the baseline of ``workload`` on ``gpu`` from ``records``; return (path, the old file's JSON or None, the
    new one's), for the before/after table.

    Raises BaselineError, writing nothing, on a refusal."""
    data = from_runs(workload, gpu, records, command, note=note, min_repeats=min_repeats)
    path = path_for(root, gpu, workload.name)
    old = read_any(path)
    write(root, data)
    return path, old, data.to_json()
