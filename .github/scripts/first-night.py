#!/usr/bin/env python3
"""The nightly's answer to a missing baseline: the first night on a GPU records one and proposes it; later nights warn.

Run after the suite, in the repository root, with the interpreter of the job's tox environment (it runs
``python -m harness baseline update`` with that interpreter). For every workload of the suite's report that has no
``baselines/<gpu>/<workload>.json``:

* in the pinned job (``--env pinned``): the workload's runs of tonight become its first baseline
  (``perf-results/first-baselines/<gpu>/<workload>.json``, uploaded with the results), pushed as one commit on the
  branch ``baselines/first-<gpu>`` and proposed in a pull request (one per GPU: an open one is reused, never doubled);
* in every other job: a warning, since the pinned job records it.

The nightly runs it in two phases, so that no job that runs installed releases holds a write token: ``--phase record``
in the perf job (the job's tox interpreter, no token: it records the files and ``first-baselines/plan.json``), then
``--phase propose`` in the publish job, from the perf job's artifact (the standard library, git and gh, nothing
installed: it pushes the branch and opens or comments on the pull request). Without ``--phase`` it does both.

Either way the job summary says, per workload: no baseline yet, what was done (the pull request's link) and that the
verdicts against a baseline start once it is merged; the same lines go to ``perf-results/missing-baselines.md``, which
the regression-issue script adds to an issue. Exit 0 when every missing baseline is recorded and proposed (or already
proposed), or only warned about; 1 when a baseline cannot be recorded from tonight's runs or the pull request cannot
be opened (one ``::error::`` line says why and what to do); 2 on bad input.

Environment (the nightly sets them): PERF_GPU, PERF_ENV, PERF_REPEATS, GITHUB_STEP_SUMMARY, GITHUB_REF_NAME (the
branch the pull request goes into), RUN_URL, GH_TOKEN and GH_REPO (for gh). Needs git and the gh CLI in the pinned job.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BOT = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*")
PHASES = ("all", "record", "propose")


class Refused(Exception):
    """The first night cannot finish; ``str(err)`` is one line: what is wrong and what to do."""


@dataclass(frozen=True)
class Night:
    """What the script needs to know about tonight's job."""

    gpu: str
    env: str
    results: Path
    baselines: Path
    base: str = ""  # the branch the pull request goes into ("" lets gh pick the default branch)
    summary: Path | None = None
    run_url: str = ""
    repeats: str = ""
    remote: str = "origin"
    gh: str = "gh"
    phase: str = "all"  # "record", "propose" or both

    def __post_init__(self):
        if self.phase not in PHASES:
            raise ValueError(f"--phase {self.phase!r}: give one of {', '.join(PHASES)}")
        if not NAME.fullmatch(self.gpu or ""):
            raise ValueError(
                f"PERF_GPU / --gpu: {self.gpu!r} is not a GPU short name (lowercase letters, digits, '.' and '-')"
            )
        if not self.env:
            raise ValueError("PERF_ENV / --env is empty; give the tox environment of the job (pinned, latest, pre)")

    @property
    def branch(self) -> str:
        return f"baselines/first-{self.gpu}"

    @property
    def recorded_dir(self) -> Path:
        return self.results / "first-baselines"

    @property
    def plan(self) -> Path:
        """What the record phase leaves for the propose phase: the workloads recorded and their before/after table."""
        return self.recorded_dir / "plan.json"


def missing(report: dict, baselines: Path, gpu: str) -> list[str]:
    """Workloads of the report, in its order, that have no baseline file for ``gpu``."""
    names = dict.fromkeys(r["workload"] for r in report.get("rows") or [] if r.get("workload"))
    return [n for n in names if not (baselines / gpu / f"{n}.json").exists()]


def run(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, **kw)


def last_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
    errors = [
        re.sub(r"^(error|fatal):\s*", "", ln, flags=re.I) for ln in lines if ln.lower().startswith(("error", "fatal"))
    ]
    return (errors or lines or [f"exit code {proc.returncode}"])[-1]


def open_pull(night: Night) -> dict | None:
    """The open pull request of ``night.branch`` (number, url, files), or None."""
    try:
        proc = run(
            [
                night.gh,
                "pr",
                "list",
                "--head",
                night.branch,
                "--state",
                "open",
                "--json",
                "number,url,files",
                "--limit",
                "5",
            ]
        )
    except FileNotFoundError:
        raise Refused(
            "the gh CLI is not installed on this runner; install it (https://cli.github.com): the first night opens "
            "the baseline pull request with it"
        ) from None
    if proc.returncode != 0:
        raise Refused(f"gh pr list failed ({last_line(proc)}); the job needs GH_TOKEN with pull-requests: write")
    pulls = json.loads(proc.stdout or "[]")
    return min(pulls, key=lambda p: p["number"]) if pulls else None


