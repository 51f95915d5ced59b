"""No job that installs from the package index holds a write token.

A release installed from the package index (the nightly's newest releases, a pin bump's, the dev tools) runs code of
people outside the repository. In the job that installs it there must be nothing it could write with: no ``write``
permission of the job's token, no credentials persisted in a checkout's ``.git/config``, and no token in the
environment (``GH_TOKEN``, ``github.token``, a secret). The steps that push, comment or open pull requests run in jobs
of their own that install nothing, fed by artifacts. The checker reads the workflow files as GitHub does: a job without
``permissions`` takes the workflow's, and one without either gets the repository's default token, which may write."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))

# an install from the package index: pip/uv/pipx/conda installs (unless --no-index), and tox run as a command, which
# builds its environments with pip
INSTALL = re.compile(
    r"\b(?:pip3?|uv(?: pip)?|pipx|conda)\s+(?:install|sync)\b|(?:^|[;&|(]|\bthen\b|\bdo\b|\bexec\b)\s*tox(?:\s|$)"
)
TOKEN = re.compile(r"github\.token|secrets\.|\bGH_TOKEN\b|\bGITHUB_TOKEN\b")
SCRIPT = re.compile(r"(?:^|\s)(\.(?:ci|github)/[\w./-]+)")


def code(text: str) -> str:
    """A shell step's commands without its comments."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines())


def shell_scripts(run: str) -> list[str]:
    """The text of the repository's shell scripts a step runs (``bash .ci/run``): what they install counts too."""
    out = []
    for path in SCRIPT.findall(run):
        f = ROOT / path
        if f.is_file() and f.suffix in ("", ".sh"):
            out.append(code(f.read_text()))
    return out


def installs(job: dict) -> list[str]:
    """The commands of ``job`` that install from the package index."""
    found = []
    for step in job.get("steps", []):
        run = code(str(step.get("run", "")))
        for text in (run, *shell_scripts(run)):
            for line in text.splitlines():
                if INSTALL.search(line) and "--no-index" not in line:
                    found.append(line.strip())
    return found


def write_access(workflow: dict, job: dict) -> list[str]:
    """What in ``job`` could write to the repository: a write permission, persisted credentials, a token in reach."""
    why = []
    perms = job.get("permissions", workflow.get("permissions"))
    if perms is None:
        why.append("no permissions: the repository's default token, which may write")
    elif isinstance(perms, str):
        if perms != "read-all":
            why.append(f"permissions: {perms}")
    else:
        why += [f"permissions {k}: write" for k, v in perms.items() if v == "write"]
    for step in job.get("steps", []):
        if (
            "actions/checkout" in str(step.get("uses", ""))
            and (step.get("with") or {}).get("persist-credentials") is not False
        ):
            why.append(f"a checkout that keeps its credentials ({step.get('with') or {}})")
    places = [("job env", job.get("env") or {})]
    places += [
        (f"step {s.get('name') or s.get('uses')}", {**(s.get("env") or {}), **(s.get("with") or {})})
        for s in job.get("steps", [])
    ]
    for where, values in places:
        why += [f"{where}: {k}" for k, v in values.items() if TOKEN.search(f"{k}={v}")]
    return why


def jobs():
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        for name, job in wf["jobs"].items():
            yield pytest.param(wf, job, id=f"{path.name}:{name}")


@pytest.mark.parametrize("workflow, job", jobs())
def test_a_job_that_installs_from_the_package_index_holds_no_write_token(workflow, job):
    if not installs(job):
        return
    assert not write_access(workflow, job), f"installs {installs(job)[0]!r} beside {write_access(workflow, job)}"


def test_the_check_catches_a_token_beside_an_install():
    wf = {"permissions": {"contents": "read"}}
    tox = {"run": "tox -e latest --notest"}
    checkout = {"uses": "actions/checkout@v6"}
    quiet = {"uses": "actions/checkout@v6", "with": {"persist-credentials": False}}
    assert installs({"steps": [tox]}) and installs({"steps": [{"run": "python -m pip install --upgrade tox"}]})
    assert installs({"steps": [{"run": "bash .ci/run"}]})  # its pip install counts
    assert not installs({"steps": [{"run": "python -m pip install --no-index --no-deps .whl/*.whl"}]})
    assert installs({"steps": [{"run": "(cd base && tox -e pinned --notest)"}]})
    assert not installs({"steps": [{"run": "# tox is not run here\necho 'the tox environment'"}]})
    assert write_access(wf, {"steps": [checkout, tox]})  # persisted credentials
    assert write_access(wf, {"permissions": {"contents": "write"}, "steps": [quiet, tox]})
    assert write_access({}, {"steps": [quiet, tox]})  # the default token
    assert write_access(wf, {"steps": [quiet, {**tox, "env": {"GH_TOKEN": "${{ github.token }}"}}]})
    assert write_access(wf, {"env": {"T": "${{ secrets.PAT }}"}, "steps": [quiet, tox]})
    assert not write_access(wf, {"steps": [quiet, tox]})


def test_the_nightly_writes_only_from_a_job_that_installs_nothing():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "reusable-nightly.yml").read_text())
    perf, publish = wf["jobs"]["perf"], wf["jobs"]["publish"]
    assert installs(perf) and not write_access(wf, perf)
    assert not installs(publish) and publish["runs-on"] == "ubuntu-latest" and write_access(wf, publish)
    uses = [s["uses"] for s in publish["steps"] if "uses" in s]
    assert all(
        u.split("@")[0] in {"actions/checkout", "actions/setup-python", "actions/download-artifact"} for u in uses
    )
    assert "first-night.py --phase record" in str(perf["steps"]) and "first-night.py --phase propose" in str(publish)
