#!/usr/bin/env bash
# e2e_threads: the every-thread endpoints on p_parked (threads parked in a mutex
# wait, a sleep, a pipe read and a busy loop): each one reported in its own
# function by /debug/pprof/goroutine debug=0/1/2 and /task_backtraces; a
# wall-clock profile splits time evenly between them (state labels), a CPU
# profile shows only the busy one; threadcreate names spawn_all; symbol POST
# names known addresses; wall 409s; a thread that blocks SIGPROF is reported
# as not answering, in bounded time; 503 when the program owns SIGPROF.
source test/e2e/lib.sh
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }

declare -A FN=([p-mutex]=park_mutex [p-sleep]=park_sleep [p-read]=park_read [p-busy]=park_busy)

pe_start $P/p_parked || exit 1
for _ in $(seq 50); do grep -q ready "$PE_OUT" && break; sleep 0.1; done
sleep 0.3

# ---- stacks now: debug=2, /task_backtraces, debug=1, debug=0 ------------------------
for path in '/debug/pprof/goroutine?debug=2' /task_backtraces; do
    txt=$(pe_get "$path")
    check "$path: 5 threads, all answered" grep -q '^threads: 5 (pid [0-9]*), 0 without answer' <<<"$txt"
    for t in "${!FN[@]}"; do
        check "$path: $t is in ${FN[$t]}" grep -q "^${FN[$t]}(\.\.\.)$" <<<"$(thread_block "$txt" "$t")"
    done
    check "$path: main thread in main_wait" grep -q '^main_wait(\.\.\.)$' <<<"$(thread_block "$txt" p_parked)"
    check "$path: tid, name and state on the header" \
        grep -Eq '^goroutine [0-9]+ \[sleeping, thread "p-sleep"\]:$' <<<"$txt"
    check "$path: p-busy is running" grep -Eq '^goroutine [0-9]+ \[running, thread "p-busy"\]:$' <<<"$txt"
    check "$path: no library thread" bash -c "! grep -Eq 'civetweb|pe-cpu-collect|worker_thread' <<<'$txt'"
done
check "debug=2: the sleeping thread is inside nanosleep" \
    grep -q '^nanosleep(\.\.\.)$' <<<"$(thread_block "$(pe_get '/debug/pprof/goroutine?debug=2')" p-sleep)"
txt=$(pe_get '/debug/pprof/goroutine?debug=1')
check "debug=1: Go's header with the total" grep -q '^goroutine profile: total 5$' <<<"$txt"
check "debug=1: count @ addresses lines" grep -Eq '^1 @( 0x[0-9a-f]+)+$' <<<"$txt"
for f in park_mutex park_sleep park_read park_busy main_wait; do
    check "debug=1: $f in a group" grep -q "^#	0x[0-9a-f]*	$f+" <<<"$txt"
done
pe_get '/debug/pprof/goroutine' -o $T/g.pb.gz
check "debug=0: pprof that go tool pprof reads" go tool pprof -raw $T/g.pb.gz >$T/g.raw 2>&1
check "debug=0: sample type goroutine/count" grep -q '^goroutine/count' $T/g.raw
check "debug=0: total 5" [ "$(count_total $T/g.pb.gz)" = 5 ]
for t in "${!FN[@]}"; do
    check "debug=0: tagfocus thread_name=$t gives ${FN[$t]}" \
        [ "$(count_cum $T/g.pb.gz ${FN[$t]} -tagfocus=thread_name=$t)" = 1 ]
done
check "debug=0: state label" grep -q 'state:\[running\]' $T/g.raw

