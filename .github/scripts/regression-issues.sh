#!/usr/bin/env bash
# Opens or updates one GitHub issue per regression found by a performance run.
#
# Reads the suite's report (perf-results/report.json):
#   {"gpu": "l4", "session_id": "...",
#    "verdicts": [{"kind": "runtime", "case": "qwen3-1.7b-lora-1x4", "outcome": "regression", "message": "...",
#                  "repro": "pytest perftests --gpu=l4 --workload qwen3-1.7b-lora -k 1x4 --repeats 5"}],
#    "rows": [{"workload": "qwen3-1.7b-lora", "decomposition": "1x4", "where": "median step +38.1 ms; backward +35.0 ms (+9%), ..."}],
#    "versions": {"torch": "...", "transformers": "...", ...}}
# For every verdict whose outcome is `regression` or `fail` it takes the stable title
#   perf regression: <gpu> <env> <kind> <case>
# and comments on the open issue labelled perf-regression with exactly that title, or creates one.
# Each verdict's bullet ends with its `repro`, the command that reproduces it on a runner of the GPU, where it has one.
# Verdicts that share a title (several ordering verdicts of one workload) go into one comment.
#
# Environment:
#   GH_TOKEN   token for the gh CLI (issues: write)              required
#   GH_REPO    owner/name (gh falls back to the git remote)       optional
#   PERF_ENV   tox environment of the run (pinned, latest, ...)   required
#   RUN_URL    link to the workflow run                           optional
#   REPORT     report path (default perf-results/report.json)     optional
#   CONFIRM    the interleaved confirmation's report              optional
#              (perf-results/confirm/report.json): when it exists and confirms REPORT's session (the same
#              session_id) it is the report; when set but missing or of another session (the confirmation was cut
#              short, or failed before its report) runtime regressions are unconfirmed timings of the stored
#              baseline and open no issue; the other verdicts still do
#   LABEL      issue label (default perf-regression)              optional
#   MISSING    the first night's lines on missing baselines       optional
#              (default: missing-baselines.md beside REPORT, written by first-night.py): each issue repeats them, so that
#              a check skipped for want of a baseline is never silent
#   BISECT     the bisect's report.md, added under "Bisect"        optional
#   CHANGES    "true": the work verdicts that changed (a census    optional
#              that differs from the baseline's) open one issue per GPU, track and workload, titled "perf change: ..."
#              (the latest job on a night with new versions: what the release changed, and the bisect's answer)
# Needs bash, jq and gh.
set -euo pipefail

REPORT=${REPORT:-perf-results/report.json}
MISSING=${MISSING:-$(dirname "$REPORT")/missing-baselines.md}
skip_runtime=0
if [[ -n "${CONFIRM:-}" ]]; then
  if [[ -s "$CONFIRM" ]] && [[ "$(jq -r '.session_id // ""' "$CONFIRM" 2>/dev/null)" == "$(jq -r '.session_id // ""' "$REPORT" 2>/dev/null)" ]]; then
    REPORT=$CONFIRM
  else
    skip_runtime=1
    echo "::warning::regression-issues: no confirmation of $REPORT's session at $CONFIRM; its runtime regressions are unconfirmed and open no issue" >&2
  fi
fi
LABEL=${LABEL:-perf-regression}
RUN_URL=${RUN_URL:-}
: "${PERF_ENV:?set PERF_ENV to the tox environment of the run (pinned, latest, pre)}"

for tool in jq gh; do
  command -v "$tool" >/dev/null || { echo "::error::regression-issues: $tool is not installed on this runner" >&2; exit 1; }
done

if [[ ! -s "$REPORT" ]]; then
  # the run failed before the suite wrote its verdicts (install error, crash): nothing to file per verdict
  echo "::warning::regression-issues: no report at $REPORT; no issue opened (see the run log)" >&2
  exit 0
fi

gpu=$(jq -r '.gpu // "unknown-gpu"' "$REPORT")
session=$(jq -r '.session_id // ""' "$REPORT")
versions=$(jq -r '(.versions // {}) | to_entries | map("| \(.key) | `\(.value)` |") | .[]' "$REPORT")

