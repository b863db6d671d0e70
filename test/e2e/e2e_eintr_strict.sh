#!/bin/bash
# e2e_eintr_strict: no capture of ours cuts a program's wait short.  A handled
# signal makes nanosleep, clock_nanosleep, a timed futex wait, poll and
# epoll_wait fail with EINTR whatever SA_RESTART says, so a thread blocked in
# one is never signalled (sampler/sigsafe.h): /proc gives its system call's
# PC instead.  p_eintr_strict waits 200 ms at a time in each of them (the
# futex through syscall(), a frame the /proc walk may not get past) and exits
# 3 on any EINTR or short wait (poll also when a signal finds it woken on
# its way out under load: sigsafe.h); for ~10 s we hammer goroutine?debug=2 and
# debug=1, a wall-clock profile and a trace.  The program must exit 0.
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl
[ -x $P/p_eintr_strict ] || { echo "SKIP: p_eintr_strict not built"; exit 77; }

pe_start $P/p_eintr_strict 12 || exit 1
for _ in $(seq 100); do grep -q ready "$PE_OUT" && break; sleep 0.05; done
check "ready" grep -q ready "$PE_OUT"

end=$((SECONDS + 10))
# a wall profile and a trace running across the dumps
curl -s -m 30 -o $T/wall.pb.gz "http://$PE_ADDR/profile_wall?duration=4&delay=0.005" &
w1=$!
curl -s -m 30 -o $T/trace.json "http://$PE_ADDR/debug/pprof/trace?seconds=4&delay=0.005" &
w2=$!
n=0
while [ $SECONDS -lt $end ] && kill -0 $PE_PID 2>/dev/null; do
    pe_get '/debug/pprof/goroutine?debug=2' >$T/d2.txt 2>/dev/null
    [ -s $T/d2.txt ] && cp $T/d2.txt $T/d2.last
    pe_get '/debug/pprof/goroutine?debug=1' >/dev/null 2>&1
    n=$((n + 1))
    if ! kill -0 $w1 2>/dev/null && [ $SECONDS -lt $((end - 3)) ]; then
        wait $w1
        curl -s -m 30 -o $T/wall2.pb.gz "http://$PE_ADDR/profile_wall?duration=2&delay=0.005" &
        w1=$!
    fi
done
wait $w1 $w2
echo "  $n rounds of dumps"
wait $PE_PID; st=$?
PE_PID=
check "the program saw no EINTR nor a short wait (exit $st)" [ $st -eq 0 ]
[ $st -eq 0 ] || sed "s/^/  /" "$PE_ERR"
check "it finished its loops" grep -q '^ok$' "$PE_OUT"
check "debug=2 was served" grep -q '^threads: ' $T/d2.last
# the threads that /proc could not walk say why they were not signalled
if grep -q '^not signalled: ' $T/d2.last; then
    check "debug=2: each unsignalled thread's note says why" \
        grep -q '^# capture: syscall only, from /proc (not signalled: blocked in ' $T/d2.last
fi
check "wall profile served" [ -s $T/wall.pb.gz ]
check "trace served" [ -s $T/trace.json ]
pe_finish
