#!/usr/bin/env bash
# e2e_tree_storm: a storm of pid=all requests never starves the server
# (issue 38 item 1, and its pid=all parts of items 3 and 5).  A python3
# multiprocessing pool (a root and 2 fork children) under 12, 200 and 1,000
# concurrent pid=all requests of every kind (heap, CPU profiles of 1 s,
# goroutine in pprof and text, allocs, mutex, fgprof, plain profiles, pid=N),
# each bounded by curl -m 15:
#  - every request gets an answer (200, or 503 with Retry-After past the
#    bound: fanout.c), none times out;
#  - a probe of /debug/pprof/ (and cmdline, processes) every 0.5 s answers
#    within 1 s every time, from before the first storm to after the last;
#  - afterwards no connection of the server is left in CLOSE_WAIT, and
#    pid=all merges all three processes again;
#  - goroutine?debug=1|2&pid=all answer text, each process under a line
#    naming its pid;
#  - pid=all while the root exits: 200, a profile of what was recorded;
#  - a stripped program's tree: the merge names its code [burn], not 0x...
source test/e2e/lib.sh
pe_need python3 curl ss
PY=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a shim chain
probe_fail=0

cat >$T/pool.py <<'EOF'
import multiprocessing as mp, sys, time
def work(i):
    t, x = time.time(), []
    while time.time() - t < 0.02:
        x.append(bytearray(4096))
    time.sleep(0.08)
    return len(x)
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        end = time.time() + float(sys.argv[1])
        while time.time() < end:
            p.map(work, range(2))
    print("done", flush=True)
EOF

nprocs() { pe_get /debug/pprof/processes | grep -c '"pid"'; }
three_listed() { [ "$(nprocs)" -ge 3 ]; }

# ---- the probe: quick endpoints every 0.5 s, each within 1 s
probe_loop() {
    local i=0 path
    while [ ! -e $T/probe.stop ] && [ -d $T ]; do
        for path in /debug/pprof/ $([ $((i % 2)) = 0 ] && echo /debug/pprof/cmdline || echo /debug/pprof/processes); do
            curl -s -o /dev/null -m 5 -w "%{http_code} %{time_total} $path\n" "http://$PE_ADDR$path" >>$T/probe.txt
        done
        i=$((i + 1))
        sleep 0.5
    done
}

# storm N: N concurrent requests, kinds in turn, 250 per curl process (-Z)
kinds=()
storm() {
    local n=$1 c i cfg pids=()
    rm -f $T/storm.*
    for ((c = 0; c < n; c += 250)); do
        cfg=$T/storm.cfg.$c
        for ((i = c; i < c + 250 && i < n; i++)); do
            printf 'url = "http://%s%s"\noutput = /dev/null\n' "$PE_ADDR" "${kinds[$((i % ${#kinds[@]}))]}"
        done >$cfg
        curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 250 -m 15 \
            -w '%{http_code} %{time_total} %{url}\n' -K $cfg >$T/storm.out.$c 2>/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    cat $T/storm.out.* >$T/storm.all
    printf '  storm %s: %s\n' "$n" "$(awk '{print $1}' $T/storm.all | sort | uniq -c | tr '\n' ' ')"
}
answered() { # every request of the storm: 200 or 503 (no time-out, no 502)
    [ "$(wc -l <$T/storm.all)" = "$1" ] && ! awk '{print $1}' $T/storm.all | grep -qvE '^(200|503)$'
}
stop_tree() { # the root and its children (by their parent's id), then reap
    kill $(ps -o pid= --ppid "$PE_PID") "$PE_PID" 2>/dev/null
    pe_stop
}
close_wait() { ss -Htan state close-wait "( sport = :${PE_ADDR##*:} )" | wc -l; }
no_close_wait() { [ "$(close_wait)" = 0 ]; }

PE_ENV= pe_start "$PY" $T/pool.py 80 || exit 1
eventually 15 three_listed || bad "the pool's two workers are listed"
M=$(pe_get /debug/pprof/processes | grep -o '"pid": [0-9]*' | awk '{print $2}' | grep -vx "$PE_PID" | head -1)
kinds=(
    "/debug/pprof/heap?pid=all" "/debug/pprof/profile?seconds=1&pid=all"
    "/debug/pprof/goroutine?pid=all" "/debug/pprof/goroutine?debug=1&pid=all"
    "/debug/pprof/goroutine?debug=2&pid=all" "/debug/pprof/allocs?pid=all"
    "/debug/pprof/mutex?pid=all" "/profile?duration=1&pid=all" "/debug/fgprof?seconds=1&pid=all"
    "/debug/pprof/profile?seconds=1" "/debug/pprof/heap?pid=$M"
)

probe_loop &
PROBE=$!

# Twelve, as the issue's xargs did: each one answered, at least one merged.
seq 12 | xargs -P12 -I{} curl -s -o /dev/null -m 15 -w '%{http_code}\n' \
    "http://$PE_ADDR/debug/pprof/heap?pid=all" >$T/twelve.txt
check "12 concurrent heap?pid=all: every one answered ($(sort $T/twelve.txt | uniq -c | tr '\n' ' '))" \
    sh -c "[ \$(grep -cE '^(200|503)\$' $T/twelve.txt) = 12 ] && grep -q '^200\$' $T/twelve.txt"

# The bound: eight at once, each for 4 s: two in flight (PE_FANOUT_MAX_ALL),
# the rest refused at once with 503 and Retry-After.
held=()
for i in $(seq 8); do
    curl -s -o /dev/null -m 15 -D $T/bound.$i.h "http://$PE_ADDR/debug/pprof/profile?seconds=4&pid=all" &
    held+=($!)
