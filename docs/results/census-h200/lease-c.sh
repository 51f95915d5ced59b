# Third lease: one census of each decomposition with the image's libraries (A), then the release pair timed the
# usual way beside it: python -m harness ab, transformers 5.17.0 (A) vs 5.24.0 (B), 4x1, 40 steps, 3 runs per side.
# usage (device, carry .whl and .whl-tf): bash docs/results/census-h200/lease-c.sh
A_REPEATS=1 B_REPEATS=0 NAME=lease-c timeout 200 bash docs/results/census-h200/lease.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-b .whl-tf/*.whl 2>&1 | tail -2
printf '#!/bin/sh\nexport PYTHONPATH=/tmp/site-b:$PYTHONPATH\nexec python3 "$@"\n' > /tmp/python-b && chmod +x /tmp/python-b
export PYTHONPATH=/tmp/site:$PWD
timeout 330 python3 -m harness ab --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --steps 40 --repeats 3 --python-b /tmp/python-b \
  --results-dir $OUT/lease-c/ab 2>&1 | tee $OUT/lease-c/ab.log | tail -25
