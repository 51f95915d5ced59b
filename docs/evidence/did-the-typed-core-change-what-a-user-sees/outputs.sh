#!/usr/bin/env bash
# Usage: outputs.sh PYTHON CODE_ROOT DATA: what compare, report, recover, history and reanalyse print and write on every
# results dir of DATA (the committed evidence expanded: `python docs/evidence/raw.py expand FILE DATA/NAME` for each file),
# with CODE_ROOT's harness (run from an empty folder so that it is the one imported; its baselines are the judges').
# Paths are printed relative to the roots; a report.json is printed whole, sorted, without its format version.
PY=$1; CODE=$2; DATA=$3
export PYTHONPATH=$CODE
W=$(mktemp -d); cd "$W"
norm() { sed -e "s#$W##g" -e "s#$DATA/##g" -e "s#$CODE/##g" -e 's#/tmp/tmp[A-Za-z0-9_.]*##g'; }
show() { [ -f "$1" ] && $PY -c "import json,sys; r=json.load(open(sys.argv[1])); r.pop('format', None); print(json.dumps(r, sort_keys=True, default=str))" "$1" | norm; }
runs=$(cd "$DATA" && find . -name runs.jsonl | sort)
for d in $runs; do
  dir=$DATA/$(dirname "$d")
  echo "== compare $(dirname "$d")"
  $PY -m harness compare "$CODE/baselines/h200/qwen3-1.7b-lora.json" "$dir" --allow-gpu-mismatch 2>&1 | norm; echo "rc ${PIPESTATUS[0]}"
  echo "== report $(dirname "$d")"
  $PY -m harness report "$dir" --baselines-dir "$CODE/baselines" --out "$W/rep" --allow-gpu-mismatch 2>&1 | grep -v "^wrote " | norm
  show "$W/rep/report.json"; rm -rf "$W/rep"
done
echo "== history of every runs dir"
# shellcheck disable=SC2046
$PY -m harness history $(for d in $runs; do echo "$DATA/$(dirname "$d")"; done) --out "$W/hist" 2>&1 | grep -v "^wrote " | norm
[ -f "$W/hist/history.json" ] && show "$W/hist/history.json"; rm -rf "$W/hist"
for p in $(cd "$DATA" && find . -name progress.json | sort); do
  dir=$DATA/$(dirname "$p"); rm -rf "$W/x"; cp -r "$dir" "$W/x"; rm -f "$W/x"/report*.json "$W/x"/report*.md
  echo "== recover $(dirname "$p")"
  $PY -m harness recover "$W/x" 2>&1 | norm; show "$W/x/report.json"
done
echo "== reanalyse every stored comparison"
$PY - "$DATA" <<'PYEOF' | norm
import json, pathlib, sys
try:
    from harness.sidebyside.finish import reanalyse
except ImportError:  # the code before the typed core kept it in the interleave command's module
    from harness.commands.interleave import reanalyse
root = pathlib.Path(sys.argv[1])
for b in sorted(root.glob("**/blocks.jsonl")):
    if not (b.parent / "report.json").exists():
        continue
    try:
        r = reanalyse(b.parent)
        print(b.parent.relative_to(root), json.dumps(r, sort_keys=True, default=str))
    except Exception as e:
        print(b.parent.relative_to(root), "ERROR", type(e).__name__, str(e)[:200])
PYEOF
rm -rf "$W"
