#!/usr/bin/env bash
# e2e_attach_tree: `profep attach PID --children` on a process tree started
# without the library (p_tree tree: two fork workers, a grandchild, an
# exec'd leaf): all five serve through the root's address as an LD_PRELOAD
# tree does (/debug/pprof/processes, pid=N, pid=all); `profep detach PID
# --children` leaves every one of them with the threads it had before.
source test/e2e/lib.sh
pe_need curl python3 setsid
P=$BUILD/test
INJ=$BUILD/profep-inject
[ -x "$INJ" ] || { echo "SKIP: $INJ not built"; exit 77; }
export PROFEP_INJECT=$INJ PROFEP_LIB=$LIB

setsid "$P/p_tree" tree >"$T/tree.out" 2>"$T/tree.err" &
root=$!
PE_PID=$root
trap 'kill -- -$root 2>/dev/null; pe_cleanup' EXIT
eventually 10 bash -c "[ \$(grep -c '^\(fork\|grand\|exec\) ' '$T/tree.out') = 4 ]" ||
    { bad "p_tree did not start its tree"; pe_finish; }
pids="$root $(awk '{print $2}' "$T/tree.out" | tr '\n' ' ')"
declare -A before
for p in $pids; do before[$p]=$(ls /proc/$p/task | wc -l); done

out=$(scripts/profep attach $root --port 0 --children)
a=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$out")
check "attach --children: the root's address, 4 of 4 descendants joined ($out)" \
    bash -c "[ -n '$a' ] && grep -q '4 of 4 descendants joined' <<<'$out'"
listed() { curl -s "$a/debug/pprof/processes" | grep -c '"pid"'; }
check "/debug/pprof/processes lists the five processes" eventually 10 [ "$(listed)" = 5 ]
g=$(awk '/^grand / {print $2}' "$T/tree.out")
check "pid=N reaches the grandchild's server" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/cmdline?pid=$g")" = 200 ]
curl -s -m 60 -o "$T/all.pb.gz" "$a/debug/pprof/profile?seconds=2&pid=all"
check "pid=all: one CPU profile of the tree with tree_burn" \
    bash -c "command -v go >/dev/null || exit 0; go tool pprof -top '$T/all.pb.gz' 2>/dev/null | grep -q tree_burn"
out=$(scripts/profep detach $root --children)
check "detach --children: 4 of 4 descendants detached ($out)" grep -q '4 of 4 descendants detached' <<<"$out"
for p in $pids; do
    check "pid $p: its own ${before[$p]} threads after the detach" \
        eventually 10 [ "$(ls /proc/$p/task | wc -l)" = "${before[$p]}" ]
done
check "the root's server is gone" bash -c "! curl -s -o /dev/null --max-time 5 '$a/debug/pprof/'"
pe_finish
