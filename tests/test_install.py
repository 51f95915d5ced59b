"""The harness as a team takes it home: a wheel built from this repository, installed in a fresh virtualenv, then in an
empty folder ``init`` lays out a repository of the team's, the README's CPU command runs its workload there, and its
workflows (callers of this repository's reusable ones at a version) run through ``.ci/run-workflow.py`` with the fake
``gh``.

The fresh virtualenv takes the libraries the harness needs (torch, transformers, trl, ...) from the environment the
self-tests run in, through a path entry, since nothing may be downloaded here; the harness itself comes from the wheel
alone: the folder holds no harness/, no conftest.py, and this checkout is not on the path."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE_BIN = ROOT / ".ci" / "fake-bin"
HARNESS = "lora-perf-harness/lora-perf-harness@v0.1.0"


def tracked_copy(dest: Path) -> Path:
    """The repository's files as a clone has them (tracked and untracked-not-ignored), to build from."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, names):
        src = ROOT / name.decode()
        if src.is_file():
            (dest / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name.decode())
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, bin dir) of a fresh virtualenv holding the wheel built from this repository."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    tmp = tmp_path_factory.mktemp("install")
    src = tracked_copy(tmp / "src")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), "."],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = (tmp / "dist").glob("lora_perf_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "harness/cases.py" in names and "harness/scaffold/files/.github/workflows/nightly.yml" in names
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    # the libraries of this environment, after the venv's own site-packages (which the wheel goes into)
    (Path(site) / "libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", site, str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    (venv / "bin" / "lora-perf-harness").write_text(
        f"#!{py}\nimport sys\nfrom harness.commands.cli import main\nsys.exit(main())\n"
    )  # the console script pip writes (--target installs none)
    (venv / "bin" / "lora-perf-harness").chmod(0o755)
    return py, venv / "bin"


def readme_quick_start() -> list[list[str]]:
    """The commands of the README's quick start, as a shell splits them (comments left out)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start in your repository", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def team_env(bindir: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_ROOT", "HARNESS_FAULTS")}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    return dict(env, PATH=os.pathsep.join([str(FAKE_BIN), str(bindir), env["PATH"]]), HF_HUB_OFFLINE="1", **extra)


@pytest.mark.slow
def test_a_team_installs_the_wheel_lays_out_its_repository_and_runs_its_workload(installed, tmp_path):
    """The README's quick start as written, but for its install, which is this wheel's (the same distribution)."""
    py, bindir = installed
    cd, install, init_cmd, run_cmd = readme_quick_start()
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert install[:3] == ["pip", "install", "torch==2.13.0"] and install[3].endswith(f"@v{version}")
    assert install[3].startswith("lora-perf-harness @ git+https://github.com/lora-perf-harness/lora-perf-harness")
    team = tmp_path / cd[1]
    team.mkdir()
    env = team_env(bindir)
    where = subprocess.run(
        [str(py), "-c", "import harness; print(harness.__file__)"], cwd=team, env=env, capture_output=True, text=True
    )
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout, where.stdout + where.stderr
    init = subprocess.run(init_cmd, cwd=team, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "wrote workloads/my-repo-lora.toml" in init.stdout and " ".join(run_cmd) in init.stdout
    for rel in ("perftests/test_perf.py", "nightly.toml", "tox.ini", "baselines/README.md", ".gitignore"):
        assert (team / rel).is_file(), rel
    assert not (team / "conftest.py").exists() and not (team / "harness").exists()
    tox = (team / "tox.ini").read_text()  # a runner's tox environments install the workflows' version of the harness
    assert f"{{env:PERF_HARNESS_SPEC:{install[3]}}}" in tox, tox
    caller = (team / ".github" / "workflows" / "nightly.yml").read_text()
    assert f"uses: lora-perf-harness/lora-perf-harness/.github/workflows/reusable-nightly.yml@v{version}" in caller
    again = subprocess.run(["lora-perf-harness", "init"], cwd=team, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "wrote" not in again.stdout and "kept nightly.toml (it exists)" in again.stdout
    # the README's main job on a CPU, in the team's folder: the plugin comes from the wheel's entry point
    assert run_cmd[0] == "pytest"
    run = subprocess.run(
        [str(py), "-m", *run_cmd],
        cwd=team,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((team / "perf-results" / "report.json").read_text())
    assert {r["decomposition"] for r in report["rows"]} == {"1x4", "2x2", "4x1"}
    assert all(r["workload"] == "my-repo-lora" for r in report["rows"])


def test_the_laid_out_workflows_run_the_harness_s_reusable_ones_at_their_version(installed, tmp_path):
    """The team's callers resolve to this repository's reusable workflows (``--uses`` stands for GitHub fetching them
    at the tag), whose jobs run the harness's scripts from its checkout at that version (``.perf-harness``, as the
    workflow's checkout step leaves it): tonight's GPUs from the team's nightly.toml, the night's plan with the tox
    environment, and the pull-request plan of a change to the team's workload, through the fake gh."""
    py, bindir = installed
    team = tmp_path / "team"
    team.mkdir()
    env = team_env(bindir, TOX_SHIM_PYTHON=str(py))
    subprocess.run(["lora-perf-harness", "init", "--harness", HARNESS], cwd=team, env=env, check=True)
    shutil.copytree(ROOT / ".ci", tmp_path / "ci")
    (team / ".perf-harness").symlink_to(ROOT)  # the checkout of lora-perf-harness@v0.1.0

    def job(workflow: str, name: str, *args: str, event: dict | None = None) -> dict:
        out = tmp_path / f"{name}.json"
        cmd = [sys.executable, str(tmp_path / "ci" / "run-workflow.py"), f".github/workflows/{workflow}", name]
        cmd += ["--uses", f"lora-perf-harness/lora-perf-harness={ROOT}", "--job-outputs", str(out), *args]
        cmd += ["--repository", "acme/perf", "--summary", str(tmp_path / f"{name}-summary.md")]
        if event is not None:
            (tmp_path / "event.json").write_text(json.dumps(event))
            cmd += ["--event", str(tmp_path / "event.json")]
        proc = subprocess.run(cmd, cwd=team, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {
            "outputs": json.loads(out.read_text()),
            "out": proc.stdout,
            "summary": (tmp_path / f"{name}-summary.md"),
        }

    assert json.loads(job("nightly.yml", "gpus")["outputs"]["gpus"]) == ["l4"]
    skip = [
        a
        for s in ("Run the performance suite", "Record missing baselines (first night)", "Find environment regressions")
        for a in ("--skip-step", s)
    ]
    perf = job("nightly.yml", "perf", "--matrix", "gpu=cpu", "--matrix", "env=pinned", *skip)
    assert "::: Plan the night: success" in perf["out"]
    assert "team-lora" in perf["summary"].read_text()  # the plan names the team's workload
    log = tmp_path / "gh.log"
    files = tmp_path / "files.json"
    files.write_text(json.dumps([{"filename": "workloads/team-lora.toml", "status": "modified"}]))
    env.update(FAKE_GH_LOG=str(log), FAKE_GH_PR_FILES=str(files), GH_REPO="acme/perf")
    pr = {
        "number": 3,
        "title": "Try a longer sequence",
        "labels": [{"name": "perf-check"}],
        "head": {"ref": "longer", "sha": "a" * 40, "repo": {"full_name": "acme/perf"}},
        "base": {"ref": "main", "sha": "b" * 40, "repo": {"full_name": "acme/perf"}},
    }
    event = {"action": "labeled", "number": 3, "label": {"name": "perf-check"}, "pull_request": pr}
    plan = job("pr-check.yml", "plan", event=event)["outputs"]
    assert plan["run"] == "true" and "team-lora" in json.loads(plan["workloads"])["l4"]


def test_init_keeps_the_pins_of_this_repository_and_refuses_a_bad_name_in_one_line(tmp_path):
    from harness.scaffold import FILES

    assert (FILES / "constraints" / "pinned.txt").read_text() == (ROOT / "constraints" / "pinned.txt").read_text()
    for callers in ("nightly.yml", "pr-check.yml", "update-baselines.yml"):  # the same jobs as this repository's
        ours = (ROOT / ".github" / "workflows" / callers).read_text()
        theirs = (FILES / ".github" / "workflows" / callers).read_text()
        reusable = re.search(r"uses: \./\.github/workflows/(reusable-[\w-]+\.yml)", ours)[1]
        assert f"/.github/workflows/{reusable}@@REF@" in theirs, callers
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for args, says in (
        (["--workload", "My Workload"], "--workload 'My Workload': a workload name is"),
        (["--harness", "not a repo"], "--harness 'not a repo': give the harness's GitHub repository"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "init", str(tmp_path), *args], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
        assert not any(tmp_path.iterdir())  # nothing written


def test_the_suite_s_options_come_near_the_top_of_pytest_s_help():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "perftests", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("LoRA fine-tuning performance suite"))
    assert at < 100 < len(lines), at
