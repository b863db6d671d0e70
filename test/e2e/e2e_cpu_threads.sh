#!/usr/bin/env bash
# e2e_cpu_threads: the CPU sampler finds every thread without rescanning
# /proc/self/task every 100 ms.  While a profile runs on an idle program, the
# collector wakes a few times a second at most; then a thread made by a raw
# clone (no pthread_create hook sees it) is found by the thread-count check
# and sampled; threads made through pthread_create that live 10 ms of CPU each
# are sampled from their first milliseconds and keep their name although they
# are gone before the collector drains their samples.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

pe_start $P/p_cpu_unseen $T/go 2 40 || exit 1
check "/profile_start: 200" [ "$(pe_status '/profile_start?delay=0.01')" = 200 ]
col=$(grep -l '^pe-cpu-collect$' /proc/$PE_PID/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5)
sw() { awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$PE_PID/task/$col/status; }
if [ -n "$col" ]; then
    s0=$(sw); sleep 3; s1=$(sw)
    # it used to wake every 20 ms (150 times in 3 s) and rescan every 100 ms
    check "idle profile: the collector woke $((s1 - s0)) times in 3 s (<= 12)" [ $((s1 - s0)) -le 12 ]
else
    bad "no pe-cpu-collect thread found"
fi
touch $T/go
check "the program ran its threads" eventually 90 grep -q 'raw=done short=40' $PE_OUT
pe_get '/profile_stop' -o $T/u.pb.gz
raw=$(count_cum $T/u.pb.gz raw_spin)
short=$(count_cum $T/u.pb.gz short_life)
named=$(count_cum $T/u.pb.gz short_life -tagfocus=thread_name=short-life)
echo "  raw_spin=$raw (2 s of CPU: ~200 at 100 Hz)  short_life=$short (40 x 10 ms: ~40)  named=$named"
check "raw clone thread sampled ($raw >= 50)" [ "${raw:-0}" -ge 50 ]
check "short pthread threads sampled from their start ($short >= 12)" [ "${short:-0}" -ge 12 ]
check "short threads keep their name after exit ($named of $short)" \
    awk -v n=${named:-0} -v s=${short:-0} 'BEGIN { exit !(s > 0 && n >= 0.8 * s) }'
pe_stop
pe_finish
