# Session 12: the CI end-to-end interleave tests at the micro grain (test_e2e_*: +5% host work sized by its own clock, and
# A/A; 2x2, k = 5, --grain micro) on the quiet 2-core machine once, then beside one CPU hog twice; pytest's output
# (-s: the comparisons' own lines) per round.
# usage (repo root): bash docs/results/interleave-cpu/e2e-micro-s12/run.sh
D=docs/results/interleave-cpu/e2e-micro-s12
git rev-parse HEAD > $D/commit.txt; git status --short > $D/git-status.txt
.venv/bin/python -m pytest -q -s -p no:cacheprovider tests/test_interleave.py -k e2e > $D/quiet.log 2>&1; echo "quiet rc=$?" >> $D/rc.txt
python3 -c "while True: pass" & HOG=$!
for R in 1 2; do
  .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/test_interleave.py -k e2e > $D/hog$R.log 2>&1; echo "hog$R rc=$?" >> $D/rc.txt
done
kill $HOG
echo done > $D/DONE
