# Issue 13 on one H200, session 11: the comparisons still missing, one lease, run in the background (setsid) and polled.
#  1. aa-1x4:    1x4 A/A at its chosen k = 1, --warmup-steps 2, 10 pre-started launches, 9 GPU-minutes: the MDS of 1x4 measured.
#  2. work5-1x4: the same with work injected on B for +5% (--inject-work-b-percent 5; side A now carries the same hook at
#                0 casts, so that the casts are all that differs).
#  3. work5-4x1: 4x1 at k = 3, 6 pre-started launches, --warmup-steps 2, 5 GPU-minutes, +5% injected the same way.
# Every comparison: both workers on CPU 2 (the next launch's imports on the others), threshold +2%, alpha 0.05.
# usage (device, nvidia-h200, repo root, carry .whl): setsid nohup bash docs/results/interleave-h200/session11/queue.sh > /tmp/s11.out 2>&1 &
# then poll with: bash docs/results/interleave-h200/session11/poll.sh SECONDS
R=/tmp/s11; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
git rev-parse HEAD > $R/commit.txt 2>/dev/null; git status --short > $R/git-status.txt 2>/dev/null
run() {  # NAME DEC K LAUNCHES MINUTES SEED [extra...]
  local n=$1 dec=$2 k=$3 l=$4 m=$5 s=$6; shift 6
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
  date -u +%FT%TZ > $R/$n.start
  timeout $(( ${m%.*} * 60 + 90 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
    --block-steps $k --warmup-steps 2 --pairs 400 --launches $l --budget-minutes $m --cpus 2 --prestart --seed $s \
    --threshold 0.02 "$@" --results-dir $R/$n > $R/$n.log 2>&1
  echo "$n rc=$?" >> $R/rc.txt
  rm -f $R/$n/work/*.request.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
}
run aa-1x4 1x4 1 10 9 1111
run work5-1x4 1x4 1 10 9 1112 --inject-work-b-percent 5
run work5-4x1 4x1 3 6 5 1113 --inject-work-b-percent 5
echo done > $R/DONE
