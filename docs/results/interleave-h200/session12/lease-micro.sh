# Issue 13 on one H200, session 12's last device minutes: a 1x4 A/A comparison at the micro grain (--grain micro: A and B
# take turns at single micro-batches, 4 per side and pair), k = 1, 3 pre-started launches, --warmup-steps 2, a 3-minute
# budget, both workers on CPU 2. Its pair sigma against the step grain's 13.3-13.5% on this session's and session 11's hosts.
# usage (device, nvidia-h200, repo root, carry .whl): bash docs/results/interleave-h200/session12/lease-micro.sh
R=/tmp/micro; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 200 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 1x4 --grain micro --block-steps 1 \
  --warmup-steps 2 --pairs 400 --launches 3 --budget-minutes 3 --cpus 2 --prestart --seed 1205 --threshold 0.02 \
  --results-dir $R/aa-micro-1x4 > $R/aa-micro-1x4.log 2>&1
echo "aa-micro-1x4 rc=$?" >> $R/rc.txt
rm -f $R/*/work/*.request.json
tar czf $OUT/micro.tgz -C /tmp micro
cat $R/rc.txt; grep -iE "ready in|micro grain|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|minimum|per-pair)" $R/aa-micro-1x4.log
