#!/usr/bin/env bash
# Usage: verdicts2.sh PYTHON CODE_ROOT DATA_ROOT: verdicts of compare, report and recover on the committed H200 results,
# run from an empty folder so that CODE_ROOT's harness is the one imported; paths printed relative to DATA_ROOT.
PY=$1; CODE=$2; DATA=$3
export PYTHONPATH=$CODE
W=$(mktemp -d); cd $W
norm() { sed -e "s#$W##g" -e "s#$DATA/##g" -e "s#$CODE/##g"; }
for d in $(cd $DATA && find docs/results -name runs.jsonl -path '*h200*' | sort); do
  dir=$DATA/$(dirname $d)
  echo "== compare baseline vs $(dirname $d)"
  $PY -m harness compare $DATA/baselines/h200/qwen3-1.7b-lora.json $dir --allow-gpu-mismatch 2>&1 | grep -iE "regression|pass|inconclusive|error|verdict" | norm | head -20
  echo "== report $(dirname $d)"
  $PY -m harness report $dir --baselines-dir $DATA/baselines --out $W/rep --allow-gpu-mismatch > /dev/null 2>&1; echo "rc $?"
  [ -f $W/rep/report.json ] && $PY -c "import json,sys; r=json.load(open('$W/rep/report.json')); print(json.dumps(r.get('verdicts', r.get('cases', r)), sort_keys=True, default=str)[:3000])" | norm
  rm -rf $W/rep
done
for b in $(cd $DATA && find docs/results -name blocks.jsonl -path '*h200*' | sort); do
  dir=$DATA/$(dirname $b); rm -rf $W/x; cp -r $dir $W/x; rm -f $W/x/report.json $W/x/report.md
  echo "== recover $(dirname $b)"
  $PY -m harness recover $W/x 2>&1 | grep -iE "verdict|regression|pass|inconclusive|x[0-9]" | norm | head -5
  [ -f $W/x/report.json ] && $PY -c "import json; r=json.load(open('$W/x/report.json')); v=r.get('verdict') or {}; print('verdict', v.get('outcome'), v.get('ratio'), v.get('lo'), v.get('hi'))"
done
rm -rf $W
