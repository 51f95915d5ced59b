# Block length on the H200 (issue 13), on a 2-GPU lease: the two sweeps run at once, one per GPU, each pinned to its own
# two CPUs (both of its resident workers on them). GPU 0: 4x1, k = 1, 3, 10, 30, then the slowdown of --inject-work N
# on 4x1 at k = 3; GPU 1: 1x4, k = 1, 3, 10. A/A pairs of blocks on resident workers (docs/results/interleave-cpu/sweep.py).
# usage (device, nvidia-h200-x2, from the repository root, carry .whl): bash docs/results/interleave-h200/lease-sweep.sh
R=$OUT/sweep; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
S=docs/results/interleave-cpu/sweep.py; W="--workload qwen3-1.7b-lora --gpu h200"
CUDA_VISIBLE_DEVICES=0 timeout ${T:-520} python3 $S $R/gpu0 $W --cpus 2,3 --decs 4x1 --ks 1,3,10,30 --rounds ${ROUNDS:-6} \
  --work 1,2,4 --work-dec 4x1 --work-k 3 --seed 11 > $R/gpu0.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout ${T:-520} python3 $S $R/gpu1 $W --cpus 10,11 --decs 1x4 --ks 1,3,10 --rounds ${ROUNDS:-6} --seed 12 > $R/gpu1.log 2>&1 &
wait
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/nvidia-smi.txt
tail -12 $R/gpu0.log $R/gpu1.log
