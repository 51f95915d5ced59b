"""The release nights' costs and verdicts, from their raw data: the night run end to end as now designed
(release-night-end-to-end-h200.jsonl.gz: each step's GPU time from the jobs' outcomes), its latest job again with the
bisect's 8-minute budget (latest-job-eight-minute-bisect-h200.jsonl.gz), then the first night, which still
had a timed round in the latest job (release-night-h200.jsonl.gz: what each part could see, and the bisect's censuses).
Run from the repository root:

    python docs/evidence/what-a-release-night-costs-on-an-h200/costs.py
"""

import gzip
import json
import re
from pathlib import Path

from harness.judging import census_diff
from harness.judging.judge import CENSUS_TOLERANCES

RAW = Path(__file__).with_name("release-night-h200.jsonl.gz")
END_TO_END = Path(__file__).with_name("release-night-end-to-end-h200.jsonl.gz")
EIGHT_MINUTES = Path(__file__).with_name("latest-job-eight-minute-bisect-h200.jsonl.gz")
STORE_AND_ISSUES = (
    "Keep the session in the results store",
    "Open or update environment-regression issues",
    "Open or update regression issues",
    "Open or update regression issues (A/B)",
)


def load(raw: Path = RAW) -> dict[str, list]:
    files: dict[str, list] = {}
    for line in gzip.open(raw, "rt"):
        d = json.loads(line)
        files.setdefault(d["file"], []).append(d.get("record", d.get("json", d.get("text"))))
    return files


def runs(files, name):
    return [r for r in files.get(name, []) if isinstance(r, dict)]


def prediction(f) -> dict:
    """What the nightly's A/B now reports beside its verdict: the cost model's prediction from the stored baseline's
    census (A) and the latest job's (B) (.github/scripts/ab-censuses.py), against the measured change."""
    import importlib.util
    import tempfile

    from harness.judging.comparison_settings import ComparisonSettings
    from harness.suite.runs import interleave_prediction

    spec = importlib.util.spec_from_file_location(
        "ab_censuses", Path(__file__).parents[3] / ".github" / "scripts" / "ab-censuses.py"
    )
    seeding = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seeding)
    report = f["latest-results/ab/4x1/report.json"][0]
    with tempfile.TemporaryDirectory() as tmp:
        res = Path(tmp)
        (res / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs(f, "latest-results/runs.jsonl")))
        seeding.seed(res, Path(__file__).parents[3] / "baselines", "h200", "qwen3-1.7b-lora", ["4x1"])
        return interleave_prediction(
            res / "ab" / "4x1",
            ComparisonSettings.from_json(report["settings"]),
            report["step_ms_median"]["a"],
            report["verdict"],
        )


def _seconds(stamps: list) -> float:
    from datetime import datetime

    a, b = (datetime.fromisoformat(x[0].strip().replace("Z", "+00:00")) for x in stamps)
    return (b - a).total_seconds()


def bisect_and_ab(f) -> None:
    """The latest job's bisect (its cost and each change's counts) and its A/B with the cost model beside it."""
    from harness.bisect.report import counts_text

    rep = f["latest-results/bisect/report.json"][0]
    spent = rep["spent"]
    print(
        f"\nbisect: {spent['census_runs']} census runs ({spent['census_reused']} reused), "
        f"{spent['device_s']:.0f} GPU s, installs {spent['install_s']:.0f} s"
    )
    for c in rep["changes"]:
        print(f"  {c['last_good']} -> {c['first_bad']}: {counts_text(c['counts'])}")
    ab = f["latest-results/ab/4x1/report.json"][0]
    print("A/B:", ab["verdict"]["message"])
    p = ab["prediction"]
    print(
        f"cost model beside it: predicted {p['delta_pct']:+.2f}% [{p['lo']:+.2f}, {p['hi']:+.2f}], measured "
        f"{p['measured_pct']:+.2f}% [{p['measured_lo']:+.2f}, {p['measured_hi']:+.2f}]"
    )


def ab_phases(f) -> None:
    """Where the A/B's change went: per pair, B's phase times less A's (ms per step, median over the pairs)."""
    from statistics import median

    pairs: dict = {}
    for b in runs(f, "latest-results/ab/4x1/blocks.jsonl"):
        if not b.get("warmup") and b.get("pair") is not None:
            pairs.setdefault((b["launch"], b["pair"]), {})[b["side"]] = b
    both = [v for v in pairs.values() if "a" in v and "b" in v]
    per_step = {
        p: [(sum(v["b"]["phases_ms"][p]) - sum(v["a"]["phases_ms"][p])) / len(v["a"]["step_times_ms"]) for v in both]
        for p in ("data", "forward", "backward", "optimizer", "other")
    }
    a_ms = median(sum(v["a"]["step_times_ms"]) / len(v["a"]["step_times_ms"]) for v in both)
    print(
        f"A/B phases, B less A per step over {len(both)} pairs (A's step {a_ms:.1f} ms): "
        + ", ".join(f"{p} {median(xs):+.2f} ms" for p, xs in per_step.items())
    )


