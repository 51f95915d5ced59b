"""What the nightly and the pull-request check would do on this machine, the part of ``doctor`` that reads
nightly.toml (:mod:`harness.nightly`): which of tonight's workloads run, which are broken (one failed item each, the
others measured) and which no workload file declares (dropped), whether the A/B can run, the pinned job's step per
workload, the baselines not recorded with the pins, and the lines doctor prints of them. The nightly's plan
(``.github/scripts/night-plan.py``) decides with :func:`tonight` too."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.judging import baseline as bl
from harness.nightly import AB, PR, Nightly, NightlyError
from harness.nightly import FILE as NIGHTLY_FILE
from harness.nightly import load as load_nightly
from harness.spec_folder import declared_name

UNUSABLE = "unusable: "  # how doctor.workloads_here heads a baseline the suite refuses (of another hash, unreadable)


@dataclass(frozen=True)
class Tonight:
    """What the nightly does with the workloads it names on one GPU, decided before any GPU time: each one is measured
    on its own, so that one bad workload costs the night that workload only."""

    workloads: tuple[str, ...]  # given to the suite: each loads, or is broken and becomes one failed item there
    broken: dict[str, str] = field(default_factory=dict)  # name -> why it cannot run (its file's or baseline's line)
    unknown: dict[str, str] = field(default_factory=dict)  # name -> why it is dropped: no workload file declares it
    ab: str | None = None  # why the A/B cannot run tonight (one line naming nightly.toml's key); None when it can


def broken_by_name(broken: dict[Path, str]) -> dict[str, str]:
    """The files that do not load or whose inputs do not pass (``broken`` as
    :func:`harness.commands.doctor.workloads_here` fills it), by the name each declares
    (:func:`harness.spec_folder.declared_name`) and by its stem."""
    out: dict[str, str] = {}
    for path, line in broken.items():
        out.setdefault(declared_name(path), line)
        out.setdefault(path.stem, line)
    return out


def ab_problem(ab: AB | None, workloads: list[dict], broken: dict[str, str]) -> str | None:
    """Why the A/B of ``ab`` cannot run here, in one line naming nightly.toml's key and what to do; None when it can
    (or there is no A/B)."""
    if ab is None:
        return None
    if ab.workload in broken:
        return f"{ab.where}: ab.workload {ab.workload} cannot run: {broken[ab.workload]}"
    w = next((w for w in workloads if w["name"] == ab.workload), None)
    if w is None:
        known = ", ".join(sorted(w["name"] for w in workloads)) or "(none)"
        return f"{ab.where}: ab.workload = {ab.workload!r}: no workload file declares it; known: {known}"
    lacking = [d for d in ab.decompositions if d not in w["decompositions"]]
    if lacking:
        return (
            f"{ab.where}: ab.decompositions names {', '.join(lacking)}, which {ab.workload} does not have (its "
            f"batch.decompositions: {', '.join(w['decompositions'])}); name some of those"
        )
    return None


def tonight(n: Nightly, gpu: str, workloads: list[dict], broken: dict[Path, str]) -> Tonight:
    """Tonight's workloads on ``gpu`` (``workloads`` and ``broken`` as :func:`harness.commands.doctor.workloads_here`
    gives them): those that load and those that are broken go to the suite, which measures the first and fails one
    item for each of the others; a name that no workload file declares is dropped with its line (the suite would refuse
    the whole session over it)."""
    known = {w["name"] for w in workloads}
    # a second file of a name that loads is not that workload's
    files = {name: line for name, line in broken_by_name(broken).items() if name not in known}
    # a stored baseline the suite refuses (of another hash, unreadable) makes the workload broken there too
    bad = files | {w["name"]: w["baseline"][len(UNUSABLE) :] for w in workloads if w["baseline"].startswith(UNUSABLE)}
    names = n.workloads_on(gpu)
    unknown = {
        name: (
            f"{n.where} names {name!r} for {gpu}, which no workload file declares (known: "
            f"{', '.join(sorted(known | set(bad))) or 'none'}): not run tonight; correct the name or add "
            f"workloads/{name}.toml"
        )
        for name in names
        if name not in known and name not in bad
    }
    return Tonight(
        workloads=tuple(name for name in names if name not in unknown),
        broken={name: bad[name] for name in names if name in bad},
        unknown=unknown,
        ab=ab_problem(n.ab, workloads, files),  # the A/B reads no stored baseline
    )


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a constraints file (comments and other specifiers left out)."""
    if not path.is_file():
        return {}
    lines = (ln.split("#")[0].strip() for ln in path.read_text().splitlines())
    return dict(ln.split("==", 1) for ln in lines if "==" in ln)


