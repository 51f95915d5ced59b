#!/usr/bin/env python3
"""Simulated nights through the nightly's own store steps: does the results store forget, and do its alerts fire when
they should and only then?

    python .ci/simulate-nights.py                       # 120 nights (several minutes on 2 cores)
    python .ci/simulate-nights.py --nights 14 --aa 8 --retention 10 --prefill 8 --json nights.jsonl

Each night a results dir is synthesized from committed records (``tests/data/history/``: the 15 timed runs of one H200
session and the 3 census runs of another, all qwen3-1.7b-lora) under a new session id and date, each case's step times
scaled by that night's factor: log-normal night-to-night noise of sd ``--sigma`` (1.5% by default, independent per case
and night), times the planted effects. Then the pinned perf and publish jobs of
``.github/workflows/reusable-nightly.yml`` run through ``.ci/run-workflow.py`` with every ``run:`` step skipped but the
store's (their own text, ``if:`` and environment): the perf job finds the alerts in a copy of the store's branch
(checked out here as the workflow's checkout step would), the publish job adds the session to ``PERF_STORE``, a LOCAL
BARE git repository (git's ``url.<bare>.insteadOf`` maps the workflow's GitHub URL onto it), and the alerts go to the
fake ``gh`` of ``.ci/fake-bin`` (the issues it opened stay open, so that the issue script can find and comment on them).
The night's results dir is kept as its "artifact" for ``--retention`` nights, then deleted. At the end the history job
builds the page from the store, again through its own steps.

The planted effects, after ``--aa`` nights without any (A/A): night aa+1 a new driver and 2 more kernels a step in the
1x4 census, library pins unchanged (one census issue expected); night aa+2 a new image and +10% on 2x2 that holds to the
end (one timing issue expected on night aa+3, its 2nd night); night aa+5 a one-night +30% spike on 4x1 (none expected).
A false alarm is any other issue; the A/A false alarms are those of nights 1..aa. Prints a table; exit 0 when every
check holds, 1 when one fails, 2 on bad arguments. ``--prefill K`` adds the first K nights with one ``store add``
instead of the workflow (a quicker check that skips their alerts).
"""

from __future__ import annotations

import argparse
import base64
import copy
import gzip
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "reusable-nightly.yml"
DATA = ROOT / "tests" / "data" / "history"
TEMPLATES = (
    DATA / "h200" / "lease3-4-fresh-checkout" / "runs.jsonl",
    DATA / "census-h200" / "lease-c" / "a" / "runs.jsonl",
)
STORE_STEPS = {
    "perf": ("Find environment regressions",),
    "publish": ("Keep the session in the results store", "Open or update environment-regression issues"),
}
REPO = "sim/lora-perf-harness"
GPU, TRACK, CASES = "h200", "pinned", ("1x4", "2x2", "4x1")
DRIVERS = ("580.159.04", "580.172.08")
IMAGES = ("sha256:1111aaaa", "sha256:2222bbbb")
START = datetime(2026, 1, 1, 2, 17, tzinfo=UTC)


class Plan:
    """Which night carries which effect (nights count from 1)."""

    def __init__(self, nights: int, aa: int):
        self.nights, self.aa = nights, aa
        self.census, self.shift, self.spike = aa + 1, aa + 2, aa + 5

    def factor(self, night: int, case: str) -> float:
        if case == "2x2" and night >= self.shift:
            return 1.10
        if case == "4x1" and night == self.spike:
            return 1.30
        return 1.0

    def expected(self) -> dict[str, int]:
        """The night each expected issue opens on."""
        return {"env-census": self.census, "env-timing": self.shift + 1}


def load_templates() -> list[dict]:
    return [json.loads(line) for f in TEMPLATES for line in f.read_text().splitlines() if line.strip()]


def session_id(night: int) -> str:
    return f"{(START + timedelta(days=night - 1)):%Y%m%dT%H%M%S}-n{night:03d}"


