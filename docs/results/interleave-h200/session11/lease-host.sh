# Issue 13 on one H200, session 11's last device minutes: one 4x1 comparison (k = 3) with side B slowed by host work sized
# for +5% by its own clock (--inject-work-b-percent 5, InjectWork kind "host"), 4 pre-started launches, --warmup-steps 2,
# 2.5 GPU-minutes, both workers on CPU 2. Too short for a verdict at this host's noise; it checks the nominal share
# against the measured slowdown.
# usage (device, nvidia-h200, repo root, carry .whl): bash docs/results/interleave-h200/session11/lease-host.sh
R=$OUT/host; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 200 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --block-steps 3 --warmup-steps 2 \
  --pairs 200 --launches 4 --budget-minutes 2.5 --cpus 2 --prestart --seed 1121 --threshold 0.02 --inject-work-b-percent 5 \
  --results-dir $R/host5-4x1 > $R/host5-4x1.log 2>&1
echo "host5-4x1 rc=$?" >> $R/rc.txt
rm -f $R/*/work/*.request.json
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi.txt
tar czf $OUT/host.tgz -C $OUT host
cat $R/rc.txt; grep -iE "inject|ready in|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|interval|minimum)" $R/host5-4x1.log
