#!/usr/bin/env bash
# e2e_node: a real JIT.  node --perf-basic-prof runs test/e2e/js/busy.js (a recursive
# fib and a JSON.stringify loop, jsonWork) for 10 s; a 3 s /profile must name
# both among the top 30 by cum (names from /tmp/perf-PID.map), leave under 5%
# of the samples with an unnamed leaf, and unwind at least 80% of them through
# the JIT frames down to node::Start or main.  Then node --perf-prof, which
# writes a jitdump instead of a map: the same functions named from it.
# (scripts/deps.sh node)
source test/e2e/lib.sh
# the programs' perf maps stay in /tmp after they die: remove them on any exit
MAPS=
trap 'pe_cleanup && rm -f $MAPS' EXIT
# A fresh machine has no node: install it here (the memlab test runs later).
command -v node >/dev/null || scripts/deps.sh node >/dev/null 2>&1 || echo "note: scripts/deps.sh node failed"
command -v node >/dev/null || { echo "skip: node not installed (scripts/deps.sh node)"; exit 77; }
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
JS=$(cd test/e2e/js && pwd)/busy.js
# node --perf-basic-prof also writes isolate-*-v8.log into its cwd: give it ours
mkdir -p $T/cwd
cd $T/cwd

pe_start node --perf-basic-prof "$JS" 10 || exit 1
MAPS="$MAPS /tmp/perf-$PE_PID.map"
sleep 1 # let V8 tier the hot functions up first
pe_get '/profile?duration=3' -o $T/node.pb.gz
check "the perf map exists (/tmp/perf-$PE_PID.map)" [ -s /tmp/perf-$PE_PID.map ]
go tool pprof -top -cum -sample_index=samples $T/node.pb.gz >$T/top.txt 2>/dev/null
total=$(sed -n 's/.*% of \([0-9]*\) total.*/\1/p' $T/top.txt | head -1)
awk 'f && NF >= 6 { n++; if (n <= 30) print } /flat%/ { f = 1 }' $T/top.txt >$T/top30.txt
check "samples taken ($total)" [ "${total:-0}" -gt 20 ]
check "fib among the top 30 by cum" grep -q 'fib' $T/top30.txt
check "jsonWork among the top 30 by cum" grep -q 'jsonWork' $T/top30.txt
check "JIT frames on a [jit] mapping" bash -c "go tool pprof -raw $T/node.pb.gz 2>/dev/null | grep -q '\[jit\]'"
# Leaf of each trace: the first frame line after the labels (the one with a value).
go tool pprof -traces -sample_index=samples $T/node.pb.gz 2>/dev/null |
    awk '/^-----/ { inb = 1; next } inb && $1 ~ /^[0-9]+$/ && NF >= 2 { print $1, $2; inb = 0 }' >$T/leaves.txt
unnamed=$(awk '$2 ~ /^(<unknown>|0x[0-9a-f]+|\[.*\])$/ { s += $1 } END { print s + 0 }' $T/leaves.txt)
echo "  unnamed leaves: $unnamed of $total"
check "unnamed leaf under 5% ($unnamed of $total)" [ $((unnamed * 100)) -lt $((total * 5)) ]
rooted=$(awk '($6 == "node::Start" || $6 == "main") && $4 > m { m = $4 } END { print m + 0 }' $T/top.txt)
echo "  node::Start or main in the stack: $rooted of $total"
check "at least 80% of the CPU unwound to node::Start or main ($rooted of $total)" \
    [ $((rooted * 100)) -ge $((total * 80)) ]
pid=$PE_PID
pe_stop
rm -f /tmp/perf-$pid.map

# the other views name them too (text report, folded, flame graph)
pe_start node --perf-basic-prof "$JS" 15 || exit 1
MAPS="$MAPS /tmp/perf-$PE_PID.map"
sleep 1
pe_get '/profile?duration=1&pprof=false' >$T/node.txt
pe_get '/profile?duration=1&format=folded' >$T/node.folded
pe_get '/profile?duration=1&format=svg' >$T/node.svg
for v in txt folded svg; do
    check "format $v names fib and jsonWork" bash -c "grep -q fib $T/node.$v && grep -q jsonWork $T/node.$v"
done
pid=$PE_PID
pe_stop
rm -f /tmp/perf-$pid.map

# ---- node --perf-prof: a jitdump (jit-PID.dump in its cwd, $T/cwd, mapped), no perf map -
pe_start node --perf-prof "$JS" 8 || exit 1
MAPS="$MAPS /tmp/perf-$PE_PID.map"
sleep 1
pe_get '/profile?duration=2' -o $T/dump.pb.gz
check "no perf map written (--perf-prof only)" [ ! -e /tmp/perf-$PE_PID.map ]
check "the jitdump is mapped" grep -q "jit-$PE_PID.dump" /proc/$PE_PID/maps
go tool pprof -top -cum -sample_index=samples $T/dump.pb.gz >$T/dtop.txt 2>/dev/null
check "jitdump names fib and jsonWork" bash -c "grep -q fib $T/dtop.txt && grep -q jsonWork $T/dtop.txt"
pe_stop
pe_finish
