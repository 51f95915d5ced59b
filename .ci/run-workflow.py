#!/usr/bin/env python3
"""Run one job of a GitHub workflow here: its ``run:`` steps in order, with the job's environment, as a runner would.

    python .ci/run-workflow.py .github/workflows/nightly.yml perf --matrix gpu=cpu --matrix env=pinned --input repeats=5

In the current directory (the checkout), each ``run:`` step runs as GitHub runs it (``bash --noprofile --norc -eo
pipefail``) with the workflow's, the job's and the step's ``env:``, the ``GITHUB_*`` variables (the job summary goes to
``--summary``) and ``${{ }}`` expressions evaluated: the contexts ``matrix``, ``inputs`` (the workflow_dispatch
defaults, then ``--input``), ``github`` (``github.event`` is the payload of ``--event FILE``, e.g. a pull_request
event's, also at ``$GITHUB_EVENT_PATH``), ``needs`` (``--needs FILE``: the earlier jobs' ``result`` and ``outputs``, as
JSON), ``env``, ``steps`` and ``runner``; the functions ``success()``, ``failure()``,
``always()``, ``cancelled()``, ``hashFiles()``, ``contains()``, ``startsWith()``, ``endsWith()``, ``format()``,
``fromJSON()`` and ``toJSON()``. A job that the workflow does not hold itself but a job of it calls (``uses:`` a
reusable workflow: ``./.github/workflows/X.yml``, or ``OWNER/REPO/.github/workflows/X.yml@REF`` where ``--uses
OWNER/REPO=DIR`` names a checkout of that repository) is run from the called workflow, with the ``inputs`` its
``workflow_call`` declares, given by the caller's ``with:`` (evaluated in the caller's contexts). The job's ``if:``
decides whether it runs at all (a job it skips runs no step and succeeds, as on GitHub; ``success()`` there means every
job of ``--needs`` succeeded); a step's ``if:`` decides whether the step runs. ``uses:`` steps (checkout, setup-python,
artifacts) are not run: the checkout is the current directory and the tools are this machine's; a step named with
``--skip-step`` is not run either. Prints each step's outcome and wall time, writes them to ``--outcomes`` (JSON) and
exits 0 when the job succeeded, 1 when it failed, 2 on bad input; ``--job-outputs`` writes the job's ``outputs:``.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>&&|\|\||==|!=|<=|>=|[<>!(),\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_*][A-Za-z0-9_\-]*)*))"
)
STATUS = re.compile(r"\b(success|failure|always|cancelled)\s*\(")


class Bad(Exception):
    """Input this runner cannot run; ``str(err)`` is one line."""


def to_text(v) -> str:
    """A value as GitHub writes it into a string: null is empty, booleans are lowercase, objects are JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class Expressions:
    """GitHub's expression language over the job's contexts, translated token by token into a Python expression."""

    def __init__(self, contexts: dict, workspace: Path):
        self.contexts = contexts
        self.workspace = workspace
        self.failed = False
        self.functions = {
            "success": lambda: not self.failed,
            "failure": lambda: self.failed,
            "always": lambda: True,
            "cancelled": lambda: False,
            "hashFiles": self.hash_files,
            "fromJSON": json.loads,
            "toJSON": json.dumps,
            "contains": lambda a, b: (str(b).lower() in str(a).lower()) if isinstance(a, str) else b in (a or []),
            "startsWith": lambda a, b: str(a).lower().startswith(str(b).lower()),
            "endsWith": lambda a, b: str(a).lower().endswith(str(b).lower()),
            "format": lambda f, *a: re.sub(r"\{(\d+)\}", lambda m: to_text(a[int(m[1])]), f),
        }

    def hash_files(self, *patterns: str) -> str:
        files = sorted(
            {f for p in patterns for f in glob.glob(str(self.workspace / p), recursive=True) if os.path.isfile(f)}
        )
        if not files:
            return ""
        h = hashlib.sha256()
        for f in files:
            h.update(hashlib.sha256(Path(f).read_bytes()).digest())
        return h.hexdigest()

    def lookup(self, path: str):
        value = self.contexts
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def python(self, expr: str) -> str:
        out, pos, expr = [], 0, expr.strip()
        while pos < len(expr):
            m = TOKEN.match(expr, pos)
            if m is None or m.end() == pos:
                raise Bad(f"cannot read the expression {expr!r} at {expr[pos:]!r}")
            pos = m.end()
            if m["str"] is not None:
                out.append(repr(m["str"][1:-1].replace("''", "'")))
            elif m["num"] is not None:
                out.append(m["num"])
            elif m["op"] is not None:
                out.append({"&&": " and ", "||": " or ", "!": " not "}.get(m["op"], m["op"]))
            elif expr[pos:].lstrip().startswith("(") and m["name"] in self.functions:
                out.append(f"_f[{m['name']!r}]")
            else:
                out.append({"true": "True", "false": "False", "null": "None"}.get(m["name"], f"_ctx({m['name']!r})"))
        return "".join(out)

    def value(self, expr: str):
        expr = expr.strip()
        if expr.startswith("${{") and expr.endswith("}}") and expr.count("${{") == 1:
            expr = expr[3:-2]
        return eval(self.python(expr), {"__builtins__": {}}, {"_f": self.functions, "_ctx": self.lookup})  # noqa: S307 (our own tokens)

    def condition(self, expr) -> bool:
        """A step's ``if:``: without a status function it means ``success() && (expr)``, as on GitHub."""
        if expr is None:
            return not self.failed
        if isinstance(expr, bool):
            return expr and not self.failed
        text = str(expr).strip()
        inner = text[3:-2] if text.startswith("${{") and text.endswith("}}") else text
        return bool(self.value(inner if STATUS.search(inner) else f"success() && ({inner})"))

    def substitute(self, text) -> str:
        return EXPR.sub(lambda m: to_text(self.value(m[1])), str(text)) if isinstance(text, str) else to_text(text)


