#!/bin/bash
# usage: ci-run.sh N [hog]  -- fresh clone of /work/main at its HEAD, CI=true bash .ci/run, log /tmp/ci-N.log, a line in /tmp/ci-results.txt
N=$1; HOG=$2
D=/tmp/ci-check-$N; rm -rf $D; git clone -q /work/main $D; cd $D
C=$(git rev-parse --short HEAD)
if [ -n "$HOG" ]; then python3 -c "while True: pass" & HP=$!; fi
T0=$(date +%s); S=$(date -u +%H:%M)
CI=true bash .ci/run > /tmp/ci-$N.log 2>&1; RC=$?
T1=$(date +%s)
[ -n "$HOG" ] && kill $HP
echo "run $N commit $C start $S rc $RC wall $((T1-T0)) s hog ${HOG:-no} :: $(grep -E '^=+ .*(passed|failed)' /tmp/ci-$N.log | tail -1)" >> /tmp/ci-results.txt