# ---- wall-clock: even split, state labels; CPU: the busy one only --------------------
pe_get '/profile_wall?duration=3' -o $T/w.pb.gz
check "wall: pprof that go tool pprof reads" go tool pprof -raw $T/w.pb.gz >$T/w.raw 2>&1
check "wall: sample types samples/count wall/nanoseconds" grep -q '^samples/count wall/nanoseconds' $T/w.raw
check "wall: period type wall nanoseconds" grep -q '^PeriodType: wall nanoseconds' $T/w.raw
check "wall: period = delay (10000000)" grep -q '^Period: 10000000$' $T/w.raw
check "wall: thread, thread_name and state labels" \
    bash -c "grep -Eq 'thread:\[[0-9]+\]' $T/w.raw && grep -q 'thread_name:\[p-read\]' $T/w.raw &&
             grep -q 'state:\[sleeping\]' $T/w.raw"
declare -A W
sum=0
for t in "${!FN[@]}"; do W[$t]=$(count_cum $T/w.pb.gz ${FN[$t]}); sum=$((sum + W[$t])); done
echo "  wall samples: mutex=${W[p-mutex]} sleep=${W[p-sleep]} read=${W[p-read]} busy=${W[p-busy]} (of $(count_total $T/w.pb.gz))"
# Margins for a busy 2-core machine: a late collector carries the periods that
# passed, so a thread loses samples only when it gets no CPU for several ticks.
check "wall: each parked thread has ~100 samples per second (3 s: 220-340)" \
    bash -c "for v in ${W[*]}; do [ \$v -ge 220 ] && [ \$v -le 340 ] || exit 1; done"
check "wall: even split (each within 15% of the mean)" \
    bash -c "for v in ${W[*]}; do [ \$((v * 400)) -ge \$(($sum * 85)) ] && [ \$((v * 400)) -le \$(($sum * 115)) ] || exit 1; done"
check "wall: state=running only on the busy loop" \
    bash -c "[ $(count_cum $T/w.pb.gz park_busy -tagfocus=state=running) -gt 0 ] &&
             [ $(count_cum $T/w.pb.gz park_sleep -tagfocus=state=running) -eq 0 ]"
pe_get '/profile?duration=3' -o $T/c.pb.gz
ctot=$(count_total $T/c.pb.gz); cbusy=$(count_cum $T/c.pb.gz park_busy)
cother=$(( $(count_cum $T/c.pb.gz park_mutex) + $(count_cum $T/c.pb.gz park_sleep) + $(count_cum $T/c.pb.gz park_read) ))
echo "  cpu samples: busy=$cbusy parked=$cother total=$ctot"
check "cpu: the busy thread has >= 95% of the samples, the parked ones none" \
    bash -c "[ $((cbusy * 100)) -ge $((ctot * 95)) ] && [ $cother -eq 0 ]"

# ---- wall sessions and 409s --------------------------------------------------------
check "/profile_wall_start: 200" [ "$(pe_status '/profile_wall_start')" = 200 ]
check "second /profile_wall_start: 409" [ "$(pe_status '/profile_wall_start')" = 409 ]
body=$(pe_get '/profile_wall?duration=1&delay=0.05')
check "wall with another delay: 409 naming the running one ($body)" grep -q 'delay=0.01' <<<"$body"
check "a CPU profile alongside a wall session: 200" [ "$(pe_status '/profile?duration=1')" = 200 ]
check "an overlapping /profile_wall with the same delay: 200" [ "$(pe_status '/profile_wall?duration=1')" = 200 ]
pe_get '/profile_wall_stop' -o $T/ws.pb.gz
check "/profile_wall_stop returns the session's profile" [ "$(count_cum $T/ws.pb.gz park_read)" -gt 100 ]
check "/profile_wall_stop with none: 409" [ "$(pe_status '/profile_wall_stop')" = 409 ]
check "wall delay below 1 ms: 400" [ "$(pe_status '/profile_wall?delay=0.0001&duration=1')" = 400 ]
txt=$(pe_get '/profile_wall?duration=1&pprof=false')
check "wall pprof=false: text tree naming park_sleep" grep -q park_sleep <<<"$txt"

