#!/usr/bin/env bash
# e2e_tree: process trees through one address (issue 18), with test/progs/p_tree:
#  - fork children, a grandchild and an exec'd descendant are listed by
#    /debug/pprof/processes (pid, ppid, program, cmdline, addr, origin,
#    started) within 5 s; the index lists them; each serves on loopback with
#    the root's token;
#  - pid=N: a worker's CPU profile through the root names tree_burn; heap
#    through the root has its four sample types; unknown pid: 404;
#  - pid=all: every pid in the merged profile's pid labels, program labels,
#    the members' source lines (pprof Location.line, the text view's File:Line),
#    format=folded/text/svg views of the merge; a worker killed during a
#    pid=all request: still 200;
#  - a launcher (`timeout 60 p_tree leaf`): the root's CPU profile hints at
#    the member that used the CPU, in the text view and the pprof comments;
#  - fork+exec storm: children that exec or exit at once start no thread;
#  - 500 short-lived children: the root answers, the registry lists only the
#    live ones;
#  - forks during our server thread's first libunwind walk: every child serves;
#  - PROFEP_CHILDREN=off: fork children stay dormant (no server), nothing is listed.
source test/e2e/lib.sh
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
TOKEN=tree-token-123
AUTH=(-H "Authorization: Bearer $TOKEN")
procs() { pe_get /debug/pprof/processes "${AUTH[@]}"; }
field_pids() { grep -o '"pid": [0-9]*' | awk '{print $2}' | sort -n | tr '\n' ' '; }
wait_listed() { # count: wait up to 5 s until that many processes are listed
    for _ in $(seq 50); do [ "$(procs | grep -c '"pid"')" -ge "$1" ] && return 0; sleep 0.1; done
    return 1
}
aget() { curl -sS --max-time 60 -H "Authorization: Bearer $TOKEN" "http://$PE_ADDR$1"; }
has() { aget "$1" | grep -q -- "$2"; }     # path pattern
lacks() { ! aget "$1" | grep -q -- "$2"; } # path pattern
has_pprof() { aget "$1" >$T/has.pb && go tool pprof -raw $T/has.pb 2>&1 | grep -q -- "$2"; }
stop_tree() { [ -n "${PE_PID:-}" ] && kill -- -"$PE_PID" 2>/dev/null; sleep 0.2; PE_PID=; }

PE_ENV="PROFEP_TOKEN=$TOKEN" pe_start $P/p_tree tree || exit 1
for _ in $(seq 50); do [ "$(wc -l <"$PE_OUT")" -ge 4 ] && break; sleep 0.1; done
F1=$(awk '/^fork/{print $2}' "$PE_OUT" | head -1)
F2=$(awk '/^fork/{print $2}' "$PE_OUT" | tail -1)
G=$(awk '/^grand/{print $2}' "$PE_OUT")
X=$(awk '/^exec/{print $2}' "$PE_OUT")
if wait_listed 5; then ok "five processes listed within 5 s"; else
    bad "five processes listed within 5 s"
    procs
    for p in $F1 $F2 $G $X; do # a member that did not start: where it is
        [ -e $T/port.$p ] || gdb -p $p -batch -ex "thread apply all bt" >>$T/gdb.txt 2>&1
    done
fi
procs >$T/procs.json
check "processes JSON parses with every field" python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
need = {"pid", "ppid", "program", "cmdline", "addr", "origin", "started"}
assert all(need <= set(p) for p in v), v
assert [p["origin"] for p in v].count("root") == 1
assert all(p["addr"].startswith("127.0.0.1:") for p in v)
assert all(p["started"] > 1600000000 for p in v)' $T/procs.json
check "workers listed as fork" grep -q "\"pid\": $F1, \"ppid\": $PE_PID, \"program\": \"p_tree\".*\"origin\": \"fork\"" $T/procs.json
check "grandchild listed with its parent" grep -q "\"pid\": $G, \"ppid\": $F1,.*\"origin\": \"fork\"" $T/procs.json
check "exec'd descendant listed as exec" grep -q "\"pid\": $X,.*\"cmdline\": \"p_tree leaf\".*\"origin\": \"exec\"" $T/procs.json
check "nothing printed by the members" test "$(grep -c . "$PE_ERR")" -eq 1
check "processes needs the token" test "$(pe_status /debug/pprof/processes)" = 401
check "index lists the processes" has "/debug/pprof/" "pid=$G"
XADDR=$(grep -o "\"pid\": $X,[^}]*" $T/procs.json | grep -o '127.0.0.1:[0-9]*')
check "a member needs the token too" test "$(curl -s -o /dev/null -w '%{http_code}' http://$XADDR/debug/pprof/heap)" = 401
check "a member answers on its own address" test "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" http://$XADDR/debug/pprof/heap)" = 200

pe_get "/debug/pprof/profile?seconds=2&pid=$F2" "${AUTH[@]}" -o $T/w.pb
check "pid=N: the worker's CPU profile names tree_burn" sh -c "go tool pprof -top $T/w.pb 2>&1 | grep -q tree_burn"
check "pid=N: the profile is the worker's (thread label)" sh -c "go tool pprof -tags $T/w.pb 2>&1 | grep -q ' $F2\$'"
pe_get "/debug/pprof/heap?pid=$G" "${AUTH[@]}" -o $T/h.pb
check "pid=N heap has the four sample types" sh -c "go tool pprof -raw $T/h.pb 2>&1 | grep -q 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes'"
check "pid=N text view comes through" has "/profile?duration=1&pid=$X&format=text" 'tree_burn'
check "pid outside the tree: 404" test "$(pe_status "/debug/pprof/heap?pid=1" "${AUTH[@]}")" = 404
check "pid=all on a per-process endpoint: 400" test "$(pe_status "/debug/pprof/cmdline?pid=all" "${AUTH[@]}")" = 400

