"""A verdict the user can trust, as processes see it: every reader takes only the report of the run it started; exit
codes that tell a regression from bad input, a failed measurement and a crash of the suite; Ctrl-C and SIGTERM end with
one line (130, 143); a cleanup that kills every worker whatever fails; no worker outlives a killed parent; and no result
written through a symbolic link out of the results dir.

Each test asserts the outcome (verdict or refusal, exit code, nothing lost, no process left). Workers are stand-ins (a
stub launcher whose workers answer at once, or a ``sleep``) except in the one long end-to-end test."""

import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import live_processes
from venvs import make_venv

from harness import exits
from harness.commands import cli, run_commands
from harness.errors import BadInput
from harness.files import OutsideResults, append_jsonl, report_session, write_json_atomic
from harness.judging.comparison_settings import ComparisonSettings
from harness.measuring.resident import ResidentWorker, WorkerDied
from harness.measuring.resident.messages import BlockReport, Ready
from harness.results.comparison import ComparisonResult
from harness.sidebyside import run as il
from harness.sidebyside.config import ComparisonConfig
from harness.sidebyside.launchers import Hooks, Plain
from harness.sidebyside.loop import Comparison

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
ENV.pop("HARNESS_FAULTS", None)


# ---- stand-ins ------------------------------------------------------------------------------------------------------
class StubWorker:
    """A resident worker that answers at once, with step times of ``slow`` times 1 s (a deterministic wobble; the
    report's plan sizes launches by them, so they are not tiny), or that dies at its first block with ``die``."""

    hold_cpus = warm_cpus = startup_wall_s = prestarted = None

    def __init__(self, side: str, launch: int, slow: float = 1.0, die: bool = False):
        self.side, self.launch, self.slow, self.die, self.n = side, launch, slow, die, 0

    def wait_ready(self) -> Ready:
        return Ready(timing_s={}, cpus=None, cuda=False, env={"versions": {"torch": "stub"}})

    def block(self, k: int, inject=None, micro: bool = False) -> BlockReport:
        if self.die:
            raise WorkerDied(
                f"resident worker {self.side.upper()} (launch {self.launch}) during block 1: it was killed by SIGKILL"
            )
        self.n += 1
        steps = [1000.0 * self.slow * (1 + 0.01 * math.sin(7 * self.n + i + 3 * self.launch)) for i in range(k)]
        return BlockReport(
            k=k,
            step_times_ms=steps,
            canary_ms=1.0,
            started_at=time.time(),
            wall_s=sum(steps) / 1000,
            cpu_s=sum(steps) / 1000,
            global_step=self.n * k,
        )

    def stop(self) -> None:
        pass

    def close(self) -> int:
        return 0

    def kill(self) -> int:
        return -9


def stub_launcher(monkeypatch, slow_b: float = 1.0, die: bool = False) -> None:
    """Every interleave() from here on runs on :class:`StubWorker` s (B ``slow_b`` times A's step, or dying)."""

    class Stub(Plain):
        def open(self, launch):
            return {"a": StubWorker("a", launch), "b": StubWorker("b", launch, slow_b, die)}

    monkeypatch.setattr(il, "launcher_for", lambda factory: Stub(factory))


def cfg(tmp_path, **kw) -> ComparisonConfig:
    return ComparisonConfig(
        **{
            "workload": "tiny-qwen3",
            "decomposition": "4x1",
            "gpu": "cpu",
            "workloads_dir": str(ROOT / "workloads"),
            "results_dir": str(tmp_path / "out"),
            "pairs": 12,
            "launches": 3,
            "block_steps": 2,
            "warmup_steps": 1,
            "cpus": (),
            "prestart": False,
            "warm_apart": False,
            "seed": 3,
            **kw,
        }
    )


