"""What the nightly and the pull-request check would do on this machine, the part of ``doctor`` that reads
nightly.toml (:mod:`harness.nightly`): the pinned job's step per workload, the baselines not recorded with the pins,
and the lines doctor prints of them."""

from __future__ import annotations

import json
from pathlib import Path

from harness.judging import baseline as bl
from harness.nightly import FILE as NIGHTLY_FILE
from harness.nightly import NightlyError
from harness.nightly import load as load_nightly


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


def _step(w: dict | None) -> tuple[str, str]:
    """What tonight's pinned job does with a workload (``w`` as :func:`harness.commands.doctor.workloads_here` lists it,
    None if absent)."""
    if w is None:
        return (
            "fail",
            "nightly.toml names it, but workloads/ holds no such workload (or it is BROKEN above): "
            "the plan refuses the night",
        )
    if w["baseline"] == "ok":
        return "judge", f"judge against {w['baseline_path']}"
    if w["baseline"] == "missing":
        return "bootstrap", (
            "no baseline yet: the pinned job records a first one from tonight's runs and opens its pull request, the "
            "latest job warns; verdicts start once it is merged"
        )
    return "fail", f"the job fails: baseline {w['baseline']}"


def nightly(project: Path, gpu: str, workloads: list[dict]) -> dict:
    """What the nightly would do on this machine tonight, from the project's nightly.toml (:mod:`harness.nightly`)."""
    where = str(project / NIGHTLY_FILE)
    if not (project / NIGHTLY_FILE).is_file():
        return {"file": where, "found": False}
    try:
        n = load_nightly(project)
    except NightlyError as exc:
        return {"file": where, "found": True, "error": str(exc)}
    by_name = {w["name"]: w for w in workloads}
    names = n.workloads_on(gpu)
    plan = []
    for name in names:
        action, says = _step(by_name.get(name))
        plan.append({"workload": name, "action": action, "says": says})
    ab = n.ab.workload if n.ab else None
    return {
        "file": where,
        "found": True,
        "error": None,
        "matrix": list(n.gpus),
        "runs_here": gpu in n.gpus,
        "plan": plan,
        "ab_workload": ab,
        "ab_decompositions": list(n.ab.decompositions) if n.ab else [],
        "ab_runs_here": ab in by_name,
        "pins": pin_gaps(project / "constraints" / "pinned.txt", project / "baselines", gpu, names),
    }


PR_WORKFLOW = Path(".github") / "workflows" / "pr-check.yml"


def pr_check(project: Path, gpu: str) -> dict:
    """Whether the pull-request check is set up here: its workflow file, and from nightly.toml its labels and GPUs."""
    found = (project / PR_WORKFLOW).is_file()
    try:
        n = load_nightly(project)
    except NightlyError:
        return {"workflow": str(project / PR_WORKFLOW), "found": found, "settings": None}
    return {
        "workflow": str(project / PR_WORKFLOW),
        "found": found,
        "settings": {
            "label": n.pr.label,
            "accept_label": n.pr.accept_label,
            "gpus": list(n.gpus),
            "runs_here": gpu in n.gpus,
            "decompositions": list(n.pr.decompositions),
            "budget_minutes": n.pr.budget_minutes,
        },
    }


def pr_lines(p: dict) -> list[str]:
    if not p["found"]:
        return [f"pull-request check: not set up (no {p['workflow']}; docs/pr-check.md)"]
    s = p["settings"]
    if s is None:
        return [
            f"pull-request check ({p['workflow']}): reads nightly.toml, which is BROKEN (above): "
            "it would refuse to plan"
        ]
    return [
        f"pull-request check ({p['workflow']}): set up; the label {s['label']} starts it on a pull request that "
        f"changes the pins, a workload or a file a workload names (not from a fork), {s['accept_label']} accepts a "
        "measured regression; create both labels in the repository "
        f"(gh label create {s['label']}; gh label create {s['accept_label']})",
        f"  runs on the runners labelled {', '.join('gpu-' + g for g in s['gpus'])} (nightly.toml gpus)"
        + ("" if s["runs_here"] else ", not this one")
        + f"; base pins against the pull request's, splits {' '.join(s['decompositions'])}, "
        f"{s['budget_minutes']:g} device minutes each",
    ]


def nightly_lines(n: dict, gpu: str) -> list[str]:
    if not n["found"]:
        return [f"nightly: no {n['file']} in this project (the nightly reads its GPUs, workloads and budgets there)"]
    if n["error"]:
        return [f"nightly: BROKEN, the nightly would refuse to run: {n['error']}"]
    if n["runs_here"]:
        head = f"nightly tonight ({n['file']}): a pinned and a latest job on the runner labelled gpu-{gpu}"
    elif gpu == "cpu":
        head = (
            f"nightly ({n['file']}): runs on GPU runners only (gpus {n['matrix']}), not here. Its steps on this machine"
        )
    else:
        head = f'nightly ({n["file"]}): its gpus {n["matrix"]} have no {gpu}; add "{gpu}" there. If it ran here'
    lines = [
        head + ":",
        "  pinned job: one timed run per decomposition (five on a first night) and one census run per case; "
        "latest job: no runs when latest resolves to the pins, else one census run per case (docs/nightly.md)",
    ]
    lines += [f"  {p['workload']}: {p['says']}" for p in n["plan"]]
    if not n["plan"]:
        lines.append(
            f"  no workload is named for {gpu}: the jobs would make no runs "
            f"(add one to workloads, or a [gpu.{gpu}] table)"
        )
    if n["ab_workload"]:
        decs = " ".join(n["ab_decompositions"])
        lines.append(
            f"  A/B (latest job): pinned vs latest {n['ab_workload']} ({decs}) interleaved, on nights when the latest "
            "releases differ from the pins, then the bisect of a change it or the census finds"
            + ("" if n["ab_runs_here"] else f"; workloads/ holds no {n['ab_workload']}")
        )
    lines += [f"  pins: {line}" for line in n["pins"]]
    return lines
