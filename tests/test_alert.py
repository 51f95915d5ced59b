"""Alerts where the team looks: ``python -m harness alert`` posts a job's flagged cases to a webhook, each with the
command that reproduces it on a runner, which the suite's report, the regression issue and the message all carry.

The webhook here is a local HTTP server on 127.0.0.1; the command runs in an interpreter without site-packages
(``python -S``), as in a step that installs nothing."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.commands.alert import alert
from harness.judging import baseline as bl
from harness.judging.comparison_settings import ComparisonSettings
from harness.reporting import report, webhook
from harness.results.repro import repro
from harness.sidebyside.finish import issue_fields
from harness.store.alerts import issues_report
from harness.store.findings import CaseLines, CensusAlert, Findings, TimingAlert
from harness.store.shifts import ShiftRule

ROOT = Path(__file__).resolve().parents[1]
RUN = "https://example.invalid/run/1"
TIMED = "pytest perftests --gpu=cpu --workload tiny-qwen3 -k 1x4 --repeats 5"


class Webhook:
    """A local webhook: every POST's headers and JSON body kept; it answers ``status``."""

    def __init__(self):
        self.posts: list[dict] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.posts.append({"type": self.headers["Content-Type"], "json": json.loads(body), "size": len(body)})
                self.send_response(hook.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/team"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):  # twice is once
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook(monkeypatch):
    for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(k, raising=False)
    h = Webhook()
    yield h
    h.close()


def bare(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``python -S -m harness alert ARGS``: the standard library only, the project of ``cwd`` (its nightly.toml)."""
    keep = {
        k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k not in ("PERF_WEBHOOK_URL", "PERF_ENV")
    }
    return subprocess.run(
        [sys.executable, "-S", "-m", "harness", "alert", *args],
        env=dict(keep, PYTHONPATH=str(ROOT), HARNESS_ROOT=str(cwd), **env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def regressed(tmp_path, tiny, make) -> Path:
    """A suite's report.json with runtime regressions of every split (the tiny workload 30% slower than its
    baseline)."""
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    bl.write(
        tmp_path / "baselines",
        bl.from_runs(tiny, "cpu", make(base, [], repeats=5).run().records, "test"),
    )
    slow = {d: [x * 1.3 for x in v] for d, v in base.items()}
    report.write(report.build(make(slow, [], repeats=5).run().judge(), session_id="s-1"), tmp_path / "out")
    return tmp_path / "out" / "report.json"


def test_the_suites_report_carries_each_verdicts_repro_and_the_alert_posts_it(regressed, hook, tmp_path):
    data = json.loads(regressed.read_text())
    v = next(v for v in data["verdicts"] if v["kind"] == "runtime" and v["case"] == "tiny-qwen3-1x4")
    assert v["outcome"] == "regression" and v["repro"] == TIMED
    assert f"  - reproduce on a runner: `{TIMED}`" in (regressed.parent / "report.md").read_text()
    said = []
    code = alert(
        [str(regressed)],
        env="latest",
        run_url=RUN,
        project=tmp_path,
        environ={"PERF_WEBHOOK_URL": hook.url},
        out=said.append,
    )
    assert (
        code == 0
        and len(hook.posts) == 1
        and said == ["alert: posted 3 flagged case(s) to the webhook in $PERF_WEBHOOK_URL"]
    )
    got = hook.posts[0]
    assert got["type"].startswith("application/json")
    msg = got["json"]
    assert msg["gpu"] == "cpu" and msg["env"] == "latest" and msg["run_url"] == RUN and msg["more"] == 0
    case = next(c for c in msg["cases"] if c["case"] == "tiny-qwen3-1x4")
    assert case["kind"] == "runtime" and case["outcome"] == "regression" and case["repro"] == TIMED
    assert case["message"] == v["message"] and case["report"] == str(regressed)
    assert "tiny-qwen3-1x4" in msg["text"] and TIMED in msg["text"] and RUN in msg["text"]


def test_the_alert_runs_with_the_standard_library_only_and_posts(regressed, hook, tmp_path):
    assert bare(["--help"], tmp_path).returncode == 0
    proc = bare(
        [str(regressed), str(tmp_path / "ab" / "report.json")], tmp_path, PERF_WEBHOOK_URL=hook.url, PERF_ENV="pinned"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"alert: no report at {tmp_path / 'ab' / 'report.json'}; skipped",
        "alert: posted 3 flagged case(s) to the webhook in $PERF_WEBHOOK_URL",
    ]
    assert len(hook.posts) == 1 and hook.posts[0]["json"]["env"] == "pinned"


def test_no_flagged_case_posts_nothing(regressed, hook, tmp_path):
    data = json.loads(regressed.read_text())
    data["verdicts"] = [dict(v, outcome="pass") for v in data["verdicts"]]
    passed = tmp_path / "passed.json"
    passed.write_text(json.dumps(data))
    said = []
    assert alert([str(passed)], project=tmp_path, environ={"PERF_WEBHOOK_URL": hook.url}, out=said.append) == 0
    assert hook.posts == [] and said == [f"alert: no flagged case in {passed}; nothing posted"]


def test_without_the_variable_it_says_so_in_one_line_and_exits_0(regressed, tmp_path):
    proc = bare([str(regressed)], tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 1 and proc.stdout.startswith("alert: $PERF_WEBHOOK_URL is not set")


@pytest.mark.parametrize("where", ["500", "closed"])
def test_a_webhook_that_refuses_or_is_unreachable_is_one_line_and_exit_1(regressed, hook, tmp_path, where):
    hook.status = 500
    url = hook.url
    if where == "closed":
        hook.close()
    proc = bare([str(regressed)], tmp_path, PERF_WEBHOOK_URL=url)
    assert proc.returncode == 1 and proc.stdout == ""
    line = proc.stderr.strip()
    assert len(proc.stderr.splitlines()) == 1 and line.startswith("error: alert: the webhook ")
    assert ("HTTP 500" in line) == (where == "500") and "127.0.0.1" not in line  # the URL is a secret: never printed


def test_the_settings_turn_it_off_and_name_the_variable(regressed, hook, tmp_path):
    (tmp_path / "nightly.toml").write_text('gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook = false\n')
    said = []
    assert alert([str(regressed)], project=tmp_path, environ={"PERF_WEBHOOK_URL": hook.url}, out=said.append) == 0
    assert hook.posts == [] and said == ["alert: off in nightly.toml ([alerts] webhook = false); nothing posted"]
    (tmp_path / "nightly.toml").write_text('gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook_env = "TEAM_HOOK"\n')
    env = {"PERF_WEBHOOK_URL": hook.url}
    assert alert([str(regressed)], project=tmp_path, environ=env, out=said.append) == 0 and hook.posts == []
    assert said[-1].startswith("alert: $TEAM_HOOK is not set")
    assert alert([str(regressed)], project=tmp_path, environ={"TEAM_HOOK": hook.url}, out=said.append) == 0
    assert len(hook.posts) == 1


def test_runtime_regressions_count_only_where_the_confirmation_confirms_the_session(regressed, hook, tmp_path):
    env = {"PERF_WEBHOOK_URL": hook.url}
    missing = str(tmp_path / "confirm" / "report.json")
    said = []
    assert alert([str(regressed)], confirm=missing, project=tmp_path, environ=env, out=said.append) == 0
    assert hook.posts == [] and "runtime regressions are unconfirmed" in said[0]
    data = json.loads(regressed.read_text())
    kept = next(v for v in data["verdicts"] if v["case"] == "tiny-qwen3-1x4" and v["kind"] == "runtime")
    confirmed = tmp_path / "confirmed.json"
    confirmed.write_text(json.dumps(dict(data, verdicts=[kept])))
    assert alert([str(regressed)], confirm=str(confirmed), project=tmp_path, environ=env, out=said.append) == 0
    assert [c["case"] for c in hook.posts[0]["json"]["cases"]] == ["tiny-qwen3-1x4"]


def test_an_interleaved_report_without_repro_gets_one_and_a_work_change_counts_with_changes(tmp_path, hook):
    ab = {
        "gpu": "h200",
        "session_id": "i-1",
        "settings": {"python_a": ".tox/pinned/bin/python", "python_b": ".tox/latest/bin/python"},
        "verdicts": [
            {"kind": "interleaved", "case": "qwen3-1.7b-lora-4x1", "outcome": "regression", "message": "x1.03"}
        ],
    }
    work = {
        "gpu": "h200",
        "verdicts": [{"kind": "work", "case": "qwen3-1.7b-lora-1x4", "outcome": "changed", "message": "WORK CHANGED"}],
    }
    paths = [tmp_path / "ab.json", tmp_path / "work.json"]
    for p, d in zip(paths, (ab, work)):
        p.write_text(json.dumps(d))
    env = {"PERF_WEBHOOK_URL": hook.url}
    assert alert([str(p) for p in paths], changes=True, project=tmp_path, environ=env, out=lambda s: None) == 0
    assert {c["case"]: c["repro"] for c in hook.posts[0]["json"]["cases"]} == {
        "qwen3-1.7b-lora-4x1": "python -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 "
        "--python-a .tox/pinned/bin/python --python-b .tox/latest/bin/python",
        "qwen3-1.7b-lora-1x4": "pytest perftests --gpu=h200 --workload qwen3-1.7b-lora --census -k 1x4",
    }
    assert alert([str(paths[1])], project=tmp_path, environ=env, out=lambda s: None) == 0 and len(hook.posts) == 1


def test_a_report_that_is_not_one_is_refused_in_one_line_and_a_url_must_be_http(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = bare([str(bad)], tmp_path, PERF_WEBHOOK_URL="http://127.0.0.1:9/x")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "not a report" in proc.stderr
    proc = bare([str(bad)], tmp_path, PERF_WEBHOOK_URL="hooks.example.invalid/x")
    assert proc.returncode == 2 and "$PERF_WEBHOOK_URL is not an http(s) URL" in proc.stderr
    assert "hooks.example" not in proc.stderr


def test_the_message_is_bounded():
    cases = [
        webhook.Flagged("runtime", f"w-{i}x1", "regression", "x" * 5000, f"pytest perftests -k {i}x1", "l4", "r.json")
        for i in range(1, 400)
    ]
    msg = webhook.message(cases, env="latest", run_url=RUN)
    assert len(webhook.encode(msg)) <= webhook.MAX_BODY and len(msg["cases"]) + msg["more"] == len(cases)
    assert msg["more"] >= len(cases) - webhook.MAX_CASES and all(len(c["message"]) <= 5000 for c in msg["cases"])
    assert (
        msg["text"].count("\n•") == webhook.TEXT_CASES and f"and {len(cases) - webhook.TEXT_CASES} more" in msg["text"]
    )


def test_one_function_writes_the_repro_of_every_kind():
    assert repro("runtime", "qwen3-1.7b-lora-1x4", "l4") == (
        "pytest perftests --gpu=l4 --workload qwen3-1.7b-lora -k 1x4 --repeats 5"
    )
    assert (
        repro("work", "qwen3-1.7b-lora-4x1", "l4")
        == "pytest perftests --gpu=l4 --workload qwen3-1.7b-lora --census -k 4x1"
    )
    assert (
        repro("ordering", "qwen3-1.7b-lora", "l4") == "pytest perftests --gpu=l4 --workload qwen3-1.7b-lora --repeats 5"
    )
    assert repro("interleaved", "w-4x1", "h200", python_b=".tox/latest/bin/python") == (
        "python -m harness interleave --gpu h200 --workload w --decomposition 4x1 --python-b .tox/latest/bin/python"
    )
    assert repro("env-timing", "w-1x4 since 20260101T000000-ab", "l4") == (
        "pytest perftests --gpu=l4 --workload w -k 1x4 --repeats 5"
    )
    assert repro("env-census", "w-1x4, w-4x1 since 20260101T000000-ab", "l4") == (
        "pytest perftests --gpu=l4 --workload w --census -k '1x4 or 4x1'"
    )
    # a name a shell would expand, or a case that is no case id, gives no command
    assert repro("runtime", "$(touch x)-1x4", "l4") is None and repro("runtime", "w-1x4", "l4;x") is None
    assert repro("interleaved", "w-1x4-vs-4x1", "l4") is None and repro("bisect", "w-1x4", "l4") is None
    assert repro("interleaved", "w-4x1", "l4", python_b="/my envs/py").endswith("--python-b '/my envs/py'")


def test_the_stores_alerts_carry_the_repro_of_their_cases():
    shift = dict.fromkeys(("ratio", "lo", "hi"), 1.1) | dict.fromkeys(("nights", "reference_nights"), 2)
    names = dict.fromkeys(("track", "started_at", "after_session_id", "raised_at"), "s8")
    timing = TimingAlert(
        gpu="l4", workload="w", decomposition="1x4", session_id="s9", environment=(), **names, **shift,
        threshold=3.0, t_values=(), trend=(), summary="x1.10",
    )  # fmt: skip
    census = CensusAlert(
        "l4", "", "", "s9", None, "s8", (), tuple(CaseLines("w", d, "s8", ("ops moved",)) for d in ("1x4", "4x1")), "m"
    )
    got = issues_report(Findings((timing, census), (), 2, ShiftRule()), "l4", "s9")["verdicts"]
    assert [v["repro"] for v in got] == [
        "pytest perftests --gpu=l4 --workload w -k 1x4 --repeats 5",
        "pytest perftests --gpu=l4 --workload w --census -k '1x4 or 4x1'",
    ]


def test_an_interleaved_comparisons_report_carries_the_repro_of_its_verdict():
    settings = ComparisonSettings(
        alpha=0.05,
        threshold=0.02,
        gpu="h200",
        session_id="i-1",
        python_a=".tox/pinned/bin/python",
        python_b="/opt/b/python",
    )
    made = issue_fields(
        None,
        settings,
        [],
        SimpleNamespace(outcome="regression", message="x1.03", details={}),
        "w-4x1",
        SimpleNamespace(phases=None),
    )
    assert made["verdicts"][0]["repro"] == (
        "python -m harness interleave --gpu h200 --workload w --decomposition 4x1 --python-a .tox/pinned/bin/python "
        "--python-b /opt/b/python"
    )
