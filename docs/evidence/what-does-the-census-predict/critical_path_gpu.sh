#!/usr/bin/env bash
# The interleaved measurements that calibrate the critical path (section 5 of this page), on one GPU lease, in the
# background from a copy of the tree (e.g. /tmp/snap; trl and datasets unpacked in /tmp/site from .whl):
#   cd /tmp/snap && setsid nohup bash docs/evidence/what-does-the-census-predict/critical_path_gpu.sh \
#     > /tmp/cp.log 2>&1 < /dev/null &
# Each later device call runs ../does-the-pr-check-work-on-a-gpu/poll.sh SECONDS, which packs /tmp/run into $OUT.
# PART=injections (the default; about 18 device-minutes): toy_cuda.py (TOY=0 leaves it out), then, for each split in
#   DECS (default 4x1) and each case in CASES (default "before after host"): device work just before each CUDA
#   read-back, the same just after it, host-only work; a census of each side and their interleaved comparison.
#   DECS=1x4 TOY=0: the same at 1x4 (about 16).
# PART=gpu-bound (about 12): the injections "before" and "host" on a GPU-bound step, 16x1 of qwen3-1.7b-lora-mb16
#   (workloads/ beside this script: the reference workload at effective batch 16), without the toy; GB_DECS and
#   GB_CASES (not DECS and CASES, which the other parts take) change its splits and cases.
# PART=pair (about 16): transformers 5.17.0 -> 5.25.0 at 4x1 and 1x4 (DECS=4x1 for one, about 7), each side a
#   virtualenv of the image's interpreter laid out alike (a .pth to the packages), B with transformers 5.25.0 from
#   .twheels in front, and the packages it needs at newer versions than the image's from .twheels/deps-5.25.0:
#   huggingface_hub 2.4.0, httpx2, httpcore2, truststore, hf-xet and click (`pip download --no-deps` of each; hf-xet
#   for cp312 manylinux x86_64).
# PART may name several, run one after the other with the settings given to all; PAIR_DECS, where set, is the pair's
#   splits alone: PART="gpu-bound pair" PAIR_DECS=1x4 (about 21 minutes) fits one session. Everything left at 1x4
#   and one GPU-bound case, with 3-minute comparisons (about 25 minutes):
#   BUDGET=3 PART="gpu-bound injections pair" DECS=1x4 TOY=0 GB_CASES=before
#   The pair at 1x4, the host work at 1x4 again (its censuses carry the aten yardstick) and on the GPU-bound step
#   (section 11; about 20 minutes):
#   BUDGET=3 PART="pair injections gpu-bound" PAIR_DECS=1x4 DECS=1x4 CASES=host TOY=0 GB_CASES=host
# For a dry run of the plumbing on a CPU: GPU=cpu WORKLOAD=tiny-qwen3 BUDGET=0.5 R=/tmp/cp-dry bash THIS (and, for the
# pair, TF_B=5.19.0 or another release whose stripped wheel is in .twheels).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
R=${R:-/tmp/run}
GPU=${GPU:-h200}
BUDGET=${BUDGET:-4}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-/tmp/site}
cat /proc/sys/kernel/random/boot_id > "$R/boot_id"
if [ "$GPU" != cpu ]; then
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv > "$R/nvidia-smi.txt"
  grep -q H200 "$R/nvidia-smi.txt" || export HARNESS_MACHINE=h200  # filed as the runner's machine class
fi
case_args() { echo --gpu "$GPU" --workloads-dir "$WORKLOADS_DIR" --workload "$WORKLOAD" --decomposition "$1"; }

