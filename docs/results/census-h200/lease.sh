# One machine lease of the H200 census: census runs of qwen3-1.7b-lora with the image's libraries (A, transformers 5.17.0)
# and, when B_REPEATS > 0, with transformers 5.24.0 carried in .whl-tf (B), interleaved by the harness's run loop per side.
# usage (device, from the repo root, carry .whl and .whl-tf): A_REPEATS=2 B_REPEATS=0 NAME=lease-a bash docs/results/census-h200/lease.sh
set -x
R=$OUT/$NAME; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
if [ "${B_REPEATS:-0}" -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-b .whl-tf/*.whl 2>&1 | tail -2
  printf '#!/bin/sh\nexport PYTHONPATH=/tmp/site-b:$PYTHONPATH\nexec python3 "$@"\n' > /tmp/python-b && chmod +x /tmp/python-b
  /tmp/python-b -c "import transformers, huggingface_hub, tokenizers; print('B:', transformers.__version__, huggingface_hub.__version__, tokenizers.__version__)"
fi
for i in $(seq 1 ${A_REPEATS:-1}); do
  python3 -m harness census --gpu h200 --workload qwen3-1.7b-lora --repeats 1 --results-dir $R/a 2>&1 | grep -v "^\[" | tee -a $R/census.log
  if [ "${B_REPEATS:-0}" -ge "$i" ]; then
    python3 -m harness census --gpu h200 --workload qwen3-1.7b-lora --repeats 1 --python /tmp/python-b --results-dir $R/b 2>&1 | grep -v "^\[" | tee -a $R/census.log
  fi
done
[ "${B_REPEATS:-0}" -gt 0 ] && python3 -m harness compare $R/a $R/b > $R/compare.log 2>&1; tail -30 $R/compare.log 2>/dev/null
true  # the caller tars $OUT/$NAME, also after a timeout
