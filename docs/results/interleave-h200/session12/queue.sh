# Issue 13 on one H200, session 12: the injected comparisons still missing, one lease, run in the background (setsid), polled.
#  1-3. host5-4x1-{1,2,3}: 4x1 at k = 3, 6 pre-started launches, --warmup-steps 2, 5 GPU-minutes each, side B slowed by host
#       work sized for +5% by its own clock (--inject-work-b-percent 5, the committed InjectWork kind "host").
#  4.   host5-1x4: 1x4 at k = 1, 10 pre-started launches, 8 GPU-minutes, the same +5%.
# Every comparison: both workers on CPU 2 (the next launch's imports on the others), threshold +2%, alpha 0.05 (the defaults).
# First, perf_probe.py: can a worker count its own host instructions here?
# usage (device, nvidia-h200, repo root, carry .whl): setsid nohup bash docs/results/interleave-h200/session12/queue.sh > /tmp/s12.out 2>&1 &
# then poll with: bash docs/results/interleave-h200/session12/poll.sh SECONDS
R=/tmp/s12; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
python3 docs/results/interleave-h200/session12/perf_probe.py > $R/perf_probe.txt 2>&1
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
git rev-parse HEAD > $R/commit.txt 2>/dev/null; git status --short > $R/git-status.txt 2>/dev/null
run() {  # NAME DEC K LAUNCHES MINUTES SEED [extra...]
  local n=$1 dec=$2 k=$3 l=$4 m=$5 s=$6; shift 6
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
  date -u +%FT%TZ > $R/$n.start
  timeout $(( ${m%.*} * 60 + 60 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
    --block-steps $k --warmup-steps 2 --pairs 400 --launches $l --budget-minutes $m --cpus 2 --prestart --seed $s \
    --threshold 0.02 "$@" --results-dir $R/$n > $R/$n.log 2>&1
  echo "$n rc=$?" >> $R/rc.txt
  rm -f $R/$n/work/*.request.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
}
run host5-4x1-1 4x1 3 6 5 1201 --inject-work-b-percent 5
run host5-4x1-2 4x1 3 6 5 1202 --inject-work-b-percent 5
run host5-4x1-3 4x1 3 6 5 1203 --inject-work-b-percent 5
run host5-1x4 1x4 1 10 8 1204 --inject-work-b-percent 5
echo done > $R/DONE
