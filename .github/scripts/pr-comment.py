#!/usr/bin/env python3
"""The pull-request check's answer (.github/workflows/pr-check.yml, docs/pr-check.md): one comment and a status per GPU.

    python .github/scripts/pr-comment.py RESULTS

On a hosted runner with the base branch's checkout, the standard library only (and harness.nightly, which needs no
more). ``RESULTS`` holds one folder per GPU, ``pr-check-<gpu>/`` (each GPU job's artifact: ``pr-check.json`` and the
reports of ``pr-measure.py``). The pull request comes from the environment, which the workflow fills from the event:
``PR_NUMBER``, ``PR_SHA`` (its head commit), ``PR_BRANCH``, ``PR_GPUS`` (the plan's GPUs, JSON), ``PR_PINS`` and
``PR_ACCEPTED`` (the plan's), ``RUN_URL``, ``GH_REPO`` and ``GH_TOKEN`` for the gh CLI; the accept label is
nightly.toml's (``[pr] accept_label``).

* **The comment**: one per pull request, found by its first line, the hidden marker ``<!-- perf-check -->``, among the
  pull request's comments (``gh api``) written by the check's own account (``PERF_BOT_LOGIN``, by default
  ``github-actions[bot]``, the login of the workflow's token), and edited in place (PATCH), else created: never a second
  one. A comment of anyone else is never edited and its markers count for nothing, whatever it says; every name and
  message from the results reaches the comment as text (no markup, mention or marker). Per GPU a table
  of workload x split: the interleaved verdict, the change of the step with its interval, the cost model's prediction,
  the memory and the work (the census diff); then the bisect's answer, the equivalence, and the link to the run.
* **A commit status per GPU** (context ``perf-check/<gpu>``) on the head commit: ``failure`` on a regression (an
  interleaved verdict of regression, beyond the comparison's threshold, or a memory or equivalence check that failed),
  ``success`` with the accept label (its description says the regression was accepted) or without a regression,
  ``error`` when the GPU's job left no results or a measurement failed.
* **Baselines follow the merge**: where the pins changed and a GPU passed (or was accepted), the check starts
  update-baselines.yml on the pull request's branch for that GPU (``gh workflow run``), once per head commit: it records
  the GPU's baselines with the new pins and opens a pull request against the branch, so that the first night after the
  merge judges against them. The comment says so, and keeps a hidden line per GPU and commit so that a later run of the
  check does not start it again; where gh refuses, the comment gives the command to run by hand.

Exit 0 when the comment and the statuses were written, 1 when gh failed, 2 on bad input.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # harness.nightly from the checkout, nothing installed
from harness.nightly import NightlyError, load  # noqa: E402

MARKER = "<!-- perf-check -->"
STARTED = re.compile(r"<!-- baselines-started: ([A-Za-z0-9._-]+) ([0-9a-f]{7,40}) -->")  # a GPU's recording, per commit
SAFE_REF = re.compile(r"[A-Za-z0-9._/-]+")  # a branch name that a command line may show as it is
FAILING = ("regression", "fail")
BOT_LOGIN = "github-actions[bot]"  # the author of comments made with a workflow's GITHUB_TOKEN
MAX_JSON = 16 * 2**20  # a results file larger than this is not read


def read(path: Path) -> dict:
    try:
        if path.stat().st_size > MAX_JSON:
            return {}
        value = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def obj(value) -> dict:
    """``value`` where it is a JSON object, else an empty one: a results file of the wrong shape reads as missing."""
    return value if isinstance(value, dict) else {}


def seq(value) -> list[dict]:
    """The objects of ``value`` where it is a JSON array, else none."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def text(value) -> str:
    """``value`` as plain text in a markdown table cell or line: one line, no HTML (so no hidden marker), no mention,
    no link, no cell break."""
    out = " ".join(str(value).split())
    for raw, safe in (
        ("\\", "\\\\"),
        ("|", "\\|"),
        ("<", "&lt;"),
        ("[", "\\["),
        ("]", "\\]"),
        ("`", "'"),
        ("@", "@\u2060"),
    ):
        out = out.replace(raw, safe)
    return out


def pct(ratio) -> str:
    return f"{(ratio - 1) * 100:+.1f}%" if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else "-"


def signed(value) -> str | None:
    return f"{value:+.1f}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def interleaved(report: dict) -> dict:
    """The split's interleaved verdict: outcome, change and interval, and the cost model's prediction beside it."""
    v = obj(report.get("verdict"))
    if not v:
        return {"verdict": "no verdict" if report else "not interleaved", "change": "-", "predicted": "-"}
    change = pct(v.get("ratio")) + (f" [{pct(v.get('lo'))}, {pct(v.get('hi'))}]" if v.get("lo") is not None else "")
    p = obj(report.get("prediction"))
    point, lo, hi = signed(p.get("delta_pct")), signed(p.get("lo")), signed(p.get("hi"))
    predicted = "-" if point is None else point + (f" [{lo}, {hi}]" if lo and hi else "")
    return {"verdict": text(v.get("outcome", "?")), "change": change, "predicted": predicted}


