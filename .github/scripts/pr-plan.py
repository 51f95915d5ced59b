#!/usr/bin/env python3
"""The pull-request check's first job (.github/workflows/pr-check.yml, docs/pr-check.md): whether it runs, and where.

On a hosted runner, with the base branch's checkout (never the pull request's code) and the standard library only. It
reads the pull request from the environment, which the workflow fills from the event (never inline in a script):

* ``PR_NUMBER``, ``PR_HEAD_REPO`` (``head.repo.full_name``), ``GITHUB_REPOSITORY`` (the base repository),
  ``PR_LABELS`` (``toJSON`` of its labels), ``PR_ACTION`` and ``PR_LABEL_ADDED`` (the event's action and, on
  ``labeled``, the label added);
* the files it changes, from ``gh api repos/{repo}/pulls/{n}/files`` (``GH_TOKEN``, ``GH_REPO``).

Decisions, in order:

1. No check label (``[pr] label`` of nightly.toml) on the pull request, or a ``labeled`` event for another label than
   the check's or the accept label: nothing to do (``run=false``, exit 0).
2. A pull request from a fork (head repository other than the base one): refused, exit 1 with one ``::error::`` line;
   the GPU jobs never start (self-hosted runners never run a fork's code).
3. Nothing it changes is measured: no pin (``constraints/``), no measuring code (``harness/measuring/``), no workload
   file (``workloads/NAME.toml``, added or changed) and no file or folder a workload names (:data:`PATH_KEYS`, read
   from the checkout's workload files with tomllib): nothing to do (``run=false``, one line of the summary says why).
   The workflow has no ``paths:`` filter, since only this script knows which files the workloads name.
4. Otherwise ``run=true``, and to ``$GITHUB_OUTPUT``: ``gpus`` (nightly.toml's, as JSON), ``workloads`` (JSON: per GPU,
   the workloads the nightly runs there, then each workload file the pull request adds or changes and each workload
   that names a file it changes), ``pins`` (``true`` when it changes ``constraints/``) and ``accepted`` (``true`` when
   it carries the accept label).

Each decision is a line of the job summary. Exit 2 with one ``::error::`` line on bad input (nightly.toml, the labels).
"""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # harness.nightly from the checkout, nothing installed
from harness.nightly import NAME, Nightly, NightlyError, load  # noqa: E402

WORKLOADS = "workloads"
# What else a pull request changes that changes the work: the pins, and the suite's measuring code.
PINS, MEASURING = "constraints/", "harness/measuring/"
# The keys of a workload file that name a file or folder the run reads (docs/workloads.md): the local data (a file, or
# a folder saved by datasets) and the pretrained model's folder, which holds its tokenizer and its chat template
# (chat_template.jinja, tokenizer_config.json). A hub id, of data or of a model, names files here only where the
# repository holds a folder at that path, which is then read instead of the hub.
PATH_KEYS = ("data.id", "model.hub_id", "model.tokenizer")
BUILT_IN = {"model.tokenizer": {"bytes", "words", "model"}}  # values of a key that name no file
NOTHING = (
    "nothing the pull request changes is measured: no pin (constraints/), no measuring code (harness/measuring/), no "
    f"workload file ({WORKLOADS}/NAME.toml) and no file or folder a workload names ({', '.join(PATH_KEYS)})"
)


class Refused(Exception):
    """A pull request this check must not run on; ``str(err)`` is one line."""


def pages(text: str) -> list:
    """The items of ``gh api --paginate --slurp``'s answer: a JSON array of pages, each an array."""
    return [item for page in json.loads(text or "[]") for item in (page if isinstance(page, list) else [page])]


