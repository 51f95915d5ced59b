#!/usr/bin/env bash
# The bisect's memory search on a GPU: trl GOOD -> BAD (default 1.12.0 -> 1.15.0) at 4x1 of qwen3-1.7b-lora, census
# runs only, each candidate's trl installed from WHEELS (default .bwheels: `pip download --no-deps trl==V` for each
# release between) into a venv that sees this interpreter's packages. In the background from a copy of the tree (e.g.
# /tmp/snap, with .whl holding trl's dependencies: datasets, dill, multiprocess):
#   cd /tmp/snap && setsid nohup bash docs/evidence/does-the-bisect-name-a-memory-change/gpu.sh > /tmp/mb.log 2>&1 &
# and poll with ../does-the-pr-check-work-on-a-gpu/poll.sh (R=/tmp/run3). For a dry run of the plumbing on a CPU:
#   GPU=cpu WORKLOAD=tiny-qwen3 GOOD=1.13.0 BAD=1.14.0 R=/tmp/mb-dry bash THIS
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
R=${R:-/tmp/run3}
GPU=${GPU:-h200}
mkdir -p "$R"
cat /proc/sys/kernel/random/boot_id > "$R/boot_id"
export PYTHONUNBUFFERED=1
# trl's dependencies without trl: PYTHONPATH comes before a venv's own packages, so a trl on it would hide each
# candidate's
SITE=${SITE:-/tmp/site-notrl}
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" $(ls .whl/*.whl | grep -v '/trl-')
export PYTHONPATH=$SITE
if [ "$GPU" != cpu ]; then
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv > "$R/nvidia-smi.txt"
  grep -q H200 "$R/nvidia-smi.txt" || export HARNESS_MACHINE=h200  # filed as the runner's machine class
fi
date -u +%FT%TZ > "$R/bisect.start"
python3 -m harness bisect --gpu "$GPU" --workload "${WORKLOAD:-qwen3-1.7b-lora}" --decomposition 4x1 \
  --good "trl==${GOOD:-1.12.0}" --bad "trl==${BAD:-1.15.0}" --wheels "${WHEELS:-.bwheels}" --census-only \
  --total-budget-minutes "${BUDGET:-8}" --env-cache /tmp/bisect-envs --results-dir "$R/bisect" > "$R/bisect.log" 2>&1
echo "bisect rc=$?" >> "$R/rc.txt"
date -u +%FT%TZ > "$R/bisect.end"
echo done > "$R/DONE"
