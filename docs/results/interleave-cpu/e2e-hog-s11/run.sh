# Session 11: the CI end-to-end interleave tests (injected host work sized for 5% by its own clock, and A/A) beside one
# CPU hog on the 2-core machine, twice; pytest's output (-s: the comparisons' own lines) per round.
# usage (repo root, venv active): bash docs/results/interleave-cpu/e2e-hog-s11/run.sh
D=docs/results/interleave-cpu/e2e-hog-s11
python3 -c "while True: pass" & HOG=$!
for R in 1 2; do
  pytest -q -s -p no:cacheprovider tests/test_interleave.py -k e2e > $D/round$R.log 2>&1; echo "round $R rc=$?"
done
kill $HOG
