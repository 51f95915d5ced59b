# Issue 13 on one H200, session 13: the micro grain (--grain micro) on 1x4, the runs session 12 left to make. One lease, run
# in the background (setsid), polled by poll.sh.
#  1, 3, 4. host5-micro-1x4-{1,2,3}: 1x4 at the micro grain, k = 1, 6 pre-started launches, 4 GPU-minutes each, side B
#           slowed by host work sized for +5% by its own clock (--inject-work-b-percent 5).
#  2.       aa10-micro-1x4: a 10-GPU-minute A/A at the micro grain, 8 pre-started launches (the L that session 12's
#           simulation found best at tau 0): the verdict's own minimum detectable slowdown, measured.
# Every comparison: --warmup-steps 2, both workers on CPU 2 (the next launch's imports on the others), threshold +2%,
# alpha 0.05 (the defaults).
# usage (device, nvidia-h200, repo root, carry .whl): setsid nohup bash docs/results/interleave-h200/session13/queue.sh > /tmp/s13.out 2>&1 &
# then poll with: bash docs/results/interleave-h200/session13/poll.sh SECONDS
R=/tmp/s13; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
run() {  # NAME DEC K LAUNCHES MINUTES SEED [extra...]
  local n=$1 dec=$2 k=$3 l=$4 m=$5 s=$6; shift 6
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
  date -u +%FT%TZ > $R/$n.start
  timeout $(( ${m%.*} * 60 + 60 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
    --grain micro --block-steps $k --warmup-steps 2 --pairs 400 --launches $l --budget-minutes $m --cpus 2 --prestart --seed $s \
    --threshold 0.02 "$@" --results-dir $R/$n > $R/$n.log 2>&1
  echo "$n rc=$?" >> $R/rc.txt
  rm -f $R/$n/work/*.request.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
}
run host5-micro-1x4-1 1x4 1 6 4 1301 --inject-work-b-percent 5
run aa10-micro-1x4 1x4 1 8 10 1302
run host5-micro-1x4-2 1x4 1 6 4 1303 --inject-work-b-percent 5
run host5-micro-1x4-3 1x4 1 6 4 1304 --inject-work-b-percent 5
echo done > $R/DONE
