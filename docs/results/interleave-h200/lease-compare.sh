# Interleaved comparisons on the H200 (issue 13), on a 2-GPU lease: two queues of comparisons, one per GPU, at once, each
# pinned to its own two CPUs. Each comparison: python -m harness interleave, A against B on two resident workers, blocks of
# k steps (4x1: k = 3, 1x4: k = 1, from lease-sweep.sh), 2 launches, stopped by --budget-minutes (start-up included).
# A queue is a list of NAME:DECOMPOSITION:K:PAIRS:MINUTES:EXTRA (EXTRA: aa, work2 = --inject-work-b 2, tf = --python-b with
# transformers 5.24.0 from .whl-tf).
# usage (device, nvidia-h200-x2, from the repo root, carry .whl .whl-tf): Q0="..." Q1="..." NAME=b bash docs/results/interleave-h200/lease-compare.sh
R=$OUT/$NAME; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
if ls .whl-tf/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-b .whl-tf/*.whl 2>&1 | tail -1
  printf '#!/bin/sh\nexport PYTHONPATH=/tmp/site-b:$PYTHONPATH\nexec python3 "$@"\n' > /tmp/python-b && chmod +x /tmp/python-b
  /tmp/python-b -c "import transformers; print('B: transformers', transformers.__version__)" > $R/python-b.txt 2>&1
fi
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
queue() {  # GPU CPUS ITEMS...
  local gpu=$1 cpus=$2; shift 2
  for item in "$@"; do
    IFS=: read -r name dec k pairs minutes extra <<< "$item"
    case $extra in aa) x="";; work2) x="--inject-work-b 2";; tf) x="--python-b /tmp/python-b";; esac
    CUDA_VISIBLE_DEVICES=$gpu timeout $(( ${minutes%.*} * 60 + 90 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora \
      --decomposition $dec --block-steps $k --pairs $pairs --launches ${LAUNCHES:-2} --budget-minutes $minutes --cpus $cpus \
      --seed $RANDOM $x --results-dir $R/$name > $R/$name.log 2>&1
    echo "$name rc=$?" >> $R/rc.txt
  done
}
queue 0 ${CPUS0:-2,3} $Q0 &
queue 1 ${CPUS1:-10,11} $Q1 &
wait
for f in $R/*.log; do echo "== $f"; grep -E "^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|per-pair|minimum|launch variance|time:)" $f; done