def suite_report(tmp_path) -> Path:
    """A suite's report with one runtime regression against its stored baseline (and nothing else failing)."""
    data = {
        "gpu": "cpu",
        "session_id": "suite-1",
        "rows": [{"workload": "tiny-qwen3", "decomposition": "4x1"}],
        "versions": {},
        "verdicts": [
            {"kind": "runtime", "case": "tiny-qwen3-4x1", "outcome": "regression", "message": "REGRESSION: x1.30"}
        ],
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


def python_b(tmp_path) -> str:
    """Another environment for side B (a virtualenv of this interpreter), so that A and B are not one environment."""
    return make_venv(tmp_path / "venv-b")


# ---- 1. a report is read only by the run that wrote it ---------------------------------------------------------------
def test_confirm_never_takes_an_earlier_runs_report_for_its_verdict(tmp_path, monkeypatch):
    """A rerun whose worker died, beside the earlier confirmation's report: no verdict (exit 3), never "CONFIRMED"."""
    from harness.workflows.confirm import UNCONFIRMED, confirm

    t = ComparisonConfig(
        workload="",
        decomposition="",
        python_a=sys.executable,
        python_b=python_b(tmp_path),
        cpus=(),
        pairs=12,
        launches=3,
        block_steps=2,
        warmup_steps=1,
        prestart=False,
        warm_apart=False,
        seed=3,
    )
    common = dict(workloads_dir=ROOT / "workloads", results_dir=tmp_path / "c", out=lambda _: None)
    stub_launcher(monkeypatch, slow_b=1.5)
    assert confirm(suite_report(tmp_path), t, **common).exit_code == exits.REGRESSION
    first = json.loads((tmp_path / "c" / "report.json").read_text())
    assert first["confirm"]["confirmed"] == ["tiny-qwen3-4x1"]
    earlier = tmp_path / "c" / "tiny-qwen3-4x1" / "report.json"
    stale = earlier.read_text()

    def dies_leaving_the_dir_alone(cfg, *, out, **_):  # as a run that stops before it clears anything
        return ComparisonResult(exits.MEASUREMENT_FAILED, Path(cfg.results_dir), reason="a worker died")

    monkeypatch.setattr(il, "interleave", dies_leaving_the_dir_alone)
    assert confirm(suite_report(tmp_path), t, **common).exit_code == exits.MEASUREMENT_FAILED
    got = json.loads((tmp_path / "c" / "report.json").read_text())
    v = got["verdicts"][0]
    assert (
        earlier.read_text() == stale and json.loads(stale)["verdict"]["outcome"] == "regression"
    )  # still there, not read
    assert v["outcome"] == UNCONFIRMED and "no interleaved verdict from this run (exit code 3)" in v["message"], v
    assert got["confirm"]["confirmed"] == [] and got["confirm"]["failed"] == ["tiny-qwen3-4x1"]
    assert got["confirm"]["session_id"] != first["confirm"]["session_id"] and got["session_id"] == "suite-1"
    monkeypatch.undo()
    stub_launcher(
        monkeypatch, die=True
    )  # the real comparison, its worker dead: the earlier report is gone, no verdict either
    assert confirm(suite_report(tmp_path), t, **common).exit_code == exits.MEASUREMENT_FAILED and not earlier.exists()


def test_two_virtualenvs_of_one_interpreter_are_two_environments(tmp_path):
    """tox's .tox/pinned and .tox/latest run one base binary; the environment is the prefix and its distributions. A
    wrapper of this interpreter (another path, the same prefix) is still this environment."""
    from harness.measuring.interpreters import environment

    pinned, latest = make_venv(tmp_path / "pinned"), make_venv(tmp_path / "latest")
    assert os.path.realpath(pinned) == os.path.realpath(latest)  # the binary cannot tell them apart
    a, b = environment(pinned, "a"), environment(latest, "b")
    assert not a.same_as(b) and a.distributions == b.distributions and a.prefix != b.prefix
    wrapper = tmp_path / "python-here"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    assert environment(str(wrapper), "b").same_as(environment(sys.executable, "a"))


def test_the_nightly_confirms_a_slowdown_between_two_virtualenvs_and_opens_an_issue(tmp_path, monkeypatch, fake_gh):
    """The nightly's confirm step as it runs it (pinned's python, A pinned, B latest), its workers stand-ins with B 1.5
    times slower: confirmed, exit 1, and the issue step files the runtime regression from the confirmed report."""
    pinned, latest = make_venv(tmp_path / "pinned"), make_venv(tmp_path / "latest")
    stub_launcher(monkeypatch, slow_b=1.5)
    out = tmp_path / "confirm"
    code = cli.main(
        [
            "confirm",
            str(suite_report(tmp_path)),
            "--python-a",
            pinned,
            "--python-b",
            latest,
            "--results-dir",
            str(out),
            "--workloads-dir",
            str(ROOT / "workloads"),
            "--set",
            "pairs=12",
            "--set",
            "launches=3",
            "--set",
            "block_steps=2",
            "--set",
            "warmup_steps=1",
            "--set",
            "prestart=false",
            "--set",
            "warm_apart=false",
        ]
    )
    got = json.loads((out / "report.json").read_text())
    assert (
        code == exits.REGRESSION
        and got["confirm"]["confirmed"] == ["tiny-qwen3-4x1"]
        and not got["confirm"]["same_environment"]
    )
    filed = fake_gh(json.loads(suite_report(tmp_path).read_text()), CONFIRM=str(out / "report.json"))
    titles = [c[c.index("--title") + 1] for c in filed if c[:2] == ["issue", "create"]]
    assert titles == ["perf regression: cpu latest runtime tiny-qwen3-4x1"]


def test_advise_never_takes_an_earlier_runs_report_for_its_verdict(tmp_path, monkeypatch):
    from harness.workflows import advise as ad
    from harness.workflows.advise_probe import Probe

    probes = {s: Probe("ok", probe_ms=ms, step_ms=ms) for s, ms in (("4x1", 100.0), ("2x2", 110.0), ("1x4", 400.0))}
    monkeypatch.setattr(ad, "probe", lambda *a, **k: (probes, None))
    old = tmp_path / "out" / "2x2-vs-4x1"
    old.mkdir(parents=True)
    (old / "report.json").write_text(
        json.dumps(
            {
                "session_id": "interleave-earlier",
                "verdict": {"outcome": "improvement", "ratio": 0.5, "lo": 0.4, "hi": 0.6, "message": "old"},
            }
        )
    )
    (tmp_path / "out" / "report.json").write_text('{"answer": "an earlier advice"}')
    monkeypatch.setattr(
        il,
        "interleave",
        lambda cfg, *, workload, out: ComparisonResult(exits.MEASUREMENT_FAILED, Path(cfg.results_dir)),
    )
    advice = ad.advise(
        gpu="cpu",
        workload="tiny-qwen3",
        workloads_dir=ROOT / "workloads",
        results_dir=tmp_path / "out",
        census=False,
        out=lambda _: None,
    )
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert advice.exit_code == exits.MEASUREMENT_FAILED and advice.failed == ("2x2",) and advice.recommended == "4x1"
    assert report["failed"] == ["2x2"] and report["session_id"].startswith("advise-")
    assert (
        report["compared"]["2x2"]["outcome"] == "inconclusive"
        and "from this run (exit code 3)" in report["compared"]["2x2"]["message"]
    )
    assert report["answer"]["recommended"] == "4x1"  # the old "improvement" of 2x2 did not win it


def test_the_pytest_fixture_reads_only_its_own_comparisons_report(perf_project, monkeypatch):
    old = perf_project.path / "out" / "interleave" / "tiny-qwen3-4x1"
    old.mkdir(parents=True)
    (old / "report.json").write_text(json.dumps({"session_id": "interleave-earlier", "verdict": {"outcome": "pass"}}))
    perf_project.makepyfile(
        test_fixture="""
        def test_stale(perf_interleave):
            assert perf_interleave(("tiny-qwen3", "4x1")) == (3, None)
        """
    )
    monkeypatch.setattr(
        il, "interleave", lambda cfg, *, out: ComparisonResult(exits.MEASUREMENT_FAILED, Path(cfg.results_dir))
    )
    perf_project.runpytest(
        "test_fixture.py", "--gpu=cpu", "--results-dir", "out", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=1)


def test_recover_tells_an_old_report_from_this_runs(tmp_path):
    class Stub(Plain):  # stand-in workers through the comparison's test seam, no module patched
        def open(self, launch):
            return {"a": StubWorker("a", launch), "b": StubWorker("b", launch, 1.5)}

    out = tmp_path / "out"
    made = il.interleave(cfg(tmp_path), hooks=Hooks(launcher=Stub), out=lambda _: None)
    assert made.exit_code == exits.REGRESSION and made.verdict.outcome == "regression"
    own = json.loads((out / "report.json").read_text())
    run = json.loads((out / "progress.json").read_text())["settings"]["session_id"]
    assert own["session_id"] == run and report_session(own) == run
    with pytest.raises(
        ValueError, match=f"already has report.json of this run \\({run}\\): the run wrote its own report"
    ):
        il.recover(out, out=lambda _: None)
    write_json_atomic(out / "report.json", {**own, "session_id": "interleave-earlier", "verdict": {"outcome": "pass"}})
    said = []
    assert il.recover(out, out=said.append).exit_code == exits.REGRESSION
    assert any(
        f"an old report (of run interleave-earlier, not this run's {run}); "
        "moved aside to report-interleave-earlier.json" in s
        for s in said
    ), said
    again = json.loads((out / "report.json").read_text())
    assert (
        again["session_id"] == run
        and again["recovered"]["pairs"] == own["pairs"]
        and again["verdict"]["outcome"] == "regression"
    )
    assert json.loads((out / "report-interleave-earlier.json").read_text())["verdict"] == {"outcome": "pass"}


def test_the_report_states_the_one_verdict_decided_once(tmp_path, monkeypatch):
    """comparison_verdict decides a comparison's verdict once: report.json, the issue's verdicts and the returned result
    state what it returned (here with another message), and nothing judges the pairs again (the run's one planned look,
    recover's one last look: analyse analyses that verdict)."""
    from dataclasses import replace

    from harness.judging import paired as pd
    from harness.sidebyside import finish as fin

    decided, looks = [], []
    real_decide, real_verdict = pd.PairedCheck.decide, il.comparison_verdict

    def counted(self, *a, **k):
        looks.append(1)
        return real_decide(self, *a, **k)

    def one_verdict(*a, **k):
        decided.append(replace(real_verdict(*a, **k), message=f"the one verdict {len(decided) + 1}"))
        return decided[-1]

    monkeypatch.setattr(pd.PairedCheck, "decide", counted)
    for module in (il, fin):
        monkeypatch.setattr(module, "comparison_verdict", one_verdict)
    stub_launcher(monkeypatch, slow_b=1.5)
    out = tmp_path / "out"
    made = il.interleave(cfg(tmp_path), out=lambda _: None)
    report = json.loads((out / "report.json").read_text())
    assert len(decided) == 1 and len(looks) == 1 and made.verdict == decided[0]
    assert report["verdict"] == decided[0].to_json() and report["verdicts"][0]["message"] == "the one verdict 1"
    assert made.exit_code == exits.REGRESSION and made.verdict.ratio == pytest.approx(1.5)
    (out / "report.json").unlink()
    looks.clear()
    again = il.recover(out, out=lambda _: None)
    assert len(decided) == 2 and len(looks) == 1 and again.verdict == decided[1]
    assert json.loads((out / "report.json").read_text())["verdict"]["message"] == "the one verdict 2"


# ---- 2. exit codes ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raised, code, says",
    [
        (BadInput("--pairs must be positive"), exits.BAD_INPUT, "error: --pairs must be positive"),
        # a ValueError the suite did not raise as a refusal (a library's, or a bug) is the suite's own error,
        # not bad input
        (
            ValueError("math domain error"),
            exits.SUITE_ERROR,
            "error: unexpected ValueError: math domain error; a bug of the suite",
        ),
        (
            WorkerDied("resident worker B (launch 2) during block 3: it was killed by SIGKILL (full log: w.log)"),
            exits.MEASUREMENT_FAILED,
            "error: resident worker B (launch 2) during block 3",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "out/blocks.jsonl"),
            exits.SUITE_ERROR,
            "error: I/O error: out/blocks.jsonl: Read-only",
        ),
        (KeyError("verdict"), exits.SUITE_ERROR, "error: unexpected KeyError: 'verdict'; a bug of the suite"),
    ],
)
def test_each_failure_has_its_own_exit_code_and_one_line(monkeypatch, capsys, raised, code, says):
    def fail(_):
        raise raised

    monkeypatch.setattr(run_commands, "_cmd_recover", fail)
    assert cli.main(["recover", "somewhere"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(says), err
    if code == exits.SUITE_ERROR:  # the traceback is in the log file the line names
        log = Path(err[0].rsplit("traceback in ", 1)[1].rstrip(")"))
        assert "Traceback" in log.read_text() and type(raised).__name__ in log.read_text()
        log.unlink()


def test_a_directory_as_python_b_is_bad_input_before_any_work(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "interleave",
            "--gpu",
            "cpu",
            "--workload",
            "tiny-qwen3",
            "--decomposition",
            "4x1",
            "--workloads-dir",
            str(ROOT / "workloads"),
            "--results-dir",
            str(tmp_path / "out"),
            "--python-b",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=tmp_path,
        timeout=120,
    )
    assert (
        res.returncode == exits.BAD_INPUT
        and "not an executable Python" in res.stderr
        and len(res.stderr.strip().splitlines()) == 1
    )
    assert not (tmp_path / "out").exists()  # refused before the results dir was made


SLEEPING_COMMAND = """
import sys, time
from harness.commands import cli, run_commands
def stand_in(_):
    print("ready", flush=True)
    time.sleep(60)
run_commands._cmd_recover = stand_in
sys.exit(cli.main(["recover", "somewhere"]))
"""


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, exits.INTERRUPTED), (signal.SIGTERM, exits.TERMINATED)])
def test_ctrl_c_and_sigterm_end_a_command_with_one_line_130_and_143(sig, code):
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEPING_COMMAND],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code and err.strip().startswith("interrupted (") and len(err.strip().splitlines()) == 1, (
        err
    )