def by_case(verdicts: list, kind: str) -> dict:
    return {v.get("case"): v for v in verdicts if v.get("kind") == kind}


def short(value, width: int = 110) -> str:
    value = text(value)
    return value if len(value) <= width else value[: width - 1] + "…"


def workload_rows(folder: Path, workload: str) -> tuple[list[dict], list[str]]:
    """The table's rows of one workload (one per split the censuses ran) and its lines below the table."""
    census = read(folder / workload / "census" / "report.json")
    verdicts, census_rows = seq(census.get("verdicts")), seq(census.get("rows"))
    work, memory = by_case(verdicts, "work"), by_case(verdicts, "memory")
    splits = [str(r.get("decomposition")) for r in census_rows if r.get("workload") == workload]
    splits += [p.name for p in sorted((folder / workload / "ab").glob("*")) if p.name not in splits]
    rows = []
    for dec in splits:
        case = f"{workload}-{dec}"
        row = next((r for r in census_rows if str(r.get("decomposition")) == dec), {})
        mem, wk = obj(memory.get(case)), obj(work.get(case))
        peak = obj(row.get("peak_reserved_gib")).get("median")  # the report's range of the split's runs
        gib = f" ({peak:.2f} GiB)" if isinstance(peak, (int, float)) and not isinstance(peak, bool) else ""
        message = re.sub(r"^WORK CHANGED: |aten::| per optimizer step", "", str(wk.get("message") or "-"))
        rows.append(
            {
                "workload": text(workload),
                "split": text(dec),
                **interleaved(read(folder / workload / "ab" / dec / "report.json")),
                "memory": text(mem.get("outcome") or "-") + gib,
                "work": "same" if wk.get("outcome") == "pass" else short(message),
                "failing": mem.get("outcome") in FAILING,
            }
        )
    lines = []
    for v in by_case(verdicts, "equivalence").values():
        lines.append(
            f"- equivalence of the splits ({text(workload)}): {short(v.get('message') or v.get('outcome'), 200)}"
        )
    bisect = read(folder / workload / "bisect" / "report.json")
    name = text(bisect.get("case", workload))
    for c in seq(bisect.get("changes")):
        lines.append(
            f"- bisect ({name}): last good `{text(c.get('last_good'))}`, first bad `{text(c.get('first_bad'))}`"
        )
    if bisect and not seq(bisect.get("changes")):
        lines.append(f"- bisect ({name}): {text(bisect.get('outcome', 'no answer'))}")
    base = obj(obj(census.get("baseline_versions")).get(workload))  # the report keeps them per workload
    moved = [f"{k} {base.get(k)} -> {v}" for k, v in obj(census.get("versions")).items() if base and base.get(k) != v]
    if moved:
        lines.append(f"- versions ({text(workload)}), base -> head: {text(', '.join(moved))}")
    return rows, lines


def gpu_result(folder: Path, gpu: str) -> dict:
    """One GPU's rows, lines and outcome: ``regression``, ``failed`` (no results, or a measurement failed) or
    ``pass``."""
    index = read(folder / "pr-check.json")
    if not index:
        return {
            "gpu": gpu,
            "outcome": "failed",
            "rows": [],
            "lines": [f"- no results from the {gpu} runner: its job ended before its measurements"],
        }
    rows, lines, failed = [], [], []
    for workload, info in obj(index.get("workloads")).items():
        if not SAFE_REF.fullmatch(workload) or workload.startswith((".", "-")) or "/" in workload:
            lines.append(f"- a workload name that is not one was left out: `{short(workload, 60)}`")
            continue
        r, ls = workload_rows(folder, workload)
        rows += r
        lines += ls
        failed += [
            f"{text(workload)} {text(step)} (exit {text(code)})"
            for step, code in obj(obj(info).get("steps")).items()
            if code not in (0, 1)
        ]
        verdicts = seq(read(folder / workload / "census" / "report.json").get("verdicts"))
        if any(v.get("kind") == "equivalence" and v.get("outcome") in FAILING for v in verdicts):
            rows.append(
                {
                    "workload": workload,
                    "split": "all",
                    "verdict": "-",
                    "change": "-",
                    "predicted": "-",
                    "memory": "-",
                    "work": "-",
                    "failing": True,
                }
            )
    if failed:
        lines.append(f"- a measurement failed: {', '.join(failed)} (its log is in the run)")
    slower = [r for r in rows if r["verdict"] == "regression" or r["failing"]]
    outcome = "regression" if slower else "failed" if failed else "pass"
    return {
        "gpu": gpu,
        "outcome": outcome,
        "rows": [r for r in rows if r["split"] != "all"],
        "lines": lines,
        "slower": slower,
    }


