# Issue 13 on one H200, session 10: comparisons of qwen3-1.7b-lora 4x1 (k = 3) with side B slowed by injected work sized
# on this machine for +5% (--inject-work-b-percent 5), the launch as the unit: 6 launches, pre-started (--prestart: the
# next launch's workers import on the CPUs outside --cpus), both workers pinned to CPU 2, threshold +2%, alpha 0.05
# (the baseline's), each within MINUTES, start-up included. One comparison per call (I = its index, seed 1000 + I).
# usage (device, nvidia-h200, from the repo root, carry .whl): I=1 MINUTES=5.5 bash docs/results/interleave-h200/lease-injected.sh
# (session 10's runs; for 1x4 at its chosen k: DEC=1x4 K=1, and e.g. WARMUP=2 LAUNCHES=10 MINUTES=10; PCT=0 makes it an A/A)
R=$OUT/injected; mkdir -p $R; N=${NAME:-work${PCT:-5}-$I}  # session 10: work5-1..3
cat /proc/sys/kernel/random/boot_id > $R/boot_id-$I; lscpu > $R/lscpu.txt
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$I.txt
timeout $(( ${MINUTES%.*} * 60 + 75 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition ${DEC:-4x1} \
  --block-steps ${K:-3} ${WARMUP:+--warmup-steps $WARMUP} --pairs ${PAIRS:-120} --launches ${LAUNCHES:-6} --budget-minutes $MINUTES --cpus 2 --prestart --seed $((1000 + I)) \
  $([ "${PCT:-5}" != 0 ] && echo --inject-work-b-percent ${PCT:-5}) --threshold 0.02 --results-dir $R/$N > $R/$N.log 2>&1
echo "$N rc=$?" >> $R/rc-$I.txt
rm -f $R/*/work/*.request.json
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $R/nvidia-smi-$I.txt
tar czf $OUT/injected-$I.tgz -C $OUT injected
cat $R/rc-$I.txt; grep -iE "inject-work sized|ready in|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|launch variance|time:|budget|interval|minimum)" $R/$N.log