def pin_gaps(pins_file: Path, baselines_dir: Path, gpu: str, names) -> list[str]:
    """One line per baseline of ``names`` on ``gpu`` whose library versions are not the pins: a baseline recorded by
    hand in another environment, which the pinned job would judge as if it had been recorded with the pins."""
    pinned, out = pins(pins_file), []
    for name in names:
        path = bl.path_for(baselines_dir, gpu, name)
        try:
            recorded = json.loads(path.read_text()).get("env", {}).get("versions", {})
        except (OSError, ValueError, AttributeError):
            continue  # no baseline, or one the baseline check names
        differ = [
            f"{k} {recorded[k]} (pinned {v})" for k, v in sorted(pinned.items()) if recorded.get(k) not in (None, v)
        ]
        if differ:
            out.append(
                f"{path} was recorded with {', '.join(differ)}: record it again with the pins "
                f"(tox -e pinned, docs/nightly.md) or make {pins_file.name} the versions it was recorded with"
            )
    return out


def _step(w: dict) -> tuple[str, str]:
    """What tonight's pinned job does with a workload that loads (``w`` as
    :func:`harness.commands.doctor.workloads_here` lists it)."""
    if w["baseline"] == "ok":
        return "judge", f"judge against {w['baseline_path']}"
    return "bootstrap", (
        "no baseline yet: the pinned job records a first one from tonight's runs and opens its pull request, the "
        "latest job warns; verdicts start once it is merged"
    )


@dataclass(frozen=True)
class Step:
    """What tonight's jobs do with one workload nightly.toml names: ``action`` (judge, bootstrap, fail or drop) and the
    line that ``says`` so."""

    workload: str
    action: str
    says: str

    def to_json(self) -> dict:
        return {"workload": self.workload, "action": self.action, "says": self.says}


@dataclass(frozen=True)
class NightlyPlan:
    """What the nightly would do on this machine tonight: ``file`` (nightly.toml), whether it was ``found``, its
    ``error`` (one line) when it does not load; else its GPUs (``matrix``), whether they hold this one, the ``plan``
    per workload, the A/B's workload and splits, whether its workload runs here, why it cannot run (``ab_error``), and
    the ``pins`` lines of the baselines not recorded with the pins."""

    file: str
    found: bool
    error: str | None = None
    matrix: tuple[str, ...] = ()
    runs_here: bool = False
    plan: tuple[Step, ...] = ()
    ab_workload: str | None = None
    ab_decompositions: tuple[str, ...] = ()
    ab_runs_here: bool = False
    ab_error: str | None = None
    pins: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        """Whether nightly.toml is wrong here: it does not load, its A/B cannot run, or it names an unknown workload."""
        return bool(self.error or self.ab_error or any(p.action == "drop" for p in self.plan))

    def to_json(self) -> dict:
        if not self.found:
            return {"file": self.file, "found": False}
        if self.error:
            return {"file": self.file, "found": True, "error": self.error}
        return {
            "file": self.file,
            "found": True,
            "error": None,
            "matrix": list(self.matrix),
            "runs_here": self.runs_here,
            "plan": [p.to_json() for p in self.plan],
            "ab_workload": self.ab_workload,
            "ab_decompositions": list(self.ab_decompositions),
            "ab_runs_here": self.ab_runs_here,
            "ab_error": self.ab_error,
            "pins": list(self.pins),
        }


def nightly(project: Path, gpu: str, workloads: list[dict], broken: dict[Path, str] | None = None) -> NightlyPlan:
    """What the nightly would do on this machine tonight, from the project's nightly.toml (:mod:`harness.nightly`);
    ``broken``: the workload files that cannot run, with their lines."""
    where = str(project / NIGHTLY_FILE)
    if not (project / NIGHTLY_FILE).is_file():
        return NightlyPlan(where, False)
    try:
        n = load_nightly(project)
    except NightlyError as exc:
        return NightlyPlan(where, True, str(exc))
    by_name = {w["name"]: w for w in workloads}
    t = tonight(n, gpu, workloads, broken or {})
    plan = []
    for name in n.workloads_on(gpu):
        if name in t.unknown:
            action, says = "drop", f"{t.unknown[name]} (the plan drops it with an ::error:: line, the others run)"
        elif name in t.broken:
            action, says = (
                "fail",
                (
                    "cannot run (its file or baseline above says why): tonight one failed item and one failed verdict "
                    "(bad-workload) name it, and the others are measured"
                ),
            )
        else:
            action, says = _step(by_name[name])
        plan.append(Step(name, action, says))
    ab = n.ab.workload if n.ab else None
    return NightlyPlan(
        where,
        True,
        matrix=n.gpus,
        runs_here=gpu in n.gpus,
        plan=tuple(plan),
        ab_workload=ab,
        ab_decompositions=n.ab.decompositions if n.ab else (),
        ab_runs_here=ab in by_name,
        ab_error=t.ab,
        pins=tuple(pin_gaps(project / "constraints" / "pinned.txt", project / "baselines", gpu, t.workloads)),
    )


