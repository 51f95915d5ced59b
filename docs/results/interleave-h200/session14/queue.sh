# Issue 13 on one H200, session 14: the two 10-GPU-minute comparisons that session 13's plan called for. One lease, run in
# the background (setsid), polled by poll.sh.
#  1. aa10-micro-1x4-L20: a 1x4 A/A at the micro grain (k = 1), 20 pre-started launches: the split session 13's plan line
#     proposed for 10 minutes (21 x 5; 18 x 7 drawn best). Its own verdict's minimum detectable slowdown, measured.
#  2. host5-4x1-10: 4x1 at the step grain (k = 3), 16 pre-started launches (the nightly's L), 10 GPU-minutes, side B slowed
#     by host work sized for +5% by its own clock: flagged within 10 minutes, and its own verdict's MDS.
# Every comparison: --warmup-steps 2, both workers on CPU 2 (the next launch's imports on the others), threshold +2%,
# alpha 0.05 (the defaults).
# usage (device, nvidia-h200, repo root, carry .whl): setsid nohup bash docs/results/interleave-h200/session14/queue.sh > /tmp/s14.out 2>&1 &
# then poll with: bash docs/results/interleave-h200/session14/poll.sh SECONDS
R=/tmp/s14; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
run() {  # NAME DEC GRAIN K LAUNCHES MINUTES SEED [extra...]
  local n=$1 dec=$2 g=$3 k=$4 l=$5 m=$6 s=$7; shift 7
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
  date -u +%FT%TZ > $R/$n.start
  timeout $(( ${m%.*} * 60 + 60 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
    --grain $g --block-steps $k --warmup-steps 2 --pairs 400 --launches $l --budget-minutes $m --cpus 2 --prestart --seed $s \
    --threshold 0.02 "$@" --results-dir $R/$n > $R/$n.log 2>&1
  echo "$n rc=$?" >> $R/rc.txt
  rm -f $R/$n/work/*.request.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
}
run aa10-micro-1x4-L20 1x4 micro 1 20 10 1401
run host5-4x1-10 4x1 step 3 16 10 1402 --inject-work-b-percent 5
echo done > $R/DONE