def status(result: dict, accepted: bool, accept_label: str) -> tuple[str, str]:
    """The commit status (state, description of at most 140 characters) of one GPU."""
    slower = ", ".join(
        sorted({f"{r['workload']}-{r['split']} {r['change'].split(' ')[0]}" for r in result.get("slower", [])})
    )
    if result["outcome"] == "regression" and accepted:
        return "success", f"accepted regression ({accept_label}): {slower}"[:140]
    if result["outcome"] == "regression":
        return "failure", f"regression: {slower}; a maintainer may accept it with the {accept_label} label"[:140]
    if result["outcome"] == "failed":
        return "error", "no verdict: a measurement failed or the job left no results (see the run)"
    return "success", "no regression: base pins against this pull request's"


ICONS = {"pass": ":white_check_mark: no regression", "regression": ":x: regression", "failed": ":warning: no verdict"}


def section(result: dict, accepted: bool, ctx: dict) -> list[str]:
    state, _ = status(result, accepted, ctx["accept_label"])
    head = ICONS[result["outcome"]] + (
        f", accepted ({ctx['accept_label']})" if result["outcome"] == "regression" and accepted else ""
    )
    out = [f"### {result['gpu']}: {head}", ""]
    if result["rows"]:
        out += [
            "| workload | split | verdict (interleaved) | step change [interval] | predicted (cost model) | memory "
            "| work (census diff) |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {r['workload']} | {r['split']} | {r['verdict']} | {r['change']} | {r['predicted']} | {r['memory']} "
            f"| {r['work']} |"
            for r in result["rows"]
        ]
        out.append("")
    out += result["lines"]
    if ctx["pins"] and state == "success" and result["outcome"] != "failed":
        out.append(baseline_line(result["gpu"], ctx))
    return out + [""]


def baseline_line(gpu: str, ctx: dict) -> str:
    """What the comment says of ``gpu``'s baselines where the pins change and the GPU passed."""
    started = ctx.get("baselines", {}).get(gpu)
    if started in ("started", "earlier"):
        when = "this run of the check" if started == "started" else "an earlier run of the check for this commit"
        return (
            f"- baselines: the pins change; {when} started the recording of {gpu}'s baselines with them on this "
            f"branch (update-baselines.yml): merge the pull request it opens against this branch before this one\n"
            f"<!-- baselines-started: {gpu} {ctx['sha']} -->"
        )
    return (
        f"- baselines: the pins change; record {gpu}'s baselines with them on this branch before the merge: "
        f"`{baseline_command(gpu, ctx['branch'])}` (it opens a pull request against this branch)"
    )


def safe_branch(branch: str) -> bool:
    return bool(SAFE_REF.fullmatch(branch or "")) and not branch.startswith("-")


