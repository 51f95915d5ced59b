"""The release night's costs and verdicts, from its raw data (release-night-h200.jsonl.gz): the GPU time of each part of
each job, what each part could see, and the bisect's censuses. Run from the repository root:

    python docs/evidence/what-a-release-night-costs-on-an-h200/costs.py
"""

import gzip
import json
import re
from pathlib import Path

from harness.judging import census_diff
from harness.judging.judge import CENSUS_TOLERANCES

RAW = Path(__file__).with_name("release-night-h200.jsonl.gz")


def load() -> dict[str, list]:
    files: dict[str, list] = {}
    for line in gzip.open(RAW, "rt"):
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

    from harness.commands.cost import interleave_prediction

    spec = importlib.util.spec_from_file_location("ab_censuses", Path(__file__).parents[3] / ".github" / "scripts" / "ab-censuses.py")
    seeding = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seeding)
    report = f["latest-results/ab/4x1/report.json"][0]
    with tempfile.TemporaryDirectory() as tmp:
        res = Path(tmp)
        (res / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs(f, "latest-results/runs.jsonl")))
        seeding.seed(res, Path(__file__).parents[3] / "baselines", "h200", "qwen3-1.7b-lora", ["4x1"])
        return interleave_prediction(res / "ab" / "4x1", report["settings"], report["step_ms_median"]["a"], report["verdict"])


def main() -> None:
    f = load()
    print("machine:", f["nvidia-smi.txt"][0].strip().splitlines()[-1], "| boot id", f["boot_id"][0].strip())
    print("versions (pinned, latest):", " / ".join(f["versions.txt"][0].strip().splitlines()))
    rows = []
    for job, name in (("pinned", "pinned-results/runs.jsonl"), ("latest", "latest-results/runs.jsonl")):
        timed = [r for r in runs(f, name) if not r.get("census")]
        census = [r for r in runs(f, name) if r.get("census")]
        rows.append((job, "timed round, 1 run each of " + "/".join(r["decomposition_id"] for r in timed), sum(r["wall_s"] for r in timed)))
        rows.append((job, "census, 1 run per case", sum(r["wall_s"] for r in census)))
    steps = {s["name"]: s["wall_s"] for s in f["pinned-outcomes.json"][0]}
    rows.insert(0, ("pinned", "plan, pytest and report, store", steps["Plan the night"] + steps["Run the performance suite"]
                    - rows[0][2] - rows[1][2] + steps["Keep the session in the results store"] + steps["Open or update environment-regression issues"]))
    latest = f["latest-steps.txt"][0]
    ab = float(re.search(r"A/B pinned vs latest, interleaved: \w+ \((\d+) s\)", latest).group(1))
    suite = float(re.search(r"Run the performance suite: \w+ \((\d+) s\)", latest).group(1))
    rows.append(("latest", "plan, pytest and report", suite - rows[3][2] - rows[4][2] + 1))
    rows.append(("latest", "A/B 4x1 interleaved (4-minute budget)", ab))
    bis = {k.split("/")[-2].split("-")[0]: runs(f, k)[-1] for k in f if k.startswith("latest-results/bisect/census/")}
    made = [r for k, r in bis.items() if k != ".tox_latest_bin_python"]  # latest's census is tonight's, reused
    rows.append(("latest", f"bisect: {len(made)} census runs (installs not timed; cut off past its budget)", sum(r["wall_s"] for r in made)))
    print("\n| job | part | GPU s |\n|---|---|---:|")
    for job, part, s in rows:
        print(f"| {job} | {part} | {s:.0f} |")
    total = sum(s for _, _, s in rows)
    print(f"| both | as run | {total:.0f} ({total / 60:.1f} min) |")
    redesigned = total - rows[3][2]
    print(f"| both | with latest census-only (its timed round left out) | {redesigned:.0f} ({redesigned / 60:.1f} min) |")
    capped = redesigned - rows[-1][2] + 7 * 60
    print(f"| both | ... and the bisect at its whole budget of 7 minutes, installs included | {capped:.0f} ({capped / 60:.1f} min) |")
    for job, name in (("pinned", "pinned-results/report.json"), ("latest", "latest-results/report.json")):
        for v in f[name][0]["verdicts"]:
            if v["kind"] in ("runtime", "memory", "equivalence") or v["kind"] == "work":
                print(f"{job} {v['kind']} {v['case']}: {v['outcome']}: {v['message'][:160]}")
    print("A/B:", f["latest-results/ab/4x1/report.json"][0]["verdict"]["message"])
    print("cost model beside it:", prediction(f))
    order = [".tox_pinned_bin_python", "transformers_5.18.0", "transformers_5.19.0", "transformers_5.20.0", "transformers_5.21.0",
             "transformers_5.25.0", ".tox_latest_bin_python"]
    cs = {k: census_diff.normalize(bis[k]["census"]) for k in order}
    print("\nbisect censuses (aten ops, kernel launches, Python calls per optimizer step; wall s):")
    for k in order:
        print(f"  {k}: {cs[k]['ops']:,.1f} {cs[k]['kernels']:,.1f} {cs[k]['python_calls']:,.0f}; {bis[k]['wall_s']:.0f} s")
    for a, b in zip(order, order[1:]):
        d = census_diff.diff(cs[a], cs[b], CENSUS_TOLERANCES)
        print(f"{a} -> {b}: {'CHANGED' if d.counts_changed else 'same'}")
        for ln in census_diff.lines(d, cs[a], cs[b]) if d.counts_changed else []:
            print("   ", ln)


if __name__ == "__main__":
    main()