# NAME DEC KIND AMOUNT: A's census, B's with the injection, then A against B interleaved, into $R/NAME
injected() {
  local d=$R/$1
  mkdir -p "$d"
  python3 -m harness census $(case_args "$2") --results-dir "$d/census-a" > "$d.log" 2>&1
  HARNESS_INJECT_KIND=$3 python3 -m harness census $(case_args "$2") --inject-work "$4" \
    --results-dir "$d/census-b" >> "$d.log" 2>&1
  HARNESS_INJECT_KIND=$3 python3 -m harness interleave $(case_args "$2") --inject-work-b "$4" \
    --budget-minutes "$BUDGET" --results-dir "$d" >> "$d.log" 2>&1
  echo "$1 rc=$?" >> "$R/rc.txt"
}

# NAME DEC PY_A PY_B: each side's census, then A against B interleaved
pair() {
  local d=$R/$1
  mkdir -p "$d"
  python3 -m harness census $(case_args "$2") --python "$3" --results-dir "$d/census-a" > "$d.log" 2>&1
  python3 -m harness census $(case_args "$2") --python "$4" --results-dir "$d/census-b" >> "$d.log" 2>&1
  python3 -m harness interleave $(case_args "$2") --python-a "$3" --python-b "$4" \
    --budget-minutes "$BUDGET" --results-dir "$d" >> "$d.log" 2>&1
  echo "$1 rc=$?" >> "$R/rc.txt"
}

# a virtualenv of this interpreter that reaches its packages through a .pth, FRONT (a folder) before them
venv_with() {
  python3 -m venv --system-site-packages --without-pip "$1"
  local site
  site=$("$1/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  printf '%s%s\n%s\n' "${2:+$2$'\n'}" "$PYTHONPATH" \
    "$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")" > "$site/packages.pth"
  "$1/bin/python" -c "import transformers, sys; print(sys.prefix, transformers.__version__)" >> "$R/versions.txt"
}

# CASE: its injection's kind and amount (10,000 us of spin per read-back; 10 units of host work per LoRA layer)
declare -A KIND=([before]=device_before_sync [after]=device_after_sync [host]=host)
declare -A AMOUNT=([before]=10000 [after]=10000 [host]=10)

# one part (the header), in a subshell of its own so that its settings stay in it
run_part() {
  if [ "$1" = gpu-bound ]; then
    # its own splits and cases (GB_DECS, GB_CASES), whatever DECS and CASES the other parts are given
    WORKLOADS_DIR=${WORKLOADS_DIR:-$HERE/workloads} WORKLOAD=${WORKLOAD:-qwen3-1.7b-lora-mb16}
    DECS=${GB_DECS:-16x1} CASES=${GB_CASES:-before host} TOY=0
  fi
  WORKLOADS_DIR=${WORKLOADS_DIR:-workloads} WORKLOAD=${WORKLOAD:-qwen3-1.7b-lora}
  if [ "$1" != pair ]; then
    [ "$GPU" = cpu ] || [ "${TOY:-1}" = 0 ] || timeout 120 python3 "$HERE/toy_cuda.py" "$R/toy_cuda.json" \
      > "$R/toy_cuda.log" 2>&1
    for dec in ${DECS:-4x1}; do
      for c in ${CASES:-before after host}; do injected "$c-$dec" "$dec" "${KIND[$c]}" "${AMOUNT[$c]}"; done
    done
    return
  fi
  TF_B=${TF_B:-5.25.0}
  # a release that needs newer packages than the image's carries them in .twheels/deps-RELEASE
  python3 -m pip install -q --no-index --no-deps --no-compile --target "/tmp/tf-$TF_B" \
    .twheels/transformers-"$TF_B"-*.whl $(ls .twheels/deps-"$TF_B"/*.whl 2>/dev/null)
  venv_with /tmp/venv-a ""
  venv_with /tmp/venv-b "/tmp/tf-$TF_B"
  for dec in ${PAIR_DECS:-${DECS:-4x1 1x4}}; do pair "pair-$dec" "$dec" /tmp/venv-a/bin/python /tmp/venv-b/bin/python; done
}

for part in ${PART:-injections}; do (run_part "$part"); done
echo done > "$R/DONE"
