# Waits up to SECONDS for session 14's queue (queue.sh) to finish, then packs /tmp/s14 into $OUT/s14.tgz.
# usage (device): bash docs/results/interleave-h200/session14/poll.sh 560
end=$(( $(date +%s) + ${1:-560} ))
while [ ! -e /tmp/s14/DONE ] && [ $(date +%s) -lt $end ]; do sleep 5; done
tar czf $OUT/s14.tgz -C /tmp s14 2>/dev/null
cat /tmp/s14/rc.txt 2>/dev/null; ls /tmp/s14
for f in /tmp/s14/*.log; do echo "== $f"; grep -iE "inject-work sized|injected work|^(regression|pass|inconclusive|improvement|time:|budget|minimum|per-pair|plan)" $f | tail -9; done
