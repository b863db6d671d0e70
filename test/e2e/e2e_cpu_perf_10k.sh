#!/usr/bin/env bash
# e2e_cpu_perf_10k: 10,000 threads under the perf engine (issue 42), within
# the README's figures.  Made while a CPU profile runs, they inherit their
# creator's events: no descriptor of their own (3 x CPUs + 1 at most in all),
# one ring a CPU of 516 KiB at most, and a thread among them is sampled.
# Alive at the start, they need (threads x CPUs) + CPUs + 1 descriptors: under
# a quarter of RLIMIT_NOFILE the perf engine takes them (that many at most),
# else the timer engine answers, saying so.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }
ncpu=$(getconf _NPROCESSORS_CONF)

# ---- made during the profile
pe_start $P/p_perf_10k 10000 $T/go $T/make || exit 1
eventually 30 grep -q '^waiting' $PE_OUT
pe_get '/profile_start?delay=0.01' >/dev/null
touch $T/make
eventually 60 grep -q '^ready' $PE_OUT
sleep 1
fds=$(ls -l /proc/$PE_PID/fd 2>/dev/null | grep -c 'perf_event')
maps=$(grep -c 'perf_event' /proc/$PE_PID/maps 2>/dev/null)
ringkb=0
while IFS=- read -r lo hi; do ringkb=$((ringkb + (16#$hi - 16#$lo) / 1024)); done \
    < <(awk '/perf_event/ { print $1 }' /proc/$PE_PID/maps)
pe_get '/profile_stop' -o $T/a.pb.gz
comments $T/a.pb.gz | sed 's/^/  /'
if comments $T/a.pb.gz | grep -q 'engine: timer'; then
    touch $T/go; pe_stop
    echo "skip: perf events are refused here"
    exit 77
fi
echo "  $(cat $PE_OUT | grep ready) made during the profile: $fds perf descriptors, $maps rings, $ringkb KiB"
check "10,000 made during the profile: no descriptor of their own ($fds <= 3 x $ncpu + 1)" \
    [ "$fds" -ge 1 -a "$fds" -le $((3 * ncpu + 1)) ]
check "10,000 made during the profile: one ring a CPU, 516 KiB each at most ($maps, $ringkb KiB)" \
    [ "$maps" -ge 1 -a "$maps" -le "$ncpu" -a "$ringkb" -le $((516 * ncpu)) ]
check "10,000 made during the profile: the burner among them sampled" \
    [ "$(count_cum $T/a.pb.gz tenk_burn)" -ge 5 ]
touch $T/go
eventually 60 grep -q '^done' $PE_OUT
pe_stop

# ---- alive at the start
rm -f $T/go
pe_start $P/p_perf_10k 10000 $T/go || exit 1
eventually 60 grep -q '^ready' $PE_OUT
pe_get '/profile?duration=1&delay=0.01' -o $T/b.pb.gz
nofile=$(awk '/Max open files/ { print $4 }' /proc/$PE_PID/limits)
need=$((10001 * ncpu + ncpu + 1))
peak=$(comments $T/b.pb.gz | sed -n 's/.*at most \([0-9]*\) descriptors.*/\1/p')
comments $T/b.pb.gz | grep 'engine:' | sed 's/^/  /'
if [ "$need" -le $((nofile / 4)) ]; then
    check "10,000 alive at the start: the perf engine, $need descriptors at most (${peak:-?})" \
        [ -n "$peak" -a "${peak:-0}" -le "$need" ]
else
    check "10,000 alive at the start: $need descriptors > RLIMIT_NOFILE/4 = $((nofile / 4)): the timer engine, saying why" \
        grep -q 'engine: timer.*descriptors' <(comments $T/b.pb.gz)
fi
touch $T/go
eventually 60 grep -q '^done' $PE_OUT
pe_stop
pe_finish