done
wait "${held[@]}"
check "past the bound: 503 ($(cat $T/bound.*.h | grep -c '^HTTP/1.1 503') of 8)" grep -q '^HTTP/1.1 503' $T/bound.*.h
check "past the bound: Retry-After" sh -c "grep -il '^Retry-After: [1-9]' $T/bound.*.h | xargs grep -l '^HTTP/1.1 503' | grep -q ."
check "within the bound: 200" grep -q '^HTTP/1.1 200' $T/bound.*.h

storm 200
check "200 concurrent pid=all of every kind: every one answered" answered 200
check "200 concurrent: some merged (200)" grep -q '^200 ' $T/storm.all
storm 1000
check "1000 concurrent pid=all of every kind: every one answered" answered 1000
check "1000 concurrent: some merged (200)" grep -q '^200 ' $T/storm.all
sleep 1
touch $T/probe.stop
wait $PROBE

probes=$(wc -l <$T/probe.txt)
slow=$(awk '$1 != 200 || $2 > 1.0' $T/probe.txt | wc -l)
echo "  probe: slowest answer $(awk '{print $2}' $T/probe.txt | sort -n | tail -1) s"
check "the probe ran through the storms ($probes answers)" test "$probes" -ge 10
check "quick endpoints answered within 1 s every time ($slow of $probes not)" test "$slow" = 0
[ "$slow" = 0 ] || awk '$1 != 200 || $2 > 1.0' $T/probe.txt | head -5
check "no connection left in CLOSE_WAIT" eventually 10 no_close_wait
[ "$(close_wait)" = 0 ] || echo "  $(close_wait) in CLOSE_WAIT"
merged_all() {
    [ "$(curl -s -o $T/after.pb -m 15 -w '%{http_code}' "http://$PE_ADDR/debug/pprof/heap?pid=all")" = 200 ] &&
        gzip -dc $T/after.pb 2>/dev/null | grep -aq 'pid=all: 3 of 3 processes merged'
}
check "afterwards pid=all merges the three processes again" eventually 20 merged_all
check "afterwards cmdline answers" test "$(pe_status /debug/pprof/cmdline)" = 200

# Go's text forms under pid=all: each process's text under a line naming it.
pe_get "/debug/pprof/goroutine?debug=1&pid=all" -D $T/g1.h >$T/g1.txt
check "goroutine?debug=1&pid=all: text/plain" grep -qi '^Content-Type: text/plain' $T/g1.h
check "goroutine?debug=1&pid=all: not gzip" sh -c "! head -c2 $T/g1.txt | od -An -tx1 | grep -q '1f 8b'"
check "goroutine?debug=1&pid=all: three pid lines" test "$(grep -c '^== pid [0-9]* (' $T/g1.txt)" = 3
check "goroutine?debug=1&pid=all: the root's own text" \
    sh -c "grep -A1 '^== pid $PE_PID ' $T/g1.txt | grep -q 'goroutine profile: total'"
check "goroutine?debug=1&pid=all: a member's text" \
    sh -c "grep -A1 '^== pid $M ' $T/g1.txt | grep -q 'goroutine profile: total'"
pe_get "/debug/pprof/goroutine?debug=2&pid=all" >$T/g2.txt
check "goroutine?debug=2&pid=all: three pid lines" test "$(grep -c '^== pid [0-9]* (' $T/g2.txt)" = 3
check "goroutine?debug=2&pid=all: stacks as text" grep -q '^goroutine [0-9]* \[' $T/g2.txt
stop_tree

# pid=all while the root exits: what was recorded, not a bare 502.
PE_ENV= pe_start "$PY" $T/pool.py 5 || exit 1
eventually 15 three_listed || bad "exit: the pool's two workers are listed"
code=$(curl -s -m 20 -o $T/exit.pb -w '%{http_code}' "http://$PE_ADDR/debug/pprof/profile?seconds=10&pid=all")
check "pid=all while the root exits: 200 (got $code)" test "$code" = 200
check "pid=all while the root exits: a profile saying so" \
    sh -c "gzip -dc $T/exit.pb | grep -aq 'exited during the request'"
if command -v go >/dev/null; then
    check "pid=all while the root exits: the profile parses" sh -c "go tool pprof -raw $T/exit.pb >/dev/null 2>&1"
fi
gone() { # exited (a zombie until reaped)
    local st
    st=$(ps -o stat= -p "$PE_PID" 2>/dev/null)
    [ -z "$st" ] || [[ $st == Z* ]]
}
check "the root exits by itself" eventually 20 gone
stop_tree

# A stripped program's tree: unnamed code merged as [burn], as its own views show it.
cat >$T/burn.c <<'CEOF'
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile unsigned long sink;
static __attribute__((noinline)) void spin(double secs) {
    double end = now() + secs;
    while (now() < end) for (int i = 0; i < 100000; i++) sink += i;
}
int main(void) {
    for (int k = 0; k < 2; k++)
        if (fork() == 0) for (;;) { spin(0.03); poll(NULL, 0, 30); }
    for (;;) { spin(0.03); poll(NULL, 0, 30); }
}
CEOF
${CC:-cc} -O1 -o $T/burn $T/burn.c && strip $T/burn || exit 1
PE_ENV= pe_start $T/burn || exit 1
eventually 15 three_listed || bad "burn: two children listed"
pe_get "/debug/pprof/profile?seconds=2&pid=all&format=folded" >$T/burn.folded
check "stripped tree: pid=all names its code [burn]" grep -q '\[burn\]' $T/burn.folded
check "stripped tree: no raw addresses in the merge" sh -c "! grep -q '0x[0-9a-f]' $T/burn.folded"
[ "$checks_bad" = 0 ] || head -3 $T/burn.folded
stop_tree
pe_finish