def changed_files(repo: str, number: str) -> list[dict]:
    """The pull request's files (``filename``, ``status``), through the gh CLI."""
    proc = subprocess.run(
        ["gh", "api", "--paginate", "--slurp", f"repos/{repo}/pulls/{number}/files"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"gh api could not list the pull request's files: {proc.stderr.strip() or proc.returncode}")
    return [f for f in pages(proc.stdout) if isinstance(f, dict)]


def label_names(raw: str) -> list[str]:
    """The labels' names from ``toJSON(github.event.pull_request.labels)``."""
    try:
        labels = json.loads(raw or "[]")
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"PR_LABELS is not JSON ({exc}); the workflow sets it to toJSON(github.event.pull_request.labels)"
        ) from exc
    return [str(lb.get("name", "")) if isinstance(lb, dict) else str(lb) for lb in labels or []]


def wanted(settings: Nightly, labels: list[str], action: str, added: str) -> str | None:
    """Why the check does not run (None: it runs)."""
    if settings.pr.label not in labels:
        return f"no {settings.pr.label} label: a maintainer starts the check by adding it"
    if action == "labeled" and added not in (settings.pr.label, settings.pr.accept_label):
        return (
            f"the label added ({added!r}) is not one of the check's ({settings.pr.label}, {settings.pr.accept_label})"
        )
    return None


def in_repo(value: object) -> str | None:
    """The repository path that a workload's path names, read as the loader reads it: relative to the checkout's root,
    where the suite runs. None for what names no file of the repository: no string, an absolute or home path, one that
    leaves the repository or is its root."""
    if not isinstance(value, str) or not value.strip() or value.startswith(("/", "~")):
        return None
    path = posixpath.normpath(value)
    return None if path in (".", "..") or path.startswith("../") else path


def named_files(raw: dict) -> dict[str, str]:
    """The repository paths a workload file's tables (as tomllib reads them) name, by key (:data:`PATH_KEYS`)."""
    out = {}
    for key in PATH_KEYS:
        table, _, field = key.partition(".")
        section = raw.get(table)
        value = section.get(field) if isinstance(section, dict) else None
        path = None if isinstance(value, str) and value in BUILT_IN.get(key, ()) else in_repo(value)
        if path is not None:
            out[key] = path
    return out


