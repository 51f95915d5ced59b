"""The results store (``docs/store.md``) and its environment alerts: records of the committed results dirs round-trip,
stay within their size bound and are stored once; a git branch store takes two clones pushing at once; the history page
is built from a store; a census change with the pins unchanged raises one alert naming it; a +10% shift that holds
raises one alert on its second night and not on its first; a one-night spike raises none; A/A nights raise at most alpha
false alerts. Synthetic nights are made from a committed H200 session (tests/data/history), with seeded noise."""

import copy
import dataclasses
import gzip
import json
import math
import statistics
import subprocess
import sys
import threading
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from harness import values
from harness.commands import cli
from harness.store import DirStore, GitStore, alert_text, check, is_git, open_store, shifts
from harness.store import record as rec_mod
from harness.store.alerts import find_alerts, issues_report
from harness.store.findings import Night
from harness.store.session import Environment, Session, StoredVerdict
from harness.store.shifts import ShiftRule, find
from harness.store.summary import LIMIT_BYTES, fit, records_of
from tests.stores import Plan, typed
from tests.stores import records as store_records

R = Path(__file__).resolve().parent / "data" / "history"
DIRS = (
    [R / "h200" / d for d in ("lease1-100steps", "lease2-100steps", "lease3-4-fresh-checkout", "lease5-round")]
    + [R / "census-h200" / d for d in ("lease-a/a", "lease-b/a", "lease-b/b", "lease-c/a", "lease-c/ab")]
    + [R / "cpu-e2e" / "run-b", R / "ab-cpu"]
)
DRIFT = 0.10  # night-to-night sd (log) of the A/A nights: the 8-15% lease-to-lease drift of docs/statistics.md
QUIET = 0.015  # night-to-night sd (log) of the nights a +10% shift is planted in


# ---------------------------------------------------------------------------------------------------------------------
# synthetic nights from a committed session: 15 timed runs of three splits, with the census of a census session
# ---------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_night() -> dict:
    night = records_of(R / "h200" / "lease3-4-fresh-checkout", track="pinned", runner="gpu-h200-1")[0].to_json()
    census = {c["decomposition"]: c for c in records_of(R / "census-h200" / "lease-a" / "a")[0].to_json()["cases"]}
    for case in night["cases"]:
        cc = census[case["decomposition"]]
        case["census"], case["census_runs"], case["kernel_ms"] = cc["census"], 1, cc.get("kernel_ms")
        case["runs"].append(
            {**next(r for r in cc["runs"] if "census" in r), "run_id": f"census-{case['decomposition']}"}
        )
    return night