def synthesize(template: list[dict], night: int, plan: Plan, noise: dict[str, float], dest: Path) -> dict[str, float]:
    """Write night ``night``'s results dir (``dest/runs.jsonl``); returns each case's factor (noise times effect)."""
    sid, t0 = session_id(night), START + timedelta(days=night - 1)
    factors = {c: noise[c] * plan.factor(night, c) for c in CASES}
    boot = f"{night:08x}-0000-4000-8000-{night:012x}"  # a new VM lease every night
    lines = []
    for k, tpl in enumerate(template):
        r = copy.deepcopy(tpl)
        case = r["decomposition_id"]
        r.update(
            session_id=sid,
            run_id=f"{sid}-{k:02d}",
            started_at=f"{t0 + timedelta(minutes=3 * k):%Y-%m-%dT%H:%M:%S+0000}",
        )
        r["env"] = dict(r["env"], boot_id=boot, driver=DRIVERS[night >= plan.census])
        r.pop("log", None)
        if r.get("census"):
            if case == "1x4" and night >= plan.census:
                c = r["census"]
                c["kernels"] += 2
                c["launch_calls"] += 2
                c["kernels_by_name"] = dict(c["kernels_by_name"], sm90_gemm_splitk_reduce=2.0)
        else:
            f = factors[case]
            r["step_time_median_ms"] *= f
            r["train_runtime_s"] *= f
            r["tokens_per_s"] /= f
        lines.append(json.dumps(r))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return factors


def skipped_steps(job: str) -> list[str]:
    """Every ``run:`` step of ``job`` but the store's; fails when a store step is missing (renamed)."""
    import yaml

    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"][job]["steps"]
    names = [s.get("name") for s in steps if "run" in s]
    missing = [n for n in STORE_STEPS[job] if n not in names]
    if missing:
        raise SystemExit(
            f"simulate-nights: {WORKFLOW.name} has no step {missing[0]!r}; update STORE_STEPS in {__file__}"
        )
    return [n for n in names if n not in STORE_STEPS[job]]


def checkout_store(bare: Path, ws: Path) -> None:
    """What the workflow's checkout of the perf-results branch leaves in ``.perf-store`` (nothing before the first
    session)."""
    dest = ws / ".perf-store"
    shutil.rmtree(dest, ignore_errors=True)
    has = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", "--verify", "-q", "refs/heads/perf-results"], capture_output=True
    )
    if has.returncode == 0:
        subprocess.run(["git", "clone", "-q", "--branch", "perf-results", str(bare), str(dest)], check=True)


def environment(work: Path, bare: Path) -> dict[str, str]:
    """The runner's environment: the fake gh, a .tox python, the store URL mapped onto the bare repository."""
    bindir = work / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the history job's python
    (bindir / "python").chmod(0o755)
    gitconfig = work / "gitconfig"
    subprocess.run(
        ["git", "config", "-f", str(gitconfig), f"url.{bare}.insteadOf", f"https://github.com/{REPO}.git"], check=True
    )
    (work / "issues.json").write_text("[]")
    (work / "gh.log").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "RUNNER_"))}
    return dict(
        env,
        PATH=f"{bindir}{os.pathsep}{ROOT / '.ci' / 'fake-bin'}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(ROOT),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        XDG_CACHE_HOME=str(work / "cache"),
        FAKE_GH_LOG=str(work / "gh.log"),
        FAKE_GH_ISSUES=str(work / "issues.json"),
        RUNNER_NAME="gpu-h200-runner-1",
        PERF_IMAGE=IMAGES[0],
    )


def workspace(work: Path) -> Path:
    """The runner's checkout: the repository's scripts and a .tox/pinned python (the suite's environment)."""
    ws = work / "ws"
    (ws / ".tox" / TRACK / "bin").mkdir(parents=True, exist_ok=True)
    (ws / ".github").symlink_to(ROOT / ".github")
    (ws / "harness").symlink_to(ROOT / "harness")  # the publish job's harness: the checkout's, on PYTHONPATH
    py = ws / ".tox" / TRACK / "bin" / "python"
    py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    py.chmod(0o755)
    return ws


