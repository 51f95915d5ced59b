# Issue 13 on one H200, session 15: two A/A comparisons of 10 GPU-minutes each, run exactly as the nightly's A/B step runs
# them (.github/workflows/nightly.yml: --block-steps auto --grain auto --warmup-steps 2 --pairs 400 --launches 16
# --budget-minutes 10 --cpus "$(( $(nproc) - 1 ))" --prestart), on the code that pre-starts the next launch at the ready:
#  1. aa10-1x4: 1x4 (auto: the micro grain, k = 1). Does a 10-minute run reach an MDS of 3% or less by its own verdict?
#  2. aa10-4x1: 4x1 (auto: the step grain, k = 3). The same question for 4x1.
# Threshold +2%, alpha 0.05 (the defaults); the verdict's MDS is at alpha 0.01, power 0.9.
# usage (device, nvidia-h200, repo root, carry .whl): setsid nohup bash docs/results/interleave-h200/session15/queue.sh > /tmp/s15.out 2>&1 &
# then poll with: bash docs/results/interleave-h200/session15/poll.sh SECONDS
R=/tmp/s15; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
run() {  # NAME DEC SEED [extra...]
  local n=$1 dec=$2 s=$3; shift 3
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
  date -u +%FT%TZ > $R/$n.start
  timeout 660 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
    --block-steps auto --grain auto --warmup-steps 2 --pairs 400 --launches 16 --budget-minutes 10 \
    --cpus "$(( $(nproc) - 1 ))" --prestart --seed $s "$@" --results-dir $R/$n > $R/$n.log 2>&1
  echo "$n rc=$?" >> $R/rc.txt
  rm -f $R/$n/work/*.request.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
  cat /proc/loadavg >> $R/loadavg.txt
}
run aa10-1x4 1x4 1501
run aa10-4x1 4x1 1502
echo done > $R/DONE