def night(
    base: dict, i: int, log_shift: dict[str, float] | float = 0.0, env: dict | None = None, versions: dict | None = None
) -> dict:
    """Night ``i``: the base session moved to 2027-01-01 + i days, every timed run's step time times exp(shift of its
    case)."""
    rec = copy.deepcopy(base)
    rec["session_id"] = f"night-{i:03d}"
    rec["started_at"] = (datetime(2027, 1, 1, 2, 17) + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    rec["environment"].update(env or {})
    rec["versions"].update(versions or {})
    for case in rec["cases"]:
        f = math.exp(log_shift.get(case["decomposition"], 0.0) if isinstance(log_shift, dict) else log_shift)
        for run in case["runs"]:
            if run.get("median_ms") and "census" not in run:
                run["median_ms"] *= f
        st = case["step_time_ms"]
        case["step_time_ms"] = {**st, "median": st["median"] * f, "min": st["min"] * f, "max": st["max"] * f}
    return rec


def noisy_nights(base: dict, n: int, sigma: float, seed: int, planted=None) -> list[dict]:
    """``n`` nights with independent log-normal noise of sd ``sigma`` per night and case; ``planted(i)`` adds a log
    shift."""
    rng = np.random.default_rng(seed)
    decs = [c["decomposition"] for c in base["cases"]]
    return [
        night(base, i, {d: float(rng.normal(0, sigma)) + (planted(i) if planted else 0.0) for d in decs})
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------------------------------
# the record: round trip, upgrades, size, idempotence
# ---------------------------------------------------------------------------------------------------------------------
def test_records_round_trip_through_a_directory_store(tmp_path):
    recs = [r for d in DIRS for r in records_of(d, track="pinned")]
    assert len({r.session_id for r in recs}) == len(recs) == 20
    done = DirStore(tmp_path).add(recs)
    assert {a.status for a in done} == {"added"}
    back = {r.session_id: r for r in DirStore(tmp_path).records()}
    assert {k: r.to_json() for k, r in back.items()} == {
        r.session_id: json.loads(json.dumps(r.to_json())) for r in recs
    }
    timed = back["20261129T225758-06c514"]
    assert [c.decomposition for c in timed.cases] == ["1x4", "2x2", "4x1"] and timed.env.driver == "580.159.04"
    assert timed.env.machines == ("91f3a6e8", "d2ee8eb1") and timed.versions["transformers"] == "5.17.0"
    cen = back["census-20261130T190812-1a3bb1"].cases[2]
    assert cen.census.kernels == pytest.approx(10937.4) and cen.census_runs == 1  # normalised: no GPU annotation
    assert (tmp_path / "h200" / "pinned" / "2026-11-29-20261129T225758-06c514.json.gz").is_file()
    (tmp_path / "h200" / "pinned" / "2026-12-01-broken.json.gz").write_bytes(b"torn")  # a broken file: skipped, named
    warned = []
    assert len(list(DirStore(tmp_path).records(warn=warned.append))) == len(recs)
    assert len(warned) == 1 and "2026-12-01-broken.json.gz: not a gzipped JSON session record" in warned[0]


def test_a_record_reads_back_into_itself_and_writes_the_same_bytes(base_night):
    """``Session.from_json`` is the one reader of a record's keys and ``to_json`` the one writer: what ``store add``
    writes of every committed results dir (trimmed or not) reads back unchanged, key for key and byte for byte."""
    recs = [r for d in DIRS for r in records_of(d, track="pinned")] + [fit(Session.from_json(base_night), 3000)]
    assert recs[-1].trimmed  # the trimmed parts round-trip too
    for rec in recs:
        data = rec_mod.dumps(rec)
        back = rec_mod.loads(data)
        assert back == Session.from_json(rec.to_json()) and back.to_json() == json.loads(json.dumps(rec.to_json()))
        assert rec_mod.dumps(back) == data
    fields = {f.name for f in dataclasses.fields(Environment)}
    assert set(check.ENVIRONMENT) <= fields  # every field the alerts compare is a field of the environment


def test_older_schema_is_upgraded_and_a_newer_one_refused():
    draft = {"session_id": "s1", "gpu": "h200", "env": {"driver": "1"}, "cases": []}
    up = rec_mod.loads(rec_mod.pack(draft))
    assert up.schema == rec_mod.SCHEMA and up.env.driver == "1" and up.runner == ""
    written = {"schema": 1, "session_id": "s1", "gpu": "h200", "started_at": None, "runner": "", "cases": []}
    assert up.to_json() == {**written, "environment": {"driver": "1"}, "verdicts": []}  # no "env" any more
    with pytest.raises(rec_mod.RecordError, match="newer than this harness"):
        rec_mod.loads(rec_mod.pack({**up.to_json(), "schema": rec_mod.SCHEMA + 1}), "x.json.gz")
    with pytest.raises(rec_mod.RecordError, match="not a gzipped JSON"):
        rec_mod.loads(b"not gzip", "x.json.gz")


def test_every_committed_session_fits_and_a_long_one_is_trimmed_to_fit(base_night):
    sizes = [len(rec_mod.dumps(r)) for d in DIRS for r in records_of(d)]
    assert max(sizes) <= LIMIT_BYTES
    big = copy.deepcopy(
        base_night
    )  # 10 runs of 1000 steps per split, on top of a full census: more than a session makes
    rng = np.random.default_rng(0)
    for case in big["cases"]:
        case["runs"] += [
            {**case["runs"][0], "run_id": f"x{i}", "steady_us": [round(x) for x in rng.normal(1.3e6, 6e4, 1000)]}
            for i in range(10)
        ]
    big = Session.from_json(big)
    assert len(rec_mod.dumps(big)) > LIMIT_BYTES
    small = fit(big)
    assert len(rec_mod.dumps(small)) <= LIMIT_BYTES and small.trimmed
    assert all(c.census.kernels for c in small.cases)  # the counts stay; only detail goes


def test_adding_a_session_twice_stores_it_once(tmp_path):
    d = str(R / "h200" / "lease5-round")
    assert (
        cli.main(["store", "add", d, "--store", str(tmp_path), "--track", "pinned", "--runner", "r1", "--image", ""])
        == 0
    )
    first = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json.gz"))
    data = (tmp_path / first[0]).read_bytes()
    assert (
        cli.main(["store", "add", d, "--store", str(tmp_path), "--track", "pinned", "--runner", "r1", "--image", ""])
        == 0
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json.gz")) == first
    assert (tmp_path / first[0]).read_bytes() == data
    done = DirStore(tmp_path).add(
        records_of(d, track="latest", runner="r1")
    )  # filed again under another track: moved, not copied
    assert done[0].status == "updated" and done[0].removed == tuple(first)
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json.gz")] == [done[0].path]


def test_a_night_with_a_bisect_and_the_ab_s_censuses_is_one_session(tmp_path):
    """The bisect's candidates and the A/B's census copies sit in the night's results dir; the store keeps the night
    only."""
    from harness.files import mark_not_stored

    d = tmp_path / "perf-results"
    d.mkdir()
    night = (R / "h200" / "lease5-round" / "runs.jsonl").read_text()
    (d / "runs.jsonl").write_text(night)
    other = "".join(
        json.dumps({**json.loads(ln), "session_id": "census-of-a-candidate"}) + "\n" for ln in night.splitlines()[:1]
    )
    for folder in (
        mark_not_stored(d / "bisect" / "census") / "transformers_5.22.2-ab12cd34",
        mark_not_stored(d / "ab" / "4x1" / "census-a"),
    ):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "runs.jsonl").write_text(other)
    assert [r.session_id for r in records_of(d)] == [json.loads(night.splitlines()[0])["session_id"]]


def test_verdicts_of_every_report_are_kept(tmp_path):
    d = tmp_path / "perf-results"
    d.mkdir()
    (d / "runs.jsonl").write_text((R / "h200" / "lease5-round" / "runs.jsonl").read_text())
    sid = json.loads((d / "runs.jsonl").read_text().splitlines()[0])["session_id"]
    (d / "report.json").write_text(
        json.dumps(
            {
                "session_id": sid,
                "verdicts": [{"kind": "runtime", "case": "qwen3-1.7b-lora-1x4", "outcome": "pass", "message": "ok"}],
                "rows": [],
            }
        )
    )
    (d / "ab" / "1x4").mkdir(parents=True)
    (d / "ab" / "1x4" / "report.json").write_text(
        json.dumps(
            {
                "session_id": "il-1",
                "verdict": {"ratio": 1.01, "lo": 0.99, "hi": 1.03},
                "verdicts": [{"kind": "interleaved", "case": "c", "outcome": "pass", "message": "m"}],
            }
        )
    )
    (rec,) = records_of(d)
    assert [(v.source, v.kind, v.outcome) for v in rec.verdicts] == [
        ("ab/1x4/report.json", "interleaved", "pass"),
        ("report.json", "runtime", "pass"),
    ]
    assert rec.verdicts[0].ratio == 1.01


def test_a_night_of_one_timed_run_per_split_is_stored_without_the_interval_it_does_not_have(tmp_path):
    """A normal night's session: one timed run per split, so its report row against the baseline has a ratio and no
    interval (NaN); the session is stored with the ratio and without the NaN."""
    d = tmp_path / "perf-results"
    d.mkdir()
    (d / "runs.jsonl").write_text((R / "h200" / "lease5-round" / "runs.jsonl").read_text())
    runs = [json.loads(line) for line in (d / "runs.jsonl").read_text().splitlines()]
    row = {
        "workload": runs[0]["workload"],
        "decomposition": runs[0]["decomposition_id"],
        "verdict": "inconclusive",
        "ratio": 0.92,
        "ratio_lo": float("nan"),
        "ratio_hi": float("nan"),
    }
    (d / "report.json").write_text(json.dumps({"session_id": runs[0]["session_id"], "verdicts": [], "rows": [row]}))
    store = DirStore(tmp_path / "store")
    (rec,) = records_of(d)
    store.add([rec])
    (back,) = store.records()
    case = next(c for c in back.cases if c.decomposition == row["decomposition"])
    assert case.baseline.to_json() == {"verdict": "inconclusive", "ratio": 0.92}


# ---------------------------------------------------------------------------------------------------------------------
# the git branch store
# ---------------------------------------------------------------------------------------------------------------------
def _branch_files(bare: Path) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", "perf-results"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def _commits(bare: Path) -> int:
    return int(
        subprocess.run(
            ["git", "--git-dir", str(bare), "rev-list", "--count", "perf-results"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def test_git_store_on_a_bare_repository_with_a_concurrent_push(tmp_path):
    bare = tmp_path / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert is_git(str(bare)) and not is_git(str(tmp_path / "plain"))
    a, b = GitStore(str(bare), tmp_path / "clone-a"), GitStore(str(bare), tmp_path / "clone-b")
    r1, r2 = records_of(R / "h200" / "lease1-100steps"), records_of(R / "h200" / "lease2-100steps")
    a.add(r1)  # makes the branch
    a.sync()
    b.sync()
    a.commit(r2[:1])
    b.commit(r2[1:])  # both committed on the same tip: whoever pushes second is rejected
    assert a.push(r2[:1]) == 0
    assert b.push(r2[1:]) >= 1  # rejected, fetched, rebased, pushed
    assert len(_branch_files(bare)) == 6
    n = _commits(bare)
    a.add(r1 + r2)  # everything stored already: no commit
    assert _commits(bare) == n
    assert {r.session_id for r in GitStore(str(bare), tmp_path / "clone-c").records()} == {
        r.session_id for r in r1 + r2
    }
    a.sync()
    b.sync()
    # the same session with other content on both sides: the rebase conflicts, the later one is written again
    later = StoredVerdict(source="report.json", kind="runtime", case="c", outcome="pass", message="later")
    v2 = replace(r1[0], verdicts=(later,))
    a.commit([replace(v2, verdicts=(replace(later, message="earlier"),))])
    b.commit([v2])
    a.push([])
    assert b.push([v2]) >= 1
    assert (
        next(r for r in GitStore(str(bare), tmp_path / "clone-e").records() if r.session_id == v2.session_id).verdicts
        == v2.verdicts
    )
    n = _commits(bare)
    d = str(R / "h200" / "lease5-round")  # the command line, on a file:// URL, twice: one more file, one more commit
    for _ in range(2):
        assert (
            cli.main(
                [
                    "store",
                    "add",
                    d,
                    "--store",
                    f"file://{bare}",
                    "--cache",
                    str(tmp_path / "clone-d"),
                    "--track",
                    "latest",
                ]
            )
            == 0
        )
    assert len(_branch_files(bare)) == 7 and _commits(bare) == n + 1


def test_git_store_two_jobs_adding_at_once(tmp_path):
    bare = tmp_path / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    jobs = [
        records_of(R / "census-h200" / d, track=t)
        for d, t in (("lease-a/a", "pinned"), ("lease-b/b", "latest"), ("lease-c/a", "pinned"))
    ]
    errors = []

    def job(i):
        try:
            GitStore(str(bare), tmp_path / f"clone-{i}").add(jobs[i])
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(_branch_files(bare)) == sum(map(len, jobs)) == 4


def test_history_page_from_a_store_shows_every_session(tmp_path, base_night):
    st = tmp_path / "store"
    nights = noisy_nights(base_night, 20, QUIET, seed=1)
    DirStore(st).add(typed(nights))
    assert cli.main(["store", "add", str(R / "h200" / "lease5-round"), "--store", str(st), "--track", "pinned"]) == 0
    out = tmp_path / "page"
    assert cli.main(["history", "--store", str(st), "--out", str(out)]) == 0
    data = json.loads((out / "history.json").read_text())
    series = {s["key"]: s for s in data["series"]}
    s = series["h200/qwen3-1.7b-lora/4x1/pinned"]
    assert s["sessions"] == ["20261130T035854-eff4a5"] + [n["session_id"] for n in nights]
    assert s["census_sessions"] == [n["session_id"] for n in nights]
    assert (out / "index.html").is_file()
    # the committed results dirs, alone, still make the page as before (the TRACK=DIR form)
    assert cli.main(["history", f"pinned={R / 'h200' / 'lease5-round'}", "--out", str(tmp_path / "p2")]) == 0
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["store", "add", "--store", str(st)])


# ---------------------------------------------------------------------------------------------------------------------
# alerts
# ---------------------------------------------------------------------------------------------------------------------
def _with_census(rec: dict, dec: str, kernel: str, delta: float) -> dict:
    case = next(c for c in rec["cases"] if c["decomposition"] == dec)
    c = case["census"]
    c["kernels_by_name"] = {**c["kernels_by_name"], kernel: c["kernels_by_name"].get(kernel, 0) + delta}
    c["kernels"] += delta
    return rec


def test_census_change_with_unchanged_pins_raises_one_alert_naming_it(base_night):
    nights = [night(base_night, i) for i in range(10)]
    k = "void at::native::elementwise_kernel<128, 4>"
    nights[6] = _with_census(
        night(base_night, 6, env={"driver": "590.10.01"}), "4x1", k, 1.0
    )  # a new driver adds a kernel
    for i in range(7, 10):
        nights[i] = _with_census(night(base_night, i, env={"driver": "590.10.01"}), "4x1", k, 1.0)
    for i in (8, 9):  # an environment change with no effect: a note
        nights[i]["environment"].update(cuda="13.1", harness="abc")
    res = find_alerts(typed(nights))
    (al,) = res.alerts
    assert al.kind == "census" and al.session_id == "night-006" and al.subject == "qwen3-1.7b-lora-4x1"
    assert "kernel launches per optimizer step 10,937.4 -> 10,938.4 (+1)" in al.cases[0].lines[0]
    assert "driver 580.159.04→590.10.01" in al.summary
    assert [n.text.split(": ", 1)[1] for n in res.notes] == ["cuda 13.0→13.1, no census or timing alert"]
    # the same counts with transformers bumped: a library change, judged by the A/B, no environment alert
    bumped = [night(base_night, i) for i in range(3)] + [
        _with_census(night(base_night, 3, versions={"transformers": "5.24.0"}), "4x1", k, 1.0)
    ]
    assert find_alerts(typed(bumped)).alerts == ()
    # one issue per alert: a stable key and title, whatever night the alerts are run
    assert find_alerts(typed(nights + [night(base_night, 10, env={"driver": "590.10.01"})])).alerts[0].key == al.key
    rep = issues_report(res, "h200", "night-009")
    assert [v["kind"] + " " + v["case"] for v in rep["verdicts"]] == ["env-census qwen3-1.7b-lora-4x1 since night-006"]
    msg = rep["verdicts"][0]["message"]  # the issue names the counts that moved and what in the environment changed
    assert "qwen3-1.7b-lora-4x1: kernel launches per optimizer step 10,937.4 -> 10,938.4 (+1)" in msg
    assert "environment since night-005: driver 580.159.04→590.10.01" in msg and "| night |" not in msg


def test_a_ten_percent_shift_that_holds_alerts_on_its_second_night_only(base_night):
    planted = noisy_nights(base_night, 34, QUIET, seed=3, planted=lambda i: math.log(1.10) if i >= 30 else 0.0)
    planted[30]["environment"]["driver"] = planted[31]["environment"]["driver"] = "590.10.01"
    for i in range(32, 34):
        planted[i]["environment"]["driver"] = "590.10.01"
    assert find_alerts(typed(planted[:31])).alerts == ()  # one night proves nothing
    second = find_alerts(typed(planted[:32]), new_only=True).alerts
    assert [(a.kind, a.subject, a.session_id, a.raised_at) for a in second] == [
        ("timing", f"qwen3-1.7b-lora-{d}", "night-030", "night-031") for d in ("1x4", "2x2", "4x1")
    ]
    a = second[0]
    assert 1.05 < a.ratio < 1.15 and a.lo < a.ratio < a.hi and a.nights == 2 and a.reference_nights == 30
    assert "driver 580.159.04→590.10.01" in a.summary and len(a.trend) == 10
    later = find_alerts(typed(planted))
    assert sorted(x.key for x in later.alerts) == sorted(x.key for x in second)  # the same alerts, the same keys
    assert find_alerts(typed(planted), new_only=True).alerts == ()  # nothing new on the nights after


def test_a_shift_s_issue_text_carries_the_trend_the_size_and_the_environment_diff(base_night):
    planted = noisy_nights(base_night, 32, QUIET, seed=3, planted=lambda i: math.log(1.10) if i >= 30 else 0.0)
    for i in range(25, 32):  # a CUDA change five nights before the shift, the harness commit (quiet) two nights later
        planted[i]["environment"].update(cuda="13.1", **({"harness": "abc"} if i >= 27 else {}))
    for i in (30, 31):
        planted[i]["environment"]["driver"] = "590.10.01"
    rep = issues_report(find_alerts(typed(planted), new_only=True), "h200", "night-031")
    v = next(v for v in rep["verdicts"] if v["case"] == "qwen3-1.7b-lora-4x1 since night-030")
    msg = v["message"]
    head = msg.splitlines()[0]
    assert head.startswith("step time x1.") and "[90%: " in head and "over 2 night(s) against the 30 before" in head
    assert head.endswith("environment since night-029: driver 580.159.04→590.10.01")
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in msg.splitlines() if ln.startswith("  | ")]
    assert rows[0] == ["night", "date", "session", "median step ms", "vs reference", "changed since the night before"]
    body = {r[0].strip("*"): r for r in rows[2:]}
    assert list(body) == [f"{n:+d}" for n in range(-8, 0)] + ["+1", "+2"]  # 8 reference nights, every night after
    assert body["+1"][1:3] == ["**2027-01-31**", "**night-030**"] and body["+1"][5] == "**driver 580.159.04→590.10.01**"
    assert body["-5"][2] == "night-025" and body["-5"][5] == "cuda 13.0→13.1"  # every change of the trend is marked
    assert [r[0] for r in body.values() if r[5]] == ["-5", "**+1**"]  # the harness commit alone is no change
    pct = {k: float(r[4].strip("*%")) for k, r in body.items()}
    assert all(abs(pct[f"{n:+d}"]) < 8 for n in range(-8, 0)) and 3 < pct["+1"] < 20 and 3 < pct["+2"] < 20
    assert float(body["+1"][3].strip("*").replace(",", "")) > float(body["-1"][3].replace(",", ""))


def test_a_long_trend_is_cut_to_a_readable_table():
    trend = [
        Night(n, f"20270101T021700-{n + 50:06x}", "2027-01-01T02:17:00+0000", 100.0, 1.1 if n > 0 else 1.0, ())
        for n in [*range(-8, 0), *range(1, 41)]
    ]
    table = alert_text.trend_table(trend)
    assert len(table) == 2 + 8 + alert_text.TREND_AFTER + 1 and table[-1].strip().startswith("(and 28 more night(s)")
    assert "| 00002a |" in table[2] and alert_text.short_session("night-030") == "night-030"


def test_a_one_night_spike_raises_nothing(base_night):
    nights = noisy_nights(base_night, 45, QUIET, seed=4, planted=lambda i: math.log(1.30) if i == 30 else 0.0)
    assert all(find_alerts(typed(nights[:t])).alerts == () for t in (31, 32, 33, 45))


def test_aa_nights_raise_at_most_alpha_false_alerts(base_night):
    rule = ShiftRule()
    level = base_night["cases"][0]["step_time_ms"]["median"]
    series = 100
    false = sum(
        bool(find(list(level * np.exp(np.random.default_rng(1000 + i).normal(0, DRIFT, 100))), rule))
        for i in range(series)
    )
    assert (
        false <= rule.alpha * series
    )  # the rule's budget is alpha per 365 nights: over 100 nights about a quarter of it
    # and through the store's records: 100 A/A nights of the three splits
    assert find_alerts(typed(noisy_nights(base_night, 100, DRIFT, seed=7))).alerts == ()


def test_the_rule_s_reference_sd_is_statistics_stdev_to_the_last_bit():
    """The rule takes each reference's sd from running exact sums; it is the float :func:`statistics.stdev` gives, so
    that no threshold moves: on log step times, tiny and huge values, signed zeros and constant windows."""
    rng = np.random.default_rng(5)
    cases = [
        list(np.log(rng.uniform(1, 1000, 40))),
        list(np.log(100) + rng.normal(0, 0.05, 40)),
        list(rng.normal(0, 1e-9, 40)),
        [float(v) for v in rng.choice([0.0, -0.0, 1.0, 1e-300, 5e-324, 1e300], 40)],
        [0.7] * 40,
    ]
    for y in cases:
        y = [float(v) for v in y]
        sd = shifts._window_sd(y)
        picked = [(int(a), int(b)) for a, b in np.sort(rng.integers(0, 41, (40, 2)))]
        for lo, hi in [(0, 2), (0, 40), (3, 33), (10, 18), (38, 40), *picked]:
            if hi - lo >= 2:
                assert sd(lo, hi) == statistics.stdev(y[lo:hi]), (y[lo:hi], lo, hi)


def test_alerts_command(tmp_path, base_night, capsys):
    st = tmp_path / "store"
    nights = [night(base_night, i) for i in range(4)]
    nights[3] = _with_census(night(base_night, 3, env={"image": "sha256:feed"}), "1x4", "k", 2.0)
    DirStore(st).add(typed(nights))
    issues = tmp_path / "env-alerts.json"
    assert (
        cli.main(["store", "alerts", "--store", str(st), "--gpu", "h200", "--new", "--json", "--issues", str(issues)])
        == 0
    )
    res = json.loads(capsys.readouterr().out)
    assert [a["key"] for a in res["alerts"]] == ["env-census/h200/pinned/gpu-h200-1/night-003"]
    rep = json.loads(issues.read_text())
    assert rep["gpu"] == "h200" and rep["session_id"] == "night-003" and rep["verdicts"][0]["outcome"] == "regression"
    assert "image (none)→sha256:feed" in rep["verdicts"][0]["message"]
    assert cli.main(["store", "alerts", "--store", str(tmp_path / "empty")]) == 2
    assert "no session stored there" in capsys.readouterr().err
    assert isinstance(open_store(str(st)), DirStore)
    assert cli.main(["store", "add", str(tmp_path / "empty"), "--store", str(st)]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "no-runs").mkdir()
    assert cli.main(["store", "add", str(tmp_path / "no-runs"), "--store", str(st)]) == 2
    assert "no runs.jsonl with a run here or below" in capsys.readouterr().err
    assert cli.main(["history", "--out", str(tmp_path / "page")]) == 2
    assert "history needs results dirs, or --store" in capsys.readouterr().err


def test_store_commands_start_without_scipy():
    """``store add`` and every ``--help`` only read and write files: they must not pay for importing scipy (seconds)."""
    code = (
        "import sys; from harness.commands import cli, store; from harness.store import alerts, summary; "
        "print(sorted(m for m in ('scipy', 'numpy', 'matplotlib', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_a_census_s_tokens_and_memory_reach_the_store_and_its_census_alerts(base_night):
    """The data a step sees (tokens per step) and its memory are kept in the store with the counts: a night whose
    tokens per step moved, pins and counts unchanged, raises the census alert that names them."""
    for case in base_night["cases"]:
        case["census"].update(
            tokens={"real": 2048.0, "padded": 2048.0},
            memory={"peak_reserved_bytes": 4_000_000_000, "peak_allocated_bytes": 3_000_000_000},
        )
    nights = [night(base_night, i) for i in range(4)]
    for later in nights[2:]:
        c = next(c for c in later["cases"] if c["decomposition"] == "4x1")["census"]
        c["tokens"] = {"real": 1536.0, "padded": 2048.0}  # the same data file, edited: fewer real tokens per step
        c["memory"] = {"peak_reserved_bytes": 4_600_000_000, "peak_allocated_bytes": 3_000_000_000}
    (al,) = find_alerts(typed(nights)).alerts
    assert al.kind == "census" and al.session_id == "night-002" and al.subject == "qwen3-1.7b-lora-4x1"
    text = "\n".join(al.cases[0].lines)
    assert "tokens per optimizer step: real 2,048 -> 1,536" in text and "peak reserved memory" in text


def test_the_store_keeps_a_census_run_s_tokens_and_memory():
    from harness.results.run import Run
    from harness.store.summary import case_entry

    census = {
        "fits": True,
        "device": "cuda",
        "ops": 50192.6,
        "kernels": 10938.4,
        "tokens": {"real": 2048.0, "padded": 2048.0},
        "memory": {
            "peak_reserved_bytes": 4_487_905_280,
            "peak_allocated_bytes": 4_012_345_344,
            "allocated_per_step": 123_456,
            "allocated_by_op": {"aten::mm": 100_000},
        },
    }
    run = Run.from_json({"run_id": "c1", "workload": "w", "decomposition_id": "4x1", "status": "ok", "census": census})
    kept = case_entry("w", "4x1", [run], None, {id(run): "dir"}).census
    assert kept.tokens == census["tokens"] and kept.memory == census["memory"]


# ---------------------------------------------------------------------------------------------------------------------
# a record of the wrong shape: skipped and named by every reader, the rest read
# ---------------------------------------------------------------------------------------------------------------------
SHAPE_PLAN = Plan(nights=12, census_move=("h200", "qwen3-1.7b-lora", "2x2", 8, 50.0))


def _wrong(how: str) -> bytes:
    """The file of one more night (after the plan's last) as someone with push access to the store might leave it."""
    rec = copy.deepcopy(store_records(SHAPE_PLAN)[-1])
    rec.update(session_id="h200-pinned-night-0012", started_at="2027-01-13T02:17:00+0000")
    if how == "workloads":
        rec["workloads"]["hash-qwen3-1.7b-lora"] = "oops"
    elif how == "verdicts":
        rec["verdicts"] = ["oops"]
    elif how == "schema":
        rec["schema"] = -1
    elif how == "census-memory":
        rec["cases"][0]["census"]["memory"] = "x"
    elif how == "deep":
        return gzip.compress(("[" * 100_000 + "]" * 100_000).encode())
    return gzip.compress(json.dumps(rec).encode())


WRONG = {
    "workloads": "workloads['hash-qwen3-1.7b-lora'] is a str, not an object",
    "verdicts": "verdicts[0] is a str, not an object",
    "schema": "schema -1 is not a version of the session record (0 to 1)",
    "census-memory": "cases[0].census.memory is a str, not an object",
    "deep": "arrays and objects nested 100000 deep, more than 64",
}


@pytest.mark.parametrize("how", list(WRONG))
def test_a_record_of_the_wrong_shape_is_named_and_skipped_and_the_page_and_alerts_use_the_rest(tmp_path, capsys, how):
    """Each of these ended history (and the last three store alerts) with exit 4 and no page: one warning line now
    names the file and what is wrong, and every other night is drawn and alerted on."""
    st = tmp_path / "store"
    good = store_records(SHAPE_PLAN)
    DirStore(st).write(typed(good))
    bad = st / "h200" / "pinned" / "2027-01-13-h200-pinned-night-0012.json.gz"
    bad.write_bytes(_wrong(how))
    assert cli.main(["history", "--store", str(st), "--out", str(tmp_path / "page")]) == 0
    warned = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and warned[0].startswith(f"warning: {bad}: ") and WRONG[how] in warned[0]
    data = json.loads((tmp_path / "page" / "history.json").read_text())
    nights = [r["session_id"] for r in good]
    assert len(data["series"]) == 3 and all(s["sessions"] == nights for s in data["series"])
    assert any(str(bad) in line and WRONG[how] in line for line in data["skipped"])
    assert cli.main(["store", "alerts", "--store", str(st), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: ") == 1 and f"warning: {bad}: " in out and WRONG[how] in out
    result = json.loads(out[out.index("{") :])
    assert result["sessions"] == len(good) and [a["session_id"] for a in result["alerts"]] == ["h200-pinned-night-0008"]


def test_the_schema_of_the_current_version_fits_what_store_add_writes(base_night):
    """The readers' schema (harness.store.check) is versioned with the record, and what ``store add`` writes of every
    committed results dir fits it; a run the schema refuses is left out of the stored session, by name."""
    assert set(check.SHAPES) == {rec_mod.SCHEMA}
    for d in DIRS:
        for rec in records_of(d):
            assert check.problem(rec.to_json(), rec_mod.SCHEMA) is None, (d, check.problem(rec.to_json(), 1))
    assert check.problem(base_night, rec_mod.SCHEMA) is None


def _places(value, at=()):
    """Every place in a JSON value, as its keys from the top."""
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from _places(v, (*at, k))


def test_the_schema_s_quick_test_agrees_with_the_walk_that_names_keys(base_night):
    """A record is checked by a test that names no key, and walked again, naming them, only where it fails: both say the
    same of a record with any one value anywhere made of another type, out of range, null or empty."""
    shape = check.SHAPES[rec_mod.SCHEMA]
    rec = copy.deepcopy(base_night)
    places = [p for p in _places(rec) if p]
    odd = ("x", "", 1, -2.5, True, None, [], {}, [1, "x"], {"a": None}, math.nan, 2**70, (1,))
    rng = np.random.default_rng(3)
    for i in rng.choice(len(places), 150, replace=False):
        *up, last = places[i]
        parent = rec
        for k in up:
            parent = parent[k]
        kept = parent[last]
        for value in odd:
            parent[last] = value
            why = values._first_mismatch(rec, shape, "")
            assert values._fits(shape)(rec) == (why is None), (places[i], value, why)
        parent[last] = kept
    assert check.problem(rec, rec_mod.SCHEMA) is None


def test_a_stored_run_the_page_cannot_use_is_named_and_no_flag_overwrites_its_case(tmp_path, capsys):
    """A stored run with a negative median ended the page with exit 2 (the change points need positive values), one
    with a flag named like a key of the case (``gpu``) with exit 4; each is now named and left out, or its flag
    ignored, and the page is made."""
    recs = store_records(Plan(nights=10))
    recs[-1]["cases"][0]["runs"][0]["median_ms"] = -5.0
    recs[-2]["cases"][1]["runs"][0]["flags"] = {"gpu": 5, "workload": None}
    st = tmp_path / "store"
    DirStore(st).write(typed(recs))
    assert cli.main(["history", "--store", str(st), "--out", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    said = f"run {recs[-1]['cases'][0]['runs'][0]['run_id']}: step_time_median_ms is -5.0, not a finite positive number"
    assert sum(said in line for line in out.splitlines() if line.startswith("warning: ")) == 1
    data = json.loads((tmp_path / "page" / "history.json").read_text())
    assert any(said in line for line in data["skipped"])
    assert {s["key"] for s in data["series"]} == {f"h200/qwen3-1.7b-lora/{s}/pinned" for s in ("1x4", "2x2", "4x1")}
    assert len(next(s for s in data["series"] if s["decomposition"] == "2x2")["sessions"]) == 10