# one line per title: {"title": ..., "verdicts": [...]}; titles must not carry quotes (they go into a search)
groups=$(jq -c --arg gpu "$gpu" --arg env "$PERF_ENV" --arg skip "$skip_runtime" --arg changes "${CHANGES:-}" '
  (.rows // [] | map({key: "\(.workload)-\(.decomposition)", value: .where}) | from_entries) as $where
  | [.verdicts // [] | .[]
   | select(.outcome == "regression" or .outcome == "fail" or ($changes == "true" and .kind == "work" and .outcome == "changed"))
   | select($skip == "0" or .kind != "runtime" or .outcome != "regression")
   | . + {title: (if .outcome == "changed" then "perf change: \($gpu) \($env) work \(.case | sub("-[0-9]+x[0-9]+$"; ""))"
                  else "perf regression: \($gpu) \($env) \(.kind) \(.case)" end | gsub("[\"\\\\]"; "")),
          where: (if .kind != "runtime" then .where
                  elif $where[.case] then "where the step time moved against the baseline (medians): \($where[.case])" else null end)}]
  | group_by(.title) | .[] | {title: .[0].title, verdicts: .}' "$REPORT")

if [[ -z "$groups" ]]; then
  echo "regression-issues: no regression or failed verdict in $REPORT; no issue opened"
  exit 0
fi

# the label must exist before `gh issue create --label` can use it
gh label create "$LABEL" --color B60205 --description "Performance regression found by the nightly run" --force >/dev/null || true

body_for() {  # $1: one group as JSON
  local group=$1
  # a verdict with the cost model's prediction (an interleaved one, or a confirmation's): predicted beside measured, with the
  # model that gave it where the prediction names one (critical path, two-path)
  jq -r 'def pct: (. * 10 | round) as $t | (if $t > 0 then "+" elif $t < 0 then "-" else "" end)
                  + (($t | fabs) / 10 | floor | tostring) + "." + (($t | fabs) % 10 | tostring) + "%";
    .verdicts[] | "- **\(.kind) \(.case)**: \(.outcome): \(.message)"
    + (if .where then "\n  - \(.where)" else "" end)
    + ((.prediction // .interleaved.prediction // {}) as $p | if ($p.delta_pct | type) != "number" then ""
       elif ($p.measured_pct | type) == "number" then "\n  - cost model\($p.model // "" | if . == "" then "" else " (\(.))" end): predicted \($p.delta_pct | pct), measured \($p.measured_pct | pct)"
         + " (intervals [\($p.lo | pct), \($p.hi | pct)] and [\($p.measured_lo | pct), \($p.measured_hi | pct)])"
       else "\n  - cost model\($p.model // "" | if . == "" then "" else " (\(.))" end): predicted \($p.delta_pct | pct) [\($p.lo | pct), \($p.hi | pct)]" end)
    + (if .repro then "\n  - reproduce on a runner: `\(.repro)`" else "" end)' <<<"$group"
  echo
  echo "- GPU: \`$gpu\`, tox environment: \`$PERF_ENV\`${session:+, session \`$session\`}"
  if [[ -n "$RUN_URL" ]]; then echo "- Run: $RUN_URL"; fi
  if [[ -s "$MISSING" ]]; then
    echo
    grep -E '^- ' "$MISSING" || true
  fi
  if [[ -n "${BISECT:-}" && -s "$BISECT" ]]; then
    echo
    echo "### Bisect"
    echo
    sed -e 's/^# /#### /' "$BISECT"
  fi
  if [[ -n "$versions" ]]; then
    echo
    echo "| package | version |"
    echo "| --- | --- |"
    echo "$versions"
  fi
}

status=0
while IFS= read -r group; do
  title=$(jq -r '.title' <<<"$group")
  body=$(body_for "$group")
  # the search is word-based: keep only the issue whose title is exactly ours
  number=$(gh issue list --label "$LABEL" --state open --search "in:title \"$title\"" --json number,title --limit 50 \
           | jq -r --arg t "$title" '[.[] | select(.title == $t)] | sort_by(.number) | first | .number // empty')
  if [[ -n "$number" ]]; then
    echo "regression-issues: commenting on #$number: $title"
    gh issue comment "$number" --body "Seen again.

$body" || status=1
  else
    echo "regression-issues: opening: $title"
    gh issue create --title "$title" --label "$LABEL" --body "$body" || status=1
  fi
done <<<"$groups"
exit "$status"
