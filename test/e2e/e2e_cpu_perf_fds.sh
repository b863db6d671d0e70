#!/usr/bin/env bash
# e2e_cpu_perf_fds: the perf engine's descriptors are held in preload/fd.c's
# registry (in bulk): a program that closes every descriptor it did not open
# (a close loop, close_range, closefrom) in the middle of a CPU profile by
# perf events leaves them open, and its thread that existed at the start
# (sampled through an event of its own, not an inherited one) is still
# sampled afterwards; the program's own descriptors are closed as it asked.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }

pe_start $P/p_perf_closeall $T/go 8 || exit 1
pe_get '/profile_start?delay=0.002' >/dev/null
touch $T/go
eventually 20 grep -q '^closed' $PE_OUT
sleep 0.5
fds=$(ls -l /proc/$PE_PID/fd 2>/dev/null | grep -c 'perf_event')
low=$(ls /proc/$PE_PID/fd 2>/dev/null | awk '$1 >= 3 && $1 < 1024' | wc -l)
sleep 1.5
pe_get '/profile_stop' -o $T/a.pb.gz
comments $T/a.pb.gz | sed 's/^/  /'
if comments $T/a.pb.gz | grep -q 'engine: timer'; then
    pe_stop
    echo "skip: perf events are refused here"
    exit 77
fi
before=$(count_cum $T/a.pb.gz closeall_before)
after=$(count_cum $T/a.pb.gz closeall_after)
echo "  after the closing: $fds perf descriptors open, $low descriptors in 3..1023; samples before $before, after $after"
check "closing everything: the perf descriptors stay open ($fds)" [ "$fds" -ge 2 ]
check "closing everything: the thread is still sampled (closeall_after $after)" [ "${after:-0}" -ge 50 ]
check "... and was before (closeall_before $before)" [ "${before:-0}" -ge 50 ]
check "closing everything: the server still answers" [ "$(pe_status /debug/pprof/)" = 200 ]
eventually 20 grep -q '^done' $PE_OUT
pe_stop
pe_finish