def read_commands_file(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` / ``$GITHUB_ENV``: ``NAME=value`` lines and ``NAME<<DELIM`` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


class Job:
    """One job of a workflow, run step by step in ``workspace``."""

    def __init__(self, workflow: dict, job_id: str, workspace: Path, contexts: dict, skip: set[str]):
        jobs = workflow.get("jobs") or {}
        if job_id not in jobs:
            raise Bad(f"no job {job_id!r} in the workflow; it has {', '.join(jobs)}")
        self.job = jobs[job_id]
        names = [st.get("name") for st in self.job.get("steps") or []]
        unknown = sorted(skip - set(names))
        if unknown:
            raise Bad(
                f"--skip-step {', '.join(map(repr, unknown))}: no such step in job {job_id!r}; its steps: "
                f"{', '.join(n for n in names if n)}"
            )
        self.workspace = workspace
        self.skip = skip
        self.ex = Expressions(contexts, workspace)
        self.steps_ctx: dict[str, dict] = contexts.setdefault("steps", {})
        self.env: dict[str, str] = {}
        for scope in (workflow.get("env") or {}, self.job.get("env") or {}):
            contexts["env"] = dict(self.env)
            self.env.update({k: self.ex.substitute(v) for k, v in scope.items()})
        contexts["env"] = self.env
        self.path_extra: list[str] = []
        self.outcomes: list[dict] = []

    def run(self, base_env: dict[str, str]) -> bool:
        """Every step in order; True when the job succeeded."""
        for i, step in enumerate(self.job.get("steps") or []):
            name = step.get("name") or step.get("uses") or f"step {i + 1}"
            t0 = time.monotonic()
            outcome = self.step(step, name, base_env)
            wall = round(time.monotonic() - t0, 1)
            self.outcomes.append({"name": name, "id": step.get("id"), "outcome": outcome, "wall_s": wall})
            print(f"::: {name}: {outcome} ({wall:.0f} s)", flush=True)
            if step.get("id"):
                self.steps_ctx.setdefault(step["id"], {"outputs": {}}).update(outcome=outcome, conclusion=outcome)
        return not self.ex.failed

    def step(self, step: dict, name: str, base_env: dict[str, str]) -> str:
        if name in self.skip:
            print(f"::: {name}: not run (--skip-step)", flush=True)
            return "skipped"
        if not self.ex.condition(step.get("if")):
            return "skipped"
        if "run" not in step:
            print(
                f"::: {name}: uses {step.get('uses')}: not run here (the checkout is this directory, the tools this "
                "machine's)",
                flush=True,
            )
            return "skipped"
        shell = step.get("shell", "bash")
        if shell not in ("bash", "sh"):
            raise Bad(f"step {name!r}: shell {shell!r} is not supported here (bash or sh)")
        step_env = dict(self.env)
        self.ex.contexts["env"] = step_env
        step_env.update({k: self.ex.substitute(v) for k, v in (step.get("env") or {}).items()})
        self.ex.contexts["env"] = self.env
        print(f"::: {name}: running", flush=True)
        ok = self.execute(self.ex.substitute(step["run"]), shell, step, dict(base_env, **step_env))
        go_on = step.get("continue-on-error", False)
        if not ok and not (self.ex.value(go_on) if isinstance(go_on, str) else go_on):
            self.ex.failed = True
        return "success" if ok else "failure"

    def execute(self, script: str, shell: str, step: dict, env: dict[str, str]) -> bool:
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            (t / "step.sh").write_text(script)
            files = {k: t / k.lower() for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")}
            for f in files.values():
                f.touch()
            env = dict(env, **{k: str(v) for k, v in files.items()})
            env["PATH"] = os.pathsep.join([*self.path_extra, env.get("PATH", "")])
            args = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if shell == "bash" else ["sh", "-e"]
            cwd = self.workspace / step.get("working-directory", ".")
            timeout = float(step["timeout-minutes"]) * 60 if step.get("timeout-minutes") else None
            try:
                ok = subprocess.run([*args, str(t / "step.sh")], cwd=cwd, env=env, timeout=timeout).returncode == 0
            except subprocess.TimeoutExpired:
                print(f"::error::the step ran past its timeout-minutes ({step['timeout-minutes']})", flush=True)
                ok = False
            if step.get("id"):
                self.steps_ctx[step["id"]] = {"outputs": read_commands_file(files["GITHUB_OUTPUT"])}
            self.env.update(read_commands_file(files["GITHUB_ENV"]))
            self.path_extra = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p] + self.path_extra
        return ok


def pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise Bad(f"{what} {item!r}: give NAME=VALUE")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def contexts_for(workflow: dict, a: argparse.Namespace, workspace: Path) -> dict:
    triggers = workflow.get("on", workflow.get(True)) or {}  # YAML 1.1 reads a bare `on` as True
    declared = {}
    for trigger in ("workflow_call", "workflow_dispatch"):  # a reusable workflow run as itself takes its own defaults
        found = (triggers.get(trigger) or {}) if isinstance(triggers, dict) else {}
        declared.update(found.get("inputs") or {})
    inputs = {k: (v or {}).get("default") for k, v in declared.items()}
    inputs.update(pairs(a.input, "--input"))
    event = read_json(a.event, "--event", dict) if a.event else {}
    github = {
        "token": "fake-token",
        "repository": a.repository,
        "server_url": "https://github.com",
        "run_id": a.run_id,
        "run_attempt": "1",
        "ref_name": a.ref_name,
        "event_name": a.event_name or ("pull_request" if "pull_request" in event else "workflow_dispatch"),
        "workspace": str(workspace),
        "repository_owner": a.repository.split("/")[0],
        "event": event,
        "event_path": str(a.event.resolve()) if a.event else "",
    }
    needs = read_json(a.needs, "--needs", dict) if a.needs else {}
    return {
        "matrix": pairs(a.matrix, "--matrix"),
        "inputs": inputs,
        "github": github,
        "secrets": {},
        "vars": {},
        "needs": needs,
        "runner": {"os": "Linux", "arch": "X64", "temp": tempfile.gettempdir()},
    }


def called(workflow: dict, job_id: str, contexts: dict, workspace: Path, repos: dict[str, str]) -> tuple[dict, dict]:
    """The workflow that holds ``job_id`` and its contexts: ``workflow`` itself, or the reusable workflow one of its
    jobs calls, whose ``inputs`` are its ``workflow_call`` defaults under the caller's ``with:``."""
    jobs = workflow.get("jobs") or {}
    if job_id in jobs and not (jobs[job_id] or {}).get("uses"):
        return workflow, contexts
    for caller in sorted(jobs.values(), key=lambda j: j is not jobs.get(job_id)):  # a caller of the same name first
        uses = str((caller or {}).get("uses") or "")
        if not uses:
            continue
        if uses.startswith("./"):
            path = workspace / uses[2:]
        else:
            target, _, _ref = uses.partition("@")
            owner_repo, _, inner = target.partition("/")[2].partition("/")
            repo = f"{target.split('/')[0]}/{owner_repo}"
            if repo not in repos:
                raise Bad(f"a job calls {uses}: give --uses {repo}=DIR, a checkout of that repository")
            path = Path(repos[repo]) / inner
        try:
            inner_wf = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise Bad(f"a job calls {uses}, which cannot be read ({exc})") from None
        if job_id not in (inner_wf.get("jobs") or {}):
            continue
        triggers = inner_wf.get("on", inner_wf.get(True)) or {}
        declared = ((triggers.get("workflow_call") or {}) if isinstance(triggers, dict) else {}).get("inputs") or {}
        ex = Expressions(dict(contexts, env={}), workspace)
        inputs = {k: (v or {}).get("default") for k, v in declared.items()}
        inputs.update({k: ex.substitute(v) for k, v in (caller.get("with") or {}).items()})
        unknown = sorted(set(inputs) - set(declared))
        if unknown:
            raise Bad(f"the call of {uses} gives inputs it does not declare: {', '.join(unknown)}")
        return inner_wf, dict(contexts, inputs=inputs)
    raise Bad(f"no job {job_id!r} in the workflow or in a workflow it calls; it has {', '.join(jobs)}")


def read_json(path: Path, flag: str, kind: type):
    """The JSON of ``--event`` or ``--needs``; Bad (one line) when it is unreadable or not a ``kind``."""
    try:
        value = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise Bad(f"{flag} {path}: not a readable JSON file ({exc})") from None
    if not isinstance(value, kind):
        raise Bad(f"{flag} {path}: expected a JSON {kind.__name__}, got {type(value).__name__}")
    return value


def job_runs(job: Job, needs: dict) -> bool:
    """The job's ``if:`` (implied ``success()``: every needed job succeeded), as GitHub decides it before any step."""
    job.ex.failed = any((n or {}).get("result") not in (None, "success") for n in needs.values())
    go = job.ex.condition(job.job.get("if"))
    job.ex.failed = False
    return go


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workflow", type=Path)
    p.add_argument("job")
    p.add_argument(
        "--matrix", action="append", default=[], metavar="NAME=VALUE", help="a value of the job's matrix (repeatable)"
    )
    p.add_argument(
        "--input", action="append", default=[], metavar="NAME=VALUE", help="a workflow_dispatch input (repeatable)"
    )
    p.add_argument(
        "--skip-step", action="append", default=[], metavar="NAME", help="a step not to run, by name (repeatable)"
    )
    p.add_argument(
        "--summary", type=Path, default=Path("step-summary.md"), help="the job summary file (default: step-summary.md)"
    )
    p.add_argument("--outcomes", type=Path, help="write each step's name, id and outcome here (JSON)")
    p.add_argument(
        "--job-outputs",
        type=Path,
        help="write the job's outputs (its outputs: mapping, evaluated after its steps) here (JSON)",
    )
    p.add_argument("--repository", default="owner/repo", help="github.repository (default: owner/repo)")
    p.add_argument("--ref-name", default="main", help="github.ref_name (default: main)")
    p.add_argument("--run-id", default="1", help="github.run_id (default: 1)")
    p.add_argument("--event", type=Path, help="the event's payload (JSON): github.event, and $GITHUB_EVENT_PATH")
    p.add_argument(
        "--event-name",
        help="github.event_name (default: pull_request for a pull_request payload, else workflow_dispatch)",
    )
    p.add_argument(
        "--uses",
        action="append",
        default=[],
        metavar="OWNER/REPO=DIR",
        help="a checkout of the repository whose reusable workflow a job calls (repeatable)",
    )
    p.add_argument(
        "--needs", type=Path, help="the needs context (JSON): {job: {result, outputs}} of the jobs this one needs"
    )
    a = p.parse_args(argv)
    workspace = Path.cwd()
    try:
        workflow = yaml.safe_load(a.workflow.read_text())
        contexts = contexts_for(workflow, a, workspace)
        workflow, contexts = called(workflow, a.job, contexts, workspace, pairs(a.uses, "--uses"))
        job = Job(workflow, a.job, workspace, contexts, set(a.skip_step))
        summary = a.summary.resolve()
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.touch()
        g = contexts["github"]
        base_env = dict(
            os.environ,
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(workspace),
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_RUN_ID=g["run_id"],
            GITHUB_RUN_ATTEMPT="1",
            GITHUB_REPOSITORY=g["repository"],
            GITHUB_SERVER_URL=g["server_url"],
            GITHUB_REF_NAME=g["ref_name"],
            GITHUB_EVENT_NAME=g["event_name"],
            RUNNER_TEMP=tempfile.gettempdir(),
        )
        if g["event_path"]:
            base_env["GITHUB_EVENT_PATH"] = g["event_path"]
        t0 = time.monotonic()
        if not job_runs(job, contexts["needs"]):
            print(f"::: job {a.job}: skipped (its if: is false)", flush=True)
            if a.outcomes:
                a.outcomes.write_text("[]")
            return 0
        ok = job.run(base_env)
    except (Bad, OSError, yaml.YAMLError) as exc:
        print(f"run-workflow: {exc}", file=sys.stderr)
        return 2
    if a.outcomes:
        a.outcomes.write_text(json.dumps(job.outcomes, indent=1))
    if a.job_outputs:
        a.job_outputs.write_text(
            json.dumps({k: job.ex.substitute(v) for k, v in (job.job.get("outputs") or {}).items()})
        )
    print(f"::: job {a.job}: {'success' if ok else 'failure'} in {time.monotonic() - t0:.0f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
