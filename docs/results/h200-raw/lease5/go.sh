R=/root/l5
python3 -m pytest perftests --gpu=h200 --repeats 1 -k "test_run and not runtime" --results-dir $R/round -p no:cacheprovider -rA > $R/round.log 2>&1
python3 -m pytest perftests --gpu=h200 -k "qwen3 and 4x1" --inject-slowdown 0.5 --repeats 3 --results-dir $R/inj -p no:cacheprovider -rA > $R/inj.log 2>&1
echo $? > $R/inj.rc; touch $R/done
