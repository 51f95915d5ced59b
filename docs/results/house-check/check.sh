# usage: bash docs/results/house-check/check.sh  (from the repository root; exits 1 if a verdict line changed)
set -u
d=docs/results/house-check; tmp=$(mktemp -d); rc=0
python -m harness compare baselines/h200/qwen3-1.7b-lora.json docs/results/h200-raw/aa-s3 > $tmp/compare.txt 2>&1
python -m harness report docs/results/h200-raw/100steps docs/results/h200-raw/100steps-s2 docs/results/h200-raw/aa-s3 docs/results/h200-raw/lease5/round --out $tmp/r1 > $tmp/report1.txt 2>&1
python -m harness report docs/results/h200-raw/lease5/inj --out $tmp/r2 > $tmp/report2.txt 2>&1
python -m harness report docs/results/h200-raw/aa-s3 --baseline docs/results/h200-raw/100steps docs/results/h200-raw/100steps-s2 --out $tmp/r3 > $tmp/report3.txt 2>&1
diff <(grep -v "^wrote " $d/compare-before-6ef5aba.txt) <(grep -v "^wrote " $tmp/compare.txt) || rc=1
for i in 1 2 3; do diff <(grep -v "^wrote " $d/report$i-before-6ef5aba.txt) <(grep -v "^wrote " $tmp/report$i.txt) || rc=1; done
[ $rc = 0 ] && echo "verdicts unchanged"; rm -rf $tmp; exit $rc
