set -x
R=$OUT/r; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
python3 --version
timeout 400 python3 -m harness census --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --repeats 1 --results-dir $R/smoke 2>&1 | tail -20
python3 - <<'PY'
import json
r=[json.loads(l) for l in open("/tmp/x" if False else __import__("os").environ["OUT"]+"/r/smoke/runs.jsonl")][-1]
c=r.get("census") or {}
print(r["status"], r.get("error"), r.get("wall_s"))
print({k: c.get(k) for k in ("fits","ops","kernels","launch_calls","kernel_ms","syncs","alloc","python_calls","python_method","attention_backend","attention_names","overhead","steps","window")})
print(sorted(c.get("kernels_by_name",{}).items(), key=lambda kv:-kv[1])[:12])
print(r.get("step_times_ms"))
PY
cd $OUT && tar czf r.tgz r && rm -rf r