def run_job(job: str, ws: Path, env: dict, night: int, skip: list[str], work: Path) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        str(ROOT / ".ci" / "run-workflow.py"),
        str(WORKFLOW),
        job,
        "--repository",
        REPO,
        "--run-id",
        str(1000 + night),
        "--summary",
        str(work / f"summary-{job}.md"),
        "--outcomes",
        str(work / f"outcomes-{job}.json"),
    ]
    if job in ("perf", "publish"):
        cmd += ["--matrix", f"gpu={GPU}", "--matrix", f"env={TRACK}"]
    if job == "publish":
        needs = work / "needs.json"
        needs.write_text(json.dumps({"gpus": {"result": "success", "outputs": {"gpus": json.dumps([GPU])}}}))
        cmd += ["--needs", str(needs)]
    for name in skip:
        cmd += ["--skip-step", name]
    return subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=600)


def gh_calls(work: Path, seen: int) -> list[list[str]]:
    """The fake gh's calls since the first ``seen``; every issue it created is open from now on."""
    calls = [json.loads(line) for line in (work / "gh.log").read_text().splitlines()][seen:]
    issues = json.loads((work / "issues.json").read_text())
    for c in calls:
        if c[:2] == ["issue", "create"]:
            issues.append(
                {"number": len(issues) + 1, "title": c[c.index("--title") + 1], "body": c[c.index("--body") + 1]}
            )
    (work / "issues.json").write_text(json.dumps(issues))
    return calls


def night_record(
    night: int, factors: dict, calls: list[list[str]], ws: Path, proc: subprocess.CompletedProcess | None
) -> dict:
    alerts_file = ws / "perf-results" / "env-alerts.json"
    alerts = json.loads(alerts_file.read_text())["verdicts"] if alerts_file.is_file() else []
    title = lambda c: c[c.index("--title") + 1]  # noqa: E731
    return {
        "night": night,
        "session_id": session_id(night),
        "factors": {c: round(f, 5) for c, f in factors.items()},
        "alerts": [f"{a['kind']} {a['case']}" for a in alerts],
        "issue_create": [title(c) for c in calls if c[:2] == ["issue", "create"]],
        "issue_comment": [c[2] for c in calls if c[:2] == ["issue", "comment"]],
        "job": None if proc is None else ("success" if proc.returncode == 0 else f"failure ({proc.returncode})"),
    }


def simulate(a: argparse.Namespace, work: Path) -> tuple[list[dict], dict]:
    """Every night, then the history job; returns the nights' records and what the end state holds."""
    plan, rng = Plan(a.nights, a.aa), random.Random(a.seed)
    template, skip = load_templates(), {job: skipped_steps(job) for job in STORE_STEPS}
    bare = work / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    env, ws = environment(work, bare), workspace(work)
    arts, nights, seen, secret_seen = work / "artifacts", [], 0, False
    secrets = (
        "fake-token",
        base64.b64encode(b"x-access-token:fake-token").decode(),
    )  # run-workflow.py's github.token, its header
    prefill = []
    for night in range(1, a.nights + 1):
        noise = {c: math.exp(rng.gauss(0.0, a.sigma)) for c in CASES}
        shutil.rmtree(ws / "perf-results", ignore_errors=True)
        factors = synthesize(template, night, plan, noise, ws / "perf-results")
        shutil.copytree(ws / "perf-results", arts / f"night-{night:03d}")  # the Upload results step
        if night - a.retention >= 1:
            shutil.rmtree(arts / f"night-{night - a.retention:03d}")  # the artifact expired
        if night <= a.prefill:
            prefill.append(str(shutil.copytree(ws / "perf-results", work / "prefill" / f"night-{night:03d}")))
            if night == a.prefill:
                cmd = [
                    sys.executable,
                    "-m",
                    "harness",
                    "store",
                    "add",
                    *prefill,
                    "--store",
                    f"https://github.com/{REPO}.git",
                    "--track",
                    TRACK,
                ]
                subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=600)
            nights.append(night_record(night, factors, [], ws, None))
            continue
        env["PERF_IMAGE"] = IMAGES[night >= plan.shift]  # the runner's container image (store add records it)
        checkout_store(bare, ws)
        proc = run_job("perf", ws, env, night, skip["perf"], work)
        if proc.returncode == 0:
            proc = run_job("publish", ws, env, night, skip["publish"], work)
        secret_seen |= any(s in proc.stdout + proc.stderr for s in secrets)
        calls = gh_calls(work, seen)
        seen += len(calls)
        nights.append(night_record(night, factors, calls, ws, proc))
        if not a.quiet:
            n = nights[-1]
            print(
                f"night {night:3d}: {n['job']}; alerts {n['alerts'] or '-'}; issues opened {n['issue_create'] or '-'}",
                flush=True,
            )
        if proc.returncode != 0:
            print(proc.stdout[-4000:] + proc.stderr[-4000:], file=sys.stderr)
    fresh = dict(env, XDG_CACHE_HOME=str(work / "history-cache"))  # a hosted runner: a fresh clone of the store
    checkout_store(bare, ws)
    hist = run_job("history", ws, fresh, a.nights, ["Install the history tools"], work)
    stored = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", "perf-results"], capture_output=True, text=True
    )
    page = ws / "site" / "index.html"
    series = {}
    if page.is_file():
        data = json.loads(page.read_text().split('id="dashboard-data">', 1)[1].split("</script>", 1)[0])
        series = {
            s["key"]: {"sessions": len(s["timing"]["t"]), "census": len(s["census"]["t"])} for s in data["series"]
        }
    end = {
        "stored": [p for p in stored.stdout.split() if p.endswith(".json.gz")],
        "artifacts": sorted(p.name for p in arts.iterdir()),
        "history_job": "success"
        if hist.returncode == 0
        else f"failure ({hist.returncode}): {(hist.stdout + hist.stderr)[-2000:]}",
        "series": series,
        "issues": json.loads((work / "issues.json").read_text()),
        "secret_seen": secret_seen,
    }
    return nights, end


