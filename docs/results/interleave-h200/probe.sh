# A first H200 probe of the block-interleaved comparison: A/A of qwen3-1.7b-lora 4x1 on two resident workers,
# blocks of k = 3 and then k = 10 steps, 2 launches each, each within --budget-minutes 3.8 (start-up included).
# usage (device, from the repository root, carry .whl): bash docs/results/interleave-h200/probe.sh
R=$OUT/probe; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
for k in 3 10; do
  timeout 250 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --block-steps $k --pairs 200 \
    --launches 2 --budget-minutes 3.8 --seed $k --results-dir $R/k$k > $R/k$k.log 2>&1
  echo "k=$k rc=$?"; tail -25 $R/k$k.log
done