# ---- threadcreate ------------------------------------------------------------------
pe_get '/debug/pprof/threadcreate' -o $T/tc.pb.gz
check "threadcreate: type threadcreate/count" bash -c "go tool pprof -raw $T/tc.pb.gz | grep -q '^threadcreate/count'"
check "threadcreate: spawn_all created 4" [ "$(count_cum $T/tc.pb.gz spawn_all)" = 4 ]
txt=$(pe_get '/debug/pprof/threadcreate?debug=1')
check "threadcreate debug=1: Go's text" grep -q '^threadcreate profile: total 5$' <<<"$txt"
check "threadcreate debug=1: 4 @ spawn_all" bash -c "grep -A1 '^4 @' <<<'$txt' | grep -q spawn_all"

# ---- symbol ----------------------------------------------------------------------
addrs=$(awk '/^park_|^main_wait/ { printf "%s%s", sep, $2; sep = "+" }' "$PE_OUT")
txt=$(curl -sS --data-binary "$addrs" "http://$PE_ADDR/debug/pprof/symbol")
check "symbol GET: num_symbols: 1" grep -qx 'num_symbols: 1' <<<"$(pe_get /debug/pprof/symbol)"
for f in park_mutex park_sleep park_read park_busy main_wait; do
    a=$(awk -v f=$f '$1 == f { print $2 }' "$PE_OUT")
    check "symbol POST: $a is $f" grep -qx "$a $f" <<<"$txt"
done
check "symbol POST: an unknown address is left out" \
    bash -c "! curl -sS --data-binary 0x10 http://$PE_ADDR/debug/pprof/symbol | grep -q '^0x10 '"
check "the program is still running" kill -0 $PE_PID
pe_stop

# ---- a thread that does not answer -----------------------------------------------
PE_ENV="P_PARKED_BLOCK=1" pe_start $P/p_parked || exit 1
for _ in $(seq 50); do grep -q ready "$PE_OUT" && break; sleep 0.1; done
sleep 0.3
s0=$(date +%s%N)
txt=$(pe_get '/task_backtraces?capture=signal') # from /proc it would be read without a signal
ms=$(( ($(date +%s%N) - s0) / 1000000 ))
check "blocked SIGPROF: reported without answer ($(thread_block "$txt" p-blocked | head -1))" \
    grep -q '^# no answer within the bound (it blocks SIGPROF)$' <<<"$(thread_block "$txt" p-blocked)"
check "blocked SIGPROF: the others still answered" grep -q '^threads: 6 (pid [0-9]*), 1 without answer' <<<"$txt"
# (unbounded, it would wait for curl's 120 s; 5 s leaves room for a loaded machine)
check "blocked SIGPROF: bounded wait (${ms} ms < 5000)" [ "$ms" -lt 5000 ]
pe_get '/debug/pprof/goroutine?capture=signal' -o $T/gb.pb.gz
check "blocked SIGPROF: pprof has a [no answer] frame" bash -c "go tool pprof -traces $T/gb.pb.gz 2>/dev/null | grep -q 'no answer'"
check "the program is still running" kill -0 $PE_PID
pe_stop

# ---- the program owns SIGPROF: 503 where a signal is needed ------------------------
pe_start $P/p_cpu_sigprof 2 || exit 1
check "SIGPROF owned: goroutine 503" [ "$(pe_status '/debug/pprof/goroutine')" = 503 ]
check "SIGPROF owned: task_backtraces 503" [ "$(pe_status '/task_backtraces')" = 503 ]
check "SIGPROF owned: profile_wall?capture=signal 503" [ "$(pe_status '/profile_wall?duration=1&capture=signal')" = 503 ]
check "SIGPROF owned: threadcreate still 200" [ "$(pe_status '/debug/pprof/threadcreate')" = 200 ]
wait $PE_PID
check "SIGPROF owned: the program's handler still runs" grep -q 'handled=1' "$PE_OUT"
PE_PID=

pe_finish