pe_get "/debug/pprof/profile?seconds=3&pid=all" "${AUTH[@]}" -o $T/all.pb
go tool pprof -tags $T/all.pb >$T/all.tags 2>&1
for p in $PE_PID $F1 $F2 $G $X; do
    check "pid=all carries pid $p" grep -q " $p\$" $T/all.tags
done
check "pid=all carries the program label" grep -q "program: Total" $T/all.tags
check "pid=all names tree_burn" sh -c "go tool pprof -top $T/all.pb 2>&1 | grep -q tree_burn"
check "pid=all keeps the members' lines (tree_burn at p_tree.c:N)" \
    sh -c "go tool pprof -raw $T/all.pb 2>&1 | grep -Eq 'tree_burn .*p_tree\.c:[1-9][0-9]*'"
check "pid=all text view shows File:Line" has "/profile?duration=1&pid=all&format=text" 'p_tree.c:[0-9]*; tree_burn'
check "pid=all folded view" has "/profile?duration=1&pid=all&format=folded" 'tree_burn [0-9]'
check "pid=all svg view" has "/debug/pprof/heap?pid=all&format=svg" '<svg'
check "pid=all heap: four types" has_pprof "/debug/pprof/heap?pid=all" 'inuse_space/bytes'
# a worker exits while pid=all runs: the request still succeeds
(sleep 1; kill -9 $F2) &
killer=$!
code=$(curl -s --max-time 60 "${AUTH[@]}" -o $T/all2.pb -w '%{http_code}' \
    "http://$PE_ADDR/debug/pprof/profile?seconds=3&pid=all")
wait $killer
check "pid=all with a worker killed meanwhile: 200" test "$code" = 200
check "the killed worker is named in the comments" sh -c "go tool pprof -raw $T/all2.pb 2>&1 | grep -q 'not merged: pid $F2'"
check "the killed worker leaves the list" lacks "/debug/pprof/processes" "\"pid\": $F2,"
stop_tree

# A launcher (issue 33): `timeout 60 ./app` under the library profiles
# timeout; its CPU profile says that it used almost no CPU and names the
# member that did, with the pid= to ask (text view and pprof comment).
PE_ENV="PROFEP_TOKEN=$TOKEN" pe_start timeout 60 $P/p_tree leaf || exit 1
wait_listed 2 || bad "launcher: the leaf is listed"
LEAF=$(procs | field_pids | tr ' ' '\n' | grep -vx "$PE_PID" | grep . | head -1)
aget "/profile?duration=2&format=text" >$T/launch.txt
check "launcher: the text view hints at pid $LEAF" \
    grep -q "^hint: pid $PE_PID (timeout) used almost no CPU.* $LEAF (p_tree).*ask with ?pid=$LEAF\$" $T/launch.txt
aget "/debug/pprof/profile?seconds=2" >$T/launch.pb
check "launcher: the pprof comment says it too" \
    sh -c "go tool pprof -raw $T/launch.pb 2>&1 | grep -q 'hint: pid $PE_PID (timeout).*ask with ?pid=$LEAF'"
aget "/profile?duration=1&format=text&pid=$LEAF" >$T/leaf.txt
check "launcher: a busy process gets no hint" sh -c "grep -q tree_burn $T/leaf.txt && ! grep -q '^hint:' $T/leaf.txt"
[ "$checks_bad" = 0 ] || head -5 $T/launch.txt
stop_tree

# fork+exec storm: no thread in children that exec or exit at once
PE_ENV= pe_start $P/p_tree storm 400 || exit 1
for _ in $(seq 600); do grep -q storm "$PE_OUT" && break; sleep 0.1; done
check "storm: no child started a thread" grep -q "storm 400 threads=0" "$PE_OUT"
pe_stop

# 500 short-lived children
PE_ENV= pe_start $P/p_tree short 500 || exit 1
for _ in $(seq 900); do grep -q "short done" "$PE_OUT" && break; sleep 0.1; done
check "500 short-lived children done" grep -q "short done" "$PE_OUT"
check "root still answers and lists only itself" test "$(pe_get /debug/pprof/processes | grep -c '"pid"')" = 1
check "no port file left by a dead member is needed: root's is there" test -s "$T/port.$PE_PID"
pe_stop

# Forks back to back over our server thread's first libunwind walk (30 ms
# after load): a child that copied the walk's init lock held hung in its
# first unwind (p_tree first: each child makes one sampled allocation).
for r in $(seq 8); do
    env PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD="$LIB" $P/p_tree first 2>/dev/null >$T/first.$r &
    echo $! >$T/first.pid.$r
done
first_done() { [ "$(cat $T/first.[0-9]* | grep -c '^first')" = 8 ]; }
eventually 60 first_done
check "forks during the first walk: no child hung ($(cat $T/first.[0-9]* | tr '\n' ' '))" \
    sh -c "first_done() { :; }; cat $T/first.[0-9]* | grep -c '^first [0-9]* hung=0' | grep -qx 8"
for r in $(seq 8); do kill "$(cat $T/first.pid.$r)" 2>/dev/null; done

# PROFEP_CHILDREN=off: today's meaning, children dormant
rm -f $T/port.*
PE_ENV=PROFEP_CHILDREN=off pe_start $P/p_tree tree || exit 1
sleep 1
check "children=off: only the root is listed" test "$(pe_get /debug/pprof/processes | grep -c '"pid"')" = 1
check "children=off: no member port files" test "$(ls $T/port.* | wc -l)" = 1
stop_tree
# Members that did not start, every thread (last, where run.sh's tail shows them).
[ -s $T/gdb.txt ] && grep -E '^(Thread|#)' $T/gdb.txt | cut -c1-150 | head -30
pe_finish