PR_WORKFLOW = Path(".github") / "workflows" / "pr-check.yml"


@dataclass(frozen=True)
class PrCheck:
    """Whether the pull-request check is set up here: its ``workflow`` file and whether it is ``found``; from
    nightly.toml (None when it does not load) its settings (``pr``), its ``gpus`` and whether they hold this one."""

    workflow: str
    found: bool
    pr: PR | None = None
    gpus: tuple[str, ...] = ()
    runs_here: bool = False

    def to_json(self) -> dict:
        settings = (
            {
                "label": self.pr.label,
                "accept_label": self.pr.accept_label,
                "gpus": list(self.gpus),
                "runs_here": self.runs_here,
                "decompositions": list(self.pr.decompositions),
                "budget_minutes": self.pr.budget_minutes,
            }
            if self.pr is not None
            else None
        )
        return {"workflow": self.workflow, "found": self.found, "settings": settings}


def pr_check(project: Path, gpu: str) -> PrCheck:
    """Whether the pull-request check is set up here: its workflow file, and from nightly.toml its labels and GPUs."""
    workflow, found = str(project / PR_WORKFLOW), (project / PR_WORKFLOW).is_file()
    try:
        n = load_nightly(project)
    except NightlyError:
        return PrCheck(workflow, found)
    return PrCheck(workflow, found, n.pr, n.gpus, gpu in n.gpus)


def pr_lines(p: PrCheck) -> list[str]:
    if not p.found:
        return [f"pull-request check: not set up (no {p.workflow}; docs/pr-check.md)"]
    s = p.pr
    if s is None:
        return [
            f"pull-request check ({p.workflow}): reads nightly.toml, which is BROKEN (above): it would refuse to plan"
        ]
    return [
        f"pull-request check ({p.workflow}): set up; the label {s.label} starts it on a pull request that "
        f"changes the pins, a workload or a file a workload names (not from a fork), {s.accept_label} accepts a "
        "measured regression; create both labels in the repository "
        f"(gh label create {s.label}; gh label create {s.accept_label})",
        f"  runs on the runners labelled {', '.join('gpu-' + g for g in p.gpus)} (nightly.toml gpus)"
        + ("" if p.runs_here else ", not this one")
        + f"; base pins against the pull request's, splits {' '.join(s.decompositions)}, "
        f"{s.budget_minutes:g} device minutes each",
    ]


def nightly_lines(n: NightlyPlan, gpu: str) -> list[str]:
    if not n.found:
        return [f"nightly: no {n.file} in this project (the nightly reads its GPUs, workloads and budgets there)"]
    if n.error:
        return [f"nightly: BROKEN, the nightly would refuse to run: {n.error}"]
    matrix = list(n.matrix)  # printed as a list, as nightly.toml writes it
    if n.runs_here:
        head = f"nightly tonight ({n.file}): a pinned and a latest job on the runner labelled gpu-{gpu}"
    elif gpu == "cpu":
        head = f"nightly ({n.file}): runs on GPU runners only (gpus {matrix}), not here. Its steps on this machine"
    else:
        head = f'nightly ({n.file}): its gpus {matrix} have no {gpu}; add "{gpu}" there. If it ran here'
    lines = [
        head + ":",
        "  pinned job: one timed run per decomposition (five on a first night) and one census run per case; "
        "latest job: no runs when latest resolves to the pins, else one census run per case (docs/nightly.md)",
    ]
    lines += [f"  {p.workload}: {p.says}" for p in n.plan]
    if not n.plan:
        lines.append(
            f"  no workload is named for {gpu}: the jobs would make no runs "
            f"(add one to workloads, or a [gpu.{gpu}] table)"
        )
    if n.ab_error:
        lines.append(f"  A/B (latest job): REFUSED, no A/B and no bisect tonight: {n.ab_error}")
    elif n.ab_workload:
        decs = " ".join(n.ab_decompositions)
        lines.append(
            f"  A/B (latest job): pinned vs latest {n.ab_workload} ({decs}) interleaved, on nights when the latest "
            "releases differ from the pins, then the bisect of a change it or the census finds"
        )
    lines += [f"  pins: {line}" for line in n.pins]
    return lines