def end_to_end() -> None:
    """The night as designed, run end to end: each job's steps as run-workflow.py timed them, the suite split into its
    runs, and the environments built before the job (tox's step on a runner; night.sh's setup here)."""
    f = load(END_TO_END)
    print("# The night end to end")
    rows = []
    for job in ("pinned", "latest"):
        m = f"{job}-machine/"
        print(f"{job}: boot id {f[m + 'boot_id'][0].strip()}; {f[m + 'nvidia-smi.txt'][0].strip().splitlines()[-1]}")
        print(f"  versions: {f[m + 'versions.txt'][0].strip().splitlines()[0 if job == 'pinned' else 1]}")
        steps = {s["name"]: s["wall_s"] for s in f[f"{job}-outcomes.json"][0]}
        done = 0.0
        for census in (False, True):
            rs = [r for r in runs(f, f"{job}-results/runs.jsonl") if bool(r.get("census")) == census]
            if rs:
                what = "census" if census else "timed"
                rows.append(
                    (job, f"{what} runs: {'/'.join(r['decomposition_id'] for r in rs)}", sum(r["wall_s"] for r in rs))
                )
                done += rows[-1][2]
        rows.append(
            (
                job,
                "pytest's own time, the plan, the baselines check",
                steps["Run the performance suite"]
                - done
                + steps["Plan the night"]
                + steps["Record missing baselines (first night)"],
            )
        )
        for name, part in (
            ("A/B pinned vs latest, interleaved", "A/B 4x1 interleaved (4-minute budget)"),
            ("Bisect what changed", "bisect (7-minute budget, installs included)"),
            ("Confirm runtime regressions interleaved", "confirmation (nothing to confirm)"),
        ):
            if steps.get(name):
                rows.append((job, part, steps[name]))
        rows.append((job, "store and issues", sum(steps.get(n, 0.0) for n in STORE_AND_ISSUES)))
        rows.append(
            (job, "environments built before the job (tox)", _seconds([f[m + "start.txt"], f[m + "setup-done.txt"]]))
        )
    print("\n| job | part | GPU s |\n|---|---|---:|")
    for job, part, sec in rows:
        print(f"| {job} | {part} | {sec:.0f} |")
    steps_only = sum(s for _, p, s in rows if not p.startswith("environments"))
    total = sum(s for _, _, s in rows)
    print(f"| both | the jobs' steps | {steps_only:.0f} ({steps_only / 60:.1f} min) |")
    print(f"| both | with the environments built | {total:.0f} ({total / 60:.1f} min) |")
    bisect = next(s for _, p, s in rows if p.startswith("bisect"))
    print(
        f"| both | ... with the bisect at its new 8-minute budget | {total - bisect + 480:.0f} "
        f"({(total - bisect + 480) / 60:.1f} min) |"
    )
    bisect_and_ab(f)
    for job in ("pinned", "latest"):
        for v in f[f"{job}-results/report.json"][0]["verdicts"]:
            print(f"{job} {v['kind']} {v['case']}: {v['outcome']}: {v['message'][:140]}")


def eight_minute_bisect() -> None:
    """The latest job again on a third machine, with the bisect at its 8-minute budget: its parts, and the night with
    the pinned job of the end-to-end night (the pinned job did not change)."""
    f, pinned = load(EIGHT_MINUTES), load(END_TO_END)
    print("\n# The latest job with the 8-minute bisect")
    print(f"latest: boot id {f['boot_id'][0].strip()}; {f['nvidia-smi.txt'][0].strip().splitlines()[-1]}")
    steps = {s["name"]: s["wall_s"] for s in f["latest-outcomes.json"][0]}
    census = sum(r["wall_s"] for r in runs(f, "latest-results/runs.jsonl") if r.get("census"))
    rows = [
        ("census runs: 1x4/2x2/4x1", census),
        (
            "pytest's own time, the plan, the baselines check",
            steps["Run the performance suite"]
            - census
            + steps["Plan the night"]
            + steps["Record missing baselines (first night)"],
        ),
        ("A/B 4x1 interleaved (4-minute budget)", steps["A/B pinned vs latest, interleaved"]),
        ("bisect (8-minute budget, installs included)", steps["Bisect what changed"]),
        ("confirmation (nothing to confirm)", steps["Confirm runtime regressions interleaved"]),
        ("store and issues", sum(steps.get(n, 0.0) for n in STORE_AND_ISSUES)),
    ]
    latest = sum(s for _, s in rows)
    build = _seconds([f["start.txt"], f["setup-done.txt"]])
    pinned_steps = {s["name"]: s["wall_s"] for s in pinned["pinned-outcomes.json"][0]}
    pinned_s = sum(pinned_steps.values())
    pinned_build = _seconds([pinned["pinned-machine/start.txt"], pinned["pinned-machine/setup-done.txt"]])
    print("\n| job | part | GPU s |\n|---|---|---:|")
    for part, sec in rows:
        print(f"| latest | {part} | {sec:.0f} |")
    print(f"| latest | the job's steps | {latest:.0f} |")
    print(f"| latest | environments built before the job (tox) | {build:.0f} |")
    print(f"| pinned | the job's steps (the end-to-end night) | {pinned_s:.0f} |")
    print(f"| both | the jobs' steps | {latest + pinned_s:.0f} ({(latest + pinned_s) / 60:.1f} min) |")
    both = latest + pinned_s + build + pinned_build
    print(f"| both | with the environments built | {both:.0f} ({both / 60:.1f} min) |")
    bisect_and_ab(f)
    ab_phases(f)