def record(night: Night, names: list[str]) -> str:
    """Tonight's runs of ``names`` as their first baselines under ``night.recorded_dir``; returns the before/after
    table."""
    note = f"first baseline of this GPU, recorded by the nightly ({night.env})" + (
        f": {night.run_url}" if night.run_url else ""
    )
    args = [
        sys.executable,
        "-m",
        "harness",
        "baseline",
        "update",
        str(night.results),
        "--gpu",
        night.gpu,
        "--baselines-dir",
        str(night.recorded_dir),
        "--note",
        note,
    ]
    for n in names:
        args += ["--workload", n]
    proc = run(args)
    if proc.returncode != 0:
        raise Refused(f"tonight's runs cannot be the first baseline: {last_line(proc)}")
    return proc.stdout.strip()


def commit(night: Night, names: list[str]) -> str:
    """One commit on top of HEAD that adds the recorded files under baselines/<gpu>/, made in a scratch index so that
    the working tree and the checked-out branch stay as they are; returns its hash."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME=BOT[0],
        GIT_AUTHOR_EMAIL=BOT[1],
        GIT_COMMITTER_NAME=BOT[0],
        GIT_COMMITTER_EMAIL=BOT[1],
    )
    with tempfile.TemporaryDirectory() as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")

        def git(*args: str) -> str:
            proc = run(["git", *args], env=env)
            if proc.returncode != 0:
                raise Refused(f"git {args[0]} failed: {last_line(proc)}")
            return proc.stdout.strip()

        git("read-tree", "HEAD")
        for n in names:
            blob = git("hash-object", "-w", str(night.recorded_dir / night.gpu / f"{n}.json"))
            git(
                "update-index",
                "--add",
                "--cacheinfo",
                f"100644,{blob},{night.baselines.as_posix()}/{night.gpu}/{n}.json",
            )
        tree = git("write-tree")
        return git(
            "commit-tree", tree, "-p", "HEAD", "-m", f"Record the first {night.gpu} baselines: {', '.join(names)}"
        )


def push(night: Night, sha: str) -> None:
    """The branch ``night.branch`` becomes ``sha`` (forced: it holds only the nightly's proposal)."""
    proc = run(["git", "push", "--force", night.remote, f"{sha}:refs/heads/{night.branch}"])
    if proc.returncode != 0:
        raise Refused(
            f"git push of {night.branch} failed ({last_line(proc)}); the nightly's perf job needs permissions "
            "contents: write"
        )


def body(night: Night, names: list[str], table: str) -> str:
    made = f"[run]({night.run_url})" if night.run_url else "the nightly"
    return "\n".join(
        [
            f"No baseline existed for {', '.join(f'`{n}`' for n in names)} on `{night.gpu}`, so the nightly judged "
            f"nothing against one. {made} recorded tonight's runs (`tox -e {night.env}`"
            + (f", {night.repeats} repeats" if night.repeats else "")
            + ") as the first baseline. Verdicts against it start once this pull request is merged.",
            "",
            "```",
            table or "(no before/after table)",
            "```",
            "",
            "A pull request opened by GitHub Actions starts no workflow of its own: close and reopen it to run CI on "
            "it.",
            "",
        ]
    )


def propose(night: Night, names: list[str], table: str, pull: dict | None) -> str:
    """Open the pull request of ``night.branch`` (or comment on the open one); returns its link."""
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as fh:
        fh.write(body(night, names, table))
    try:
        if pull is not None:
            args = [night.gh, "pr", "comment", str(pull["number"]), "--body-file", fh.name]
        else:
            args = [
                night.gh,
                "pr",
                "create",
                "--head",
                night.branch,
                "--title",
                f"Record the first {night.gpu} baselines",
                "--body-file",
                fh.name,
            ]
            args += ["--base", night.base] if night.base else []
        proc = run(args)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise Refused(
            f"gh pr {args[2]} failed ({last_line(proc)}); allow it in Settings > Actions > General > Workflow "
            "permissions: 'Allow GitHub Actions to create and approve pull requests'"
        )
    if pull is not None:
        return pull["url"]
    urls = re.findall(r"https?://\S+", proc.stdout)
    return urls[-1] if urls else proc.stdout.strip()


def bootstrap(night: Night, names: list[str], table: str) -> list[str]:
    """Propose the recorded baselines of ``names`` that no open pull request holds yet. Returns the summary lines."""
    pull = open_pull(night)
    held = {Path(f["path"]).stem for f in (pull or {}).get("files") or [] if Path(f["path"]).parent.name == night.gpu}
    if pull is not None and set(names) <= held:
        return [
            f"- :warning: No baseline yet for `{n}` on `{night.gpu}`: the checks against a baseline were skipped. Its "
            f"first baseline waits in the open pull request {pull['url']}; verdicts start once it is merged."
            for n in names
        ]
    push(night, commit(night, names))
    url = propose(night, names, table, pull)
    return [
        f"- No baseline yet for `{n}` on `{night.gpu}`: recorded one from tonight's runs and proposed it in {url}; the "
        f"verdicts against a baseline (runtime, memory, ordering) start once it is merged."
        for n in names
    ]


def recorded(night: Night) -> tuple[list[str], str]:
    """The record phase's workloads and table, from ``night.plan``."""
    try:
        plan = json.loads(night.plan.read_text())
    except OSError:
        return [], ""
    names = plan.get("workloads") if isinstance(plan, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and NAME.fullmatch(n) for n in names):
        raise ValueError(f"{night.plan}: not a record phase's plan (workloads must be a list of workload names)")
    for n in names:
        if not (night.recorded_dir / night.gpu / f"{n}.json").is_file():
            raise ValueError(f"{night.plan} names {n}, but {night.recorded_dir / night.gpu / (n + '.json')} is missing")
    return names, str(plan.get("table") or "")


def warn(night: Night, names: list[str]) -> list[str]:
    return [
        f"- :warning: No baseline yet for `{n}` on `{night.gpu}`: the checks against a baseline were skipped. "
        "The pinned job records the first one from its runs and opens a pull request with it; verdicts start once "
        "it is merged."
        for n in names
    ]


def write_summary(night: Night, lines: list[str]) -> None:
    text = "\n".join([f"### Baselines on `{night.gpu}` ({night.env})", "", *lines, ""]) + "\n"
    print(text)
    night.results.mkdir(parents=True, exist_ok=True)
    (night.results / "missing-baselines.md").write_text(text)
    if night.summary:
        with open(night.summary, "a") as fh:
            fh.write(text)


def first_night(night: Night) -> int:
    if night.phase != "propose":
        names = to_record(night)
        if not names:
            return 0
        if night.env != "pinned":
            write_summary(night, warn(night, names))
            print(f"::warning::no baseline yet for {', '.join(names)} on {night.gpu}; the pinned job records the first")
            return 0
        try:
            table = record(night, names)
        except Refused as exc:
            return refused(night, names, exc)
        night.recorded_dir.mkdir(parents=True, exist_ok=True)
        night.plan.write_text(json.dumps({"workloads": names, "table": table}, indent=1))
        if night.phase == "record":
            write_summary(
                night,
                [
                    f"- No baseline yet for `{n}` on `{night.gpu}`: recorded one from tonight's runs; "
                    "the publish job proposes it in a pull request."
                    for n in names
                ],
            )
            return 0
    names, table = recorded(night)
    if not names:
        return 0
    try:
        lines = bootstrap(night, names, table)
    except Refused as exc:
        return refused(night, names, exc)
    write_summary(night, lines)
    print(
        f"::notice::first night on {night.gpu}: recorded the first baseline of {', '.join(names)} and proposed it; see "
        "the job summary"
    )
    return 0


def to_record(night: Night) -> list[str]:
    """The workloads of tonight's report that have no baseline on this GPU."""
    path = night.results / "report.json"
    if not path.is_file():
        print(f"first-night: no report at {path}; the suite made none, so there is nothing to record")
        return []
    report = json.loads(path.read_text())
    if report.get("gpu") and report["gpu"] != night.gpu:
        raise ValueError(f"{path} is a report of {report['gpu']!r}, not of PERF_GPU {night.gpu!r}")
    return missing(report, night.baselines, night.gpu)


def refused(night: Night, names: list[str], exc: Refused) -> int:
    write_summary(
        night, [f"- :x: No baseline yet for `{n}` on `{night.gpu}`, and none was proposed: {exc}" for n in names]
    )
    print(f"::error::first night on {night.gpu}: {exc}")
    return 1


def parse(argv: list[str] | None = None) -> Night:
    e = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpu", default=e("PERF_GPU", ""), help="the job's GPU (default: $PERF_GPU)")
    p.add_argument("--env", default=e("PERF_ENV", ""), help="the job's tox environment (default: $PERF_ENV)")
    p.add_argument(
        "--results", type=Path, default=Path("perf-results"), help="the suite's results dir (default: perf-results)"
    )
    p.add_argument(
        "--baselines",
        type=Path,
        default=Path("baselines"),
        help="the baseline store in the repository (default: baselines)",
    )
    p.add_argument(
        "--phase",
        choices=PHASES,
        default="all",
        help="record (the perf job: no token), propose (the publish job: from the perf job's artifact) or all",
    )
    a = p.parse_args(argv)
    summary = e("GITHUB_STEP_SUMMARY")
    return Night(
        gpu=a.gpu,
        env=a.env,
        results=a.results,
        baselines=a.baselines,
        base=e("GITHUB_REF_NAME", ""),
        summary=Path(summary) if summary else None,
        run_url=e("RUN_URL", ""),
        repeats=e("PERF_REPEATS", ""),
        phase=a.phase,
    )


def main(argv: list[str] | None = None) -> int:
    try:
        return first_night(parse(argv))
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"::error::first-night: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