def test_sigterm_ends_a_pytest_session_with_one_line_and_143(pytester):
    """A cancelled CI job: the test that was running stops, the one that finished counts, one line, exit 143."""
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]')
    pytester.makepyfile(
        test_slow="""
        import time
        def test_done():
            pass
        def test_running():
            print("running", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "test_slow.py", "--gpu", "cpu"],
        cwd=pytester.path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    while not any("running" in ln for ln in lines):
        lines.append(proc.stdout.readline())
        assert lines[-1] or proc.poll() is None, "".join(lines)
    proc.send_signal(signal.SIGTERM)
    text = "".join(lines) + proc.communicate(timeout=30)[0]
    assert proc.returncode == exits.TERMINATED, text
    assert "SIGTERM: the session stopped" in text and "1 passed" in text
    assert "Traceback" not in text and "Terminated: received SIGTERM" not in text


# ---- 3. the cleanup kills every worker first -------------------------------------------------------------------------
@pytest.mark.parametrize("fault", ["read-only", "killing A fails"])
def test_a_failing_cleanup_still_kills_both_workers(tmp_path, monkeypatch, fault):
    """progress.json cannot be written (EROFS) once both workers are up, and neither can their request files be removed;
    or killing worker A itself raises (a second Ctrl-C): worker B is killed all the same, and the first error is what
    the caller hears."""
    from harness.sidebyside.plan import ComparisonPlan

    workers = {}
    for s in "ab":
        w = ResidentWorker(s.upper(), None, None, tmp_path / "work", gpu="cpu")
        w.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
        w.ready = Ready()
        workers[s] = w

    class Opened(Plain):
        def open(self, launch):
            return workers

    def read_only(*_, **__):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "progress.json"))

    settings = ComparisonSettings(alpha=0.05, threshold=0.02, inject_work_b_percent=0, warmup_steps=1, prestart=False)
    comparison = Comparison(
        settings, ComparisonPlan.make(4, 2, None, 2, "step", 1, 0), None, Opened(None), tmp_path, "case", {}
    )
    monkeypatch.setattr(Comparison, "save_progress", read_only)
    if fault == "read-only":
        monkeypatch.setattr(Path, "unlink", read_only)
    else:
        real = workers["a"].kill
        monkeypatch.setattr(
            workers["a"], "kill", lambda: (real(), (_ for _ in ()).throw(KeyboardInterrupt("Ctrl-C again")))
        )
    with pytest.raises(OSError if fault == "read-only" else KeyboardInterrupt):
        comparison.run_launch(1)
    assert [w.proc.poll() for w in workers.values()] == [-signal.SIGKILL, -signal.SIGKILL]


# ---- 4. a fresh worker dies with its parent --------------------------------------------------------------------------
PARENT = """
import sys
from pathlib import Path
from harness.measuring import runner
from harness.spec_folder import load_workload
tag, out, workloads = sys.argv[1:4]
# the worker itself is a stand-in that would train for a minute:
# what matters is what happens to it when this parent dies
runner.worker_command = lambda req, a, b: [
    sys.executable, "-c", "import time; time.sleep(60)", "harness-stub-worker", tag
]
w = load_workload(workloads, "tiny-qwen3")
runner.run_one(runner.RunRequest(w, w.decompositions[0], 1), Path(out), "s", 600, "cpu")
"""


def test_a_fresh_worker_dies_with_its_sigkilled_parent(tmp_path):
    tag = f"tag-{os.getpid()}-{time.monotonic_ns()}"
    mine = lambda: live_processes(b"harness-stub-worker", lambda _, argv: tag.encode() in argv)  # noqa: E731
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, tag, str(tmp_path / "out"), str(ROOT / "workloads")], env=ENV
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not mine() and parent.poll() is None:
        time.sleep(0.1)
    assert mine(), "the worker never started"
    parent.kill()  # SIGKILL: no cleanup of its own; the worker is in a process group of its own
    parent.wait(timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and mine():
        time.sleep(0.1)
    assert mine() == [], "a fresh worker outlived its SIGKILLed parent"


# ---- 5. results are written inside the results dir only --------------------------------------------------------------
def test_symbolic_links_out_of_the_results_dir_are_refused(tmp_path):
    outside, out = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    (outside / "victim").write_text("keep me\n")
    (out / "runs.jsonl").symlink_to(outside / "victim")
    with pytest.raises(
        OutsideResults, match="runs.jsonl is a symbolic link to .*victim, outside .*: results are written only inside"
    ):
        append_jsonl(out / "runs.jsonl", {"run": 1})
    (out / "report.json").symlink_to(outside / "report.json")
    with pytest.raises(OutsideResults, match="report.json is a symbolic link"):
        write_json_atomic(out / "report.json", {"verdict": None})
    (out / "inside.jsonl").write_text("")
    (out / "link.jsonl").symlink_to("inside.jsonl")  # a link within the folder is followed
    append_jsonl(out / "link.jsonl", {"run": 2})
    assert (out / "inside.jsonl").read_text() == '{"run":2}\n'
    census = [
        sys.executable,
        "-m",
        "harness",
        "census",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--decomposition",
        "4x1",
        "--results-dir",
        str(out),
    ]
    (out / "work").symlink_to(outside, target_is_directory=True)
    (out / "runs.jsonl").unlink()
    interleave = [
        sys.executable,
        "-m",
        "harness",
        "interleave",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        str(tmp_path / "il"),
    ]
    (tmp_path / "il").mkdir()
    (tmp_path / "il" / "blocks.jsonl").symlink_to(outside / "blocks.jsonl")
    for args, name in ((census, "work"), (interleave, "blocks.jsonl")):
        res = subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
        assert res.returncode == exits.BAD_INPUT and len(res.stderr.strip().splitlines()) == 1, res.stdout + res.stderr
        assert (
            f"{name} is a symbolic link to {outside}" in res.stderr and "results are written only inside" in res.stderr
        )
    assert sorted(p.name for p in outside.iterdir()) == ["victim"] and (outside / "victim").read_text() == "keep me\n"


# ---- the end to end: a real pytest session on the tiny workload ------------------------------------------------------
@pytest.mark.slow
@pytest.mark.long
def test_sigterm_during_a_real_session_keeps_the_finished_run_and_leaves_no_worker(two_splits):
    """Splits 1x4 and 4x1: SIGTERM while 4x1 trains, after 1x4 finished: exit 143, one line that names what is kept,
    1x4's record in runs.jsonl, no worker left."""
    project = two_splits
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "perftests",
            "--gpu=cpu",
            "--results-dir",
            "out",
            "--repeats",
            "1",
            "--steps",
            "6",
            "-k",
            "test_run and not runtime",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project.path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    log = project.path / "out" / "runs.jsonl"

    def workers():
        return live_processes(b"harness.measuring.worker", lambda p, _: os.readlink(p / "cwd") == str(project.path))

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (log.exists() and log.read_text().count("\n") >= 1 and workers()):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    text = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == exits.TERMINATED, text
    assert "SIGTERM: the session stopped, its running worker killed; 1 finished run(s) kept in out/runs.jsonl" in text
    assert "Traceback" not in text and "Terminated: received SIGTERM" not in text
    assert [json.loads(ln)["decomposition_id"] for ln in log.read_text().splitlines()] == ["1x4"]
    time.sleep(0.5)
    assert workers() == []


def test_the_exit_codes_are_documented_in_one_short_page():
    text = (ROOT / "docs" / "exit-codes.md").read_text()
    assert len(text.splitlines()) <= 50
    for code in (
        exits.OK,
        exits.REGRESSION,
        exits.BAD_INPUT,
        exits.MEASUREMENT_FAILED,
        exits.SUITE_ERROR,
        exits.INTERRUPTED,
        exits.TERMINATED,
    ):
        assert f"| {code} |" in text
    assert (
        len(
            {
                exits.OK,
                exits.REGRESSION,
                exits.BAD_INPUT,
                exits.MEASUREMENT_FAILED,
                exits.SUITE_ERROR,
                exits.INTERRUPTED,
                exits.TERMINATED,
            }
        )
        == 7
    )