def record_baselines(results: list[dict], ctx: dict, earlier: str) -> dict[str, str]:
    """Start update-baselines.yml on the pull request's branch for each GPU whose pins changed and that passed (or was
    accepted), once per head commit: GPU -> ``started``, ``earlier`` (the comment ``earlier`` says a run of the check
    started it for this commit) or ``refused`` (gh failed: the comment gives the command instead)."""
    if not ctx["pins"] or not safe_branch(ctx["branch"]):
        return {}
    done = set(STARTED.findall(earlier))
    out = {}
    for r in results:
        if status(r, ctx["accepted"], ctx["accept_label"])[0] != "success" or r["outcome"] == "failed":
            continue
        if (r["gpu"], ctx["sha"]) in done:
            out[r["gpu"]] = "earlier"
            continue
        cmd = [
            "gh",
            "workflow",
            "run",
            "update-baselines.yml",
            f"--ref={ctx['branch']}",
            "-f",
            f"gpu={r['gpu']}",
            "-f",
            "env=pinned",
            "-f",
            "repeats=5",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        out[r["gpu"]] = "started" if proc.returncode == 0 else "refused"
        print(
            f"baselines of {r['gpu']}: {out[r['gpu']]}" + (f" ({proc.stderr.strip()[:200]})" if proc.returncode else "")
        )
    return out


def baseline_command(gpu: str, branch: str) -> str:
    ref = branch if safe_branch(branch) else "<this pull request's branch>"
    return f"gh workflow run update-baselines.yml --ref {ref} -f gpu={gpu} -f env=pinned -f repeats=5"


def body(results: list[dict], ctx: dict) -> str:
    lines = [
        MARKER,
        "## Performance check: base pins (A) against this pull request's (B)",
        "",
        f"Head `{ctx['sha'][:12]}`, [run]({ctx['run_url']}); "
        + (
            "the pins change: each split interleaved, base against head, on the GPU runner"
            if ctx["pins"]
            else "the pins do not change: the work (census) of base against head, no interleaved comparison"
        ),
        "",
    ]
    for r in results:
        lines += section(r, ctx["accepted"], ctx)
    lines.append(
        f"<sub>Updated on each run of the check (.github/workflows/pr-check.yml); the {ctx['accept_label']} label "
        "accepts a regression.</sub>"
    )
    return "\n".join(lines) + "\n"


def gh_api(*args: str) -> str:
    proc = subprocess.run(["gh", "api", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"gh api {args[-1] if args else ''} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def pages(text: str) -> list:
    """The items of ``gh api --paginate --slurp``'s answer: a JSON array of pages, each an array."""
    return [item for page in json.loads(text or "[]") for item in (page if isinstance(page, list) else [page])]


def find_comment(repo: str, number: str, login: str) -> dict | None:
    """The pull request's comment that ``login`` wrote and that starts with the marker, or None. Anyone may write the
    marker; only the check's own comment is its comment."""
    comments = pages(gh_api("--paginate", "--slurp", f"repos/{repo}/issues/{number}/comments"))
    mine = [
        c
        for c in comments
        if isinstance(c, dict)
        and obj(c.get("user")).get("login") == login
        and str(c.get("body", "")).startswith(MARKER)
    ]
    return mine[0] if mine else None


def upsert(repo: str, number: str, mine: dict | None, text: str) -> str:
    """Edit the pull request's comment ``mine``, or create it; ``"updated"`` or ``"created"``."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"body": text}, f)
    try:
        if mine:
            gh_api("--method", "PATCH", f"repos/{repo}/issues/comments/{mine['id']}", "--input", f.name)
            return "updated"
        gh_api("--method", "POST", f"repos/{repo}/issues/{number}/comments", "--input", f.name)
        return "created"
    finally:
        os.unlink(f.name)


def context() -> dict:
    e = os.environ.get
    gpus = json.loads(e("PR_GPUS") or "[]")
    if not isinstance(gpus, list) or not all(isinstance(g, str) and SAFE_REF.fullmatch(g) for g in gpus) or not gpus:
        raise ValueError(f"PR_GPUS must be the plan's JSON list of GPUs, got {e('PR_GPUS')!r}")
    if not (e("PR_NUMBER") or "").isdigit() or not re.fullmatch(r"[0-9a-f]{7,40}", e("PR_SHA") or ""):
        raise ValueError(
            "PR_NUMBER and PR_SHA must be the pull request's number and head commit (the workflow sets them)"
        )
    return {
        "gpus": gpus,
        "number": e("PR_NUMBER"),
        "sha": e("PR_SHA"),
        "branch": e("PR_BRANCH") or "",
        "pins": e("PR_PINS") == "true",
        "accepted": e("PR_ACCEPTED") == "true",
        "accept_label": load(Path.cwd()).pr.accept_label,
        "run_url": e("RUN_URL") or "",
        "repo": e("GH_REPO") or e("GITHUB_REPOSITORY") or "",
        "login": e("PERF_BOT_LOGIN") or BOT_LOGIN,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: pr-comment.py RESULTS (the folder of the GPU jobs' artifacts, pr-check-<gpu>/)", file=sys.stderr)
        return 2
    try:
        ctx = context()
    except (ValueError, json.JSONDecodeError, NightlyError) as exc:
        print(f"::error::pr-comment: {exc}")
        return 2
    results = [gpu_result(Path(argv[0]) / f"pr-check-{g}", g) for g in ctx["gpus"]]
    try:
        mine = find_comment(ctx["repo"], ctx["number"], ctx["login"])
        ctx["baselines"] = record_baselines(results, ctx, str((mine or {}).get("body", "")))
        text = body(results, ctx)
        done = upsert(ctx["repo"], ctx["number"], mine, text)
        for r in results:
            state, description = status(r, ctx["accepted"], ctx["accept_label"])
            gh_api(
                "--method",
                "POST",
                f"repos/{ctx['repo']}/statuses/{ctx['sha']}",
                "-f",
                f"state={state}",
                "-f",
                f"context=perf-check/{r['gpu']}",
                "-f",
                f"description={description}",
                "-f",
                f"target_url={ctx['run_url']}",
            )
            print(f"perf-check/{r['gpu']}: {state}: {description}")
    except RuntimeError as exc:
        print(f"::error::pr-comment: {exc}")
        return 1
    print(f"comment {done}")
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
            f.write(text.replace(MARKER + "\n", "") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