def first_night() -> None:
    f = load()
    print("\n# The first night (the latest job still with a timed round)")
    print("machine:", f["nvidia-smi.txt"][0].strip().splitlines()[-1], "| boot id", f["boot_id"][0].strip())
    print("versions (pinned, latest):", " / ".join(f["versions.txt"][0].strip().splitlines()))
    rows = []
    for job, name in (("pinned", "pinned-results/runs.jsonl"), ("latest", "latest-results/runs.jsonl")):
        timed = [r for r in runs(f, name) if not r.get("census")]
        census = [r for r in runs(f, name) if r.get("census")]
        rows.append(
            (
                job,
                "timed round, 1 run each of " + "/".join(r["decomposition_id"] for r in timed),
                sum(r["wall_s"] for r in timed),
            )
        )
        rows.append((job, "census, 1 run per case", sum(r["wall_s"] for r in census)))
    steps = {s["name"]: s["wall_s"] for s in f["pinned-outcomes.json"][0]}
    rows.insert(
        0,
        (
            "pinned",
            "plan, pytest and report, store",
            steps["Plan the night"]
            + steps["Run the performance suite"]
            - rows[0][2]
            - rows[1][2]
            + steps["Keep the session in the results store"]
            + steps["Open or update environment-regression issues"],
        ),
    )
    latest = f["latest-steps.txt"][0]
    ab = float(re.search(r"A/B pinned vs latest, interleaved: \w+ \((\d+) s\)", latest).group(1))
    suite = float(re.search(r"Run the performance suite: \w+ \((\d+) s\)", latest).group(1))
    rows.append(("latest", "plan, pytest and report", suite - rows[3][2] - rows[4][2] + 1))
    rows.append(("latest", "A/B 4x1 interleaved (4-minute budget)", ab))
    bis = {k.split("/")[-2].split("-")[0]: runs(f, k)[-1] for k in f if k.startswith("latest-results/bisect/census/")}
    made = [r for k, r in bis.items() if k != ".tox_latest_bin_python"]  # latest's census is tonight's, reused
    rows.append(
        (
            "latest",
            f"bisect: {len(made)} census runs (installs not timed; cut off past its budget)",
            sum(r["wall_s"] for r in made),
        )
    )
    print("\n| job | part | GPU s |\n|---|---|---:|")
    for job, part, s in rows:
        print(f"| {job} | {part} | {s:.0f} |")
    total = sum(s for _, _, s in rows)
    print(f"| both | as run | {total:.0f} ({total / 60:.1f} min) |")
    redesigned = total - rows[3][2]
    print(
        f"| both | with latest census-only (its timed round left out) | {redesigned:.0f} ({redesigned / 60:.1f} min) |"
    )
    capped = redesigned - rows[-1][2] + 7 * 60
    print(
        f"| both | ... and the bisect at its whole budget of 7 minutes, installs included | {capped:.0f} "
        f"({capped / 60:.1f} min) |"
    )
    for job, name in (("pinned", "pinned-results/report.json"), ("latest", "latest-results/report.json")):
        for v in f[name][0]["verdicts"]:
            if v["kind"] in ("runtime", "memory", "equivalence") or v["kind"] == "work":
                print(f"{job} {v['kind']} {v['case']}: {v['outcome']}: {v['message'][:160]}")
    print("A/B:", f["latest-results/ab/4x1/report.json"][0]["verdict"]["message"])
    print("cost model beside it:", prediction(f))
    order = [
        ".tox_pinned_bin_python",
        "transformers_5.18.0",
        "transformers_5.19.0",
        "transformers_5.20.0",
        "transformers_5.21.0",
        "transformers_5.25.0",
        ".tox_latest_bin_python",
    ]
    cs = {k: census_diff.normalize(bis[k]["census"]) for k in order}
    print("\nbisect censuses (aten ops, kernel launches, Python calls per optimizer step; wall s):")
    for k in order:
        print(
            f"  {k}: {cs[k]['ops']:,.1f} {cs[k]['kernels']:,.1f} {cs[k]['python_calls']:,.0f}; {bis[k]['wall_s']:.0f} s"
        )
    for a, b in zip(order, order[1:]):
        d = census_diff.diff(cs[a], cs[b], CENSUS_TOLERANCES)
        print(f"{a} -> {b}: {'CHANGED' if d.counts_changed else 'same'}")
        for ln in census_diff.lines(d, cs[a], cs[b]) if d.counts_changed else []:
            print("   ", ln)


if __name__ == "__main__":
    end_to_end()
    eight_minute_bisect()
    first_night()