def named_by_workloads(root: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Per workload file of ``root`` (by its name, as the plan names workloads), the paths it names; and a line for
    each file that is not TOML (its files are not followed). The standard library only: nothing is installed yet."""
    named, lines = {}, []
    for path in sorted((root / WORKLOADS).glob("*.toml")):
        if not NAME.fullmatch(path.stem):
            continue
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            lines.append(f"- {WORKLOADS}/{path.name}: not read ({type(exc).__name__}), the files it names not followed")
            continue
        named[path.stem] = named_files(raw)
    return named, lines


def changed_paths(files: list[dict]) -> set[str]:
    """Every path the pull request changes: each file's, and a renamed file's old one."""
    return {str(f.get(k)) for f in files for k in ("filename", "previous_filename") if f.get(k)}


def under(paths: set[str], prefix: str) -> bool:
    return any(p.startswith(prefix) for p in paths)


def workloads(settings: Nightly, files: list[dict], root: Path) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """Per GPU, the workloads to measure; the workloads the pull request changes (their file, or a file or folder they
    name); and lines for the summary: which named file made a workload measured, and the files left out (a name no
    shell may see, a removed file)."""
    changed, removed, lines = [], set(), []
    for f in files:
        path = str(f.get("filename", ""))
        if not (path.startswith(f"{WORKLOADS}/") and path.endswith(".toml") and path.count("/") == 1):
            continue
        name = path[len(f"{WORKLOADS}/") : -len(".toml")]
        if not NAME.fullmatch(name):
            lines.append(
                "- a changed workload file whose name is not a workload name (letters, digits, '.', '_', '-'): not "
                "measured"
            )
        elif f.get("status") == "removed":
            removed.add(name)
            lines.append(f"- {path}: removed by the pull request, not measured")
        elif name not in changed:
            changed.append(name)
    paths = changed_paths(files)
    named, unread = named_by_workloads(root)
    for name, keys in named.items():
        hits = [f"{k} ({p})" for k, p in keys.items() if p in paths or under(paths, p + "/")]
        if not hits or name in removed:
            continue
        # the paths come from the base branch's workload file, never from the pull request
        lines.append(f"- {name}: the pull request changes its {', '.join(hits)}")
        if name not in changed:
            changed.append(name)
    by_gpu = {g: list(dict.fromkeys([*settings.workloads_on(g), *changed])) for g in settings.gpus}
    return by_gpu, changed, [*lines, *unread]


def decide(settings: Nightly, env: dict, files_of, root: Path) -> dict:
    """The plan: ``run``, and where it runs ``gpus``, ``workloads``, ``pins``, ``accepted`` and the summary's ``lines``.
    ``files_of()`` lists the changed files (called only for a labelled pull request of this repository); ``root`` is the
    checkout whose workload files say which files they name. Raises Refused for a fork's pull request."""
    labels = label_names(env.get("PR_LABELS", ""))
    why = wanted(settings, labels, env.get("PR_ACTION", ""), env.get("PR_LABEL_ADDED", ""))
    if why:
        return {"run": False, "lines": [f"- not run: {why}"]}
    head, base = env.get("PR_HEAD_REPO", ""), env.get("GITHUB_REPOSITORY", "")
    if not head or head != base:
        raise Refused(
            f"the pull request comes from {'the fork ' + head if head else 'a deleted fork'}, not {base}: "
            "the GPU runners never run a fork's code; a maintainer may push its branch to this repository and label "
            "that pull request"
        )
    files = files_of()
    by_gpu, measured, lines = workloads(settings, files, root)
    paths = changed_paths(files)
    pins = under(paths, PINS)
    if not (pins or measured or under(paths, MEASURING)):
        return {"run": False, "lines": [f"- not run: {NOTHING}"]}
    accepted = settings.pr.accept_label in labels
    lines = [
        f"- GPUs (nightly.toml): {', '.join(settings.gpus)}",
        *[f"- {g}: {', '.join(w) if w else 'no workload'}" for g, w in by_gpu.items()],
        "- pins: "
        + (
            "changed (constraints/): base pins (A) against the pull request's (B), interleaved"
            if pins
            else "unchanged: censuses only"
        ),
        f"- {settings.pr.accept_label}: {'set, a measured regression is accepted' if accepted else 'not set'}",
        *lines,
    ]
    return {
        "run": True,
        "gpus": list(settings.gpus),
        "workloads": by_gpu,
        "pins": pins,
        "accepted": accepted,
        "lines": lines,
    }


def _append(var: str, lines: list[str]) -> None:
    if os.environ.get(var):
        with open(os.environ[var], "a") as f:
            f.writelines(f"{line}\n" for line in lines)


def main() -> int:
    env = dict(os.environ)
    try:
        settings = load(Path.cwd())
        result = decide(
            settings,
            env,
            lambda: changed_files(env.get("GH_REPO") or env.get("GITHUB_REPOSITORY", ""), env.get("PR_NUMBER", "")),
            Path.cwd(),
        )
    except Refused as exc:
        print(f"::error::pr-check: refused: {exc}")
        _append("GITHUB_OUTPUT", ["run=false"])
        _append("GITHUB_STEP_SUMMARY", ["### Performance check", "", f"Refused: {exc}"])
        return 1
    except (ValueError, NightlyError, RuntimeError) as exc:
        print(f"::error::pr-plan: {exc}")
        _append("GITHUB_OUTPUT", ["run=false"])
        return 2
    outputs = {"run": str(result["run"]).lower()}
    if result["run"]:
        outputs.update(
            gpus=json.dumps(result["gpus"]),
            workloads=json.dumps(result["workloads"]),
            pins=str(result["pins"]).lower(),
            accepted=str(result["accepted"]).lower(),
        )
    _append("GITHUB_OUTPUT", [f"{k}={v}" for k, v in outputs.items()])
    _append("GITHUB_STEP_SUMMARY", ["### Performance check: the plan", "", *result["lines"]])
    print("\n".join(result["lines"]))
    print(" ".join(f"{k}={v}" for k, v in outputs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
