# CPU census of tiny-qwen3: 3 runs of each split with this venv (A: transformers 5.24.0), 3 with a second venv that
# differs only in transformers 5.17.0 (B, built as in docs/results/ab-cpu/README.md), then B against A.
# usage: bash docs/results/census-cpu/run.sh OUT_DIR /tmp/venv-b/bin/python
set -e
out=$1; pyb=$2
python -m harness census --gpu cpu --workload tiny-qwen3 --repeats 3 --results-dir "$out/a" 2>&1 | grep -v "^\[" | tee "$out/census-a.log"
python -m harness census --gpu cpu --workload tiny-qwen3 --repeats 3 --python "$pyb" --results-dir "$out/b" 2>&1 | grep -v "^\[" | tee "$out/census-b.log"
python -m harness compare "$out/a" "$out/b" > "$out/compare.log" 2>&1 || true
cat "$out/compare.log"