def check(a: argparse.Namespace, nights: list[dict], end: dict) -> tuple[list[tuple[str, str, bool]], dict]:
    """The checks of the simulation: (what, what was seen, whether it holds), and the figures of the summary."""
    plan = Plan(a.nights, a.aa)
    opened = [
        (n["night"], t) for n in nights for t in n["issue_create"]
    ]  # titles: perf regression: GPU TRACK env-KIND CASE since SID
    census = [(k, t) for k, t in opened if " env-census " in t]
    timing = [(k, t) for k, t in opened if " env-timing " in t]
    spike = [(k, t) for k, t in opened if "-4x1 since " in t]
    expected = {(plan.census, " env-census "), (plan.shift + 1, " env-timing qwen3-1.7b-lora-2x2 ")}
    false = [(k, t) for k, t in opened if not any(k == night and what in t for night, what in expected)]
    aa_false = [(k, t) for k, t in false if k <= a.aa]
    aa_checked = max(0, a.aa - a.prefill)
    body = next((i["body"] for i in end["issues"] if " env-census " in i["title"]), "")
    timing_body = next((i["body"] for i in end["issues"] if " env-timing " in i["title"]), "")
    full = {c: end["series"].get(f"{GPU}/qwen3-1.7b-lora/{c}/{TRACK}", {}) for c in CASES}
    series_nights = len(CASES) * aa_checked
    rate = len(aa_false) / (series_nights / 365) if series_nights else 0.0
    figures = {
        "nights": a.nights,
        "aa_nights": a.aa,
        "aa_nights_through_the_workflow": aa_checked,
        "sigma": a.sigma,
        "seed": a.seed,
        "stored_sessions": len(end["stored"]),
        "artifacts_left": len(end["artifacts"]),
        "page_nights": {c: full[c].get("sessions", 0) for c in CASES},
        "page_census_nights": {c: full[c].get("census", 0) for c in CASES},
        "census_issues": census,
        "timing_issues": timing,
        "spike_issues": spike,
        "false_alarms": false,
        "aa_false_alarms": len(aa_false),
        "aa_series_nights": series_nights,
        "aa_false_alarms_per_series_365_nights": rate,
        "alpha": 0.05,
        "history_job": end["history_job"],
    }
    n_jobs = [n for n in nights if n["job"] is not None]
    checks = [
        (
            "every perf job green",
            f"{sum(n['job'] == 'success' for n in n_jobs)}/{len(n_jobs)}",
            all(n["job"] == "success" for n in n_jobs),
        ),
        ("nothing lost: sessions in the store", f"{len(end['stored'])}/{a.nights}", len(end["stored"]) == a.nights),
        (
            "artifacts left (the rest expired)",
            str(len(end["artifacts"])),
            len(end["artifacts"]) == min(a.nights, a.retention),
        ),
        ("history job (from the store) green", end["history_job"].split(":")[0], end["history_job"] == "success"),
        (
            "page shows every night, each case",
            " / ".join(str(full[c].get("sessions", 0)) for c in CASES),
            all(full[c].get("sessions") == a.nights and full[c].get("census") == a.nights for c in CASES),
        ),
        (
            "census change: issues opened",
            ", ".join(f"night {k}" for k, _ in census) or "none",
            [k for k, _ in census] == [plan.census] and "sm90_gemm_splitk_reduce +2" in body and DRIVERS[1] in body,
        ),
        (
            "+10% shift that holds: issues",
            ", ".join(f"night {k}" for k, _ in timing) or "none",
            [k for k, _ in timing] == [plan.shift + 1]
            and "2x2" in timing[0][1]
            and f"image {IMAGES[0]}→{IMAGES[1]}" in timing_body,
        ),
        ("one-night +30% spike: issues", str(len(spike)), not spike),
        ("A/A false alarms (series x nights)", f"{len(aa_false)} in {series_nights}", rate <= figures["alpha"]),
        ("false alarms in all", str(len(false)), not false),
        ("the token in the job's output", "seen" if end["secret_seen"] else "never", not end["secret_seen"]),
    ]
    return checks, figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nights", type=int, default=120)
    p.add_argument("--aa", type=int, help="nights without a planted effect before the first (default: nights - 20)")
    p.add_argument("--retention", type=int, default=90, help="nights an artifact is kept (default 90)")
    p.add_argument(
        "--sigma", type=float, default=0.015, help="night-to-night noise, sd of the log step time (default 0.015)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--prefill", type=int, default=0, help="the first K nights go to the store with one store add, not the workflow"
    )
    p.add_argument(
        "--workdir", type=Path, help="keep the store, artifacts and workspace here (default: a temporary folder)"
    )
    p.add_argument("--json", type=Path, help="write each night and the summary as JSONL here (.gz: gzipped)")
    p.add_argument("--quiet", action="store_true", help="no line per night")
    a = p.parse_args(argv)
    a.aa = a.nights - 20 if a.aa is None else a.aa
    if not (a.aa >= 8 and a.nights >= a.aa + 6 and 0 <= a.prefill <= a.aa and a.retention >= 1 and a.sigma > 0):
        print(
            "simulate-nights: need --aa >= 8 (the timing rule's reference), --nights >= aa + 6 (the effects), "
            "0 <= --prefill <= aa, --retention >= 1 and --sigma > 0",
            file=sys.stderr,
        )
        return 2
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="simulate-nights-") as tmp:
        work = a.workdir or Path(tmp)
        if a.workdir and work.exists() and any(work.iterdir()):
            print(f"simulate-nights: --workdir {work} is not empty; pass a new or empty folder", file=sys.stderr)
            return 2
        work.mkdir(parents=True, exist_ok=True)
        nights, end = simulate(a, work.resolve())
    checks, figures = check(a, nights, end)
    figures["wall_s"] = round(time.monotonic() - t0, 1)
    width = max(len(c[0]) for c in checks)
    print(
        f"\n{a.nights} nights ({a.aa} A/A, noise sd {a.sigma:.1%} a night, seed {a.seed}) in {figures['wall_s']:.0f} s"
    )
    for what, seen, ok in checks:
        print(f"  {what:<{width}}  {seen:<16} {'ok' if ok else 'FAILED'}")
    figures["checks"] = [{"check": w, "seen": s, "ok": ok} for w, s, ok in checks]
    if a.json:
        lines = [json.dumps(n, sort_keys=True) for n in nights] + [json.dumps({"summary": figures}, sort_keys=True)]
        opener = gzip.open if a.json.suffix == ".gz" else open
        with opener(a.json, "wt") as fh:
            fh.write("\n".join(lines) + "\n")
    print(
        json.dumps(
            {"summary": {k: figures[k] for k in ("stored_sessions", "page_nights", "aa_false_alarms", "wall_s")}}
        )
    )
    return 0 if all(ok for *_, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
