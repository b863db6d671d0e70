#!/usr/bin/env bash
# e2e_cpu_perf: CPU profiles from perf events (sampler/engine_perf.c), no signal:
# the 75/25 split program is measured within 3 points with and without SIGPROF
# blocked in its threads; a thread made after the start is sampled (inherited
# events); the timer engine (PROFEP_CPU_ENGINE=timer) sees nothing of threads
# that block SIGPROF; threads that treat EINTR as fatal sleep through a 1000 Hz
# profile; a descriptor limit too small for the events falls back to the timer
# engine, saying why; event=cycles and the other counters answer 503 where the
# machine has no PMU; 1,000 threads alive at the start stay within the
# README's descriptor and ring figures, and 1,000 made during a profile need
# no descriptor of their own.  Each profile's comments name its engine.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }
# three/(three+one) in percent, and whether it is within 3 points of 75
split_pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + b == 0) print -1; else printf "%.1f", 100 * a / (a + b) }'; }
near75() { awk -v p="$1" 'BEGIN { exit !(p >= 72 && p <= 78) }'; }

# ---- is the perf engine on here at all?
pe_start $P/p_cpu_split 60 0.4 || exit 1
pe_get '/profile?duration=4&delay=0.001' -o $T/a.pb.gz
comments $T/a.pb.gz | sed 's/^/  /'
if comments $T/a.pb.gz | grep -q 'engine: timer.*perf events not used'; then
    why=$(comments $T/a.pb.gz | grep 'engine:')
    pe_stop
    echo "skip: perf events are refused here ($why)"
    exit 77
fi
check "perf: the profile names the perf engine" grep -q 'engine: perf' <(comments $T/a.pb.gz)
three=$(count_cum $T/a.pb.gz cpu_three_quarters); one=$(count_cum $T/a.pb.gz cpu_one_quarter)
late=$(count_cum $T/a.pb.gz late_work); worker=$(count_cum $T/a.pb.gz worker)
pct=$(split_pct "${three:-0}" "${one:-0}")
echo "  perf: three=$three one=$one ($pct%) late=$late worker=$worker"
check "perf: the split is 75/25 within 3 points ($pct%)" near75 "$pct"
check "perf: the thread made after the start is sampled (late_work $late)" [ "${late:-0}" -ge 20 ]
check "perf: stacks unwound from the copy reach worker ($worker of $((three + one)))" \
    awk -v w="${worker:-0}" -v t="$((three + one))" 'BEGIN { exit !(t > 0 && w >= 0.95 * t) }'
check "perf: the engine is named" grep -q . <(comments $T/a.pb.gz | grep 'no signal')
# hardware counters: 200 where a PMU exists, else 503 saying so (this VM: ENOENT)
for ev in cycles instructions cache-misses branch-misses; do
    st=$(pe_fetch "/profile?duration=1&event=$ev" $T/ev.txt)
    if [ "$st" = 200 ]; then
        check "event=$ev: sampled by perf events" grep -q "event=$ev" <(comments $T/ev.txt)
    else
        check "event=$ev: $st saying the machine has no such counter ($(cat $T/ev.txt))" \
            grep -q "^503 .*no hardware performance counters" <(echo "$st $(cat $T/ev.txt)")
    fi
done
check "event=bogus: 400" [ "$(pe_status '/debug/pprof/profile?seconds=1&event=bogus')" = 400 ]
# engine= chooses for the session: timer here, and a request for the other engine meanwhile is 409
pe_get '/profile_start?engine=timer' >/dev/null
check "engine=perf while a timer session runs: 409" \
    [ "$(pe_status '/profile?duration=1&engine=perf')" = 409 ]
pe_get '/profile_stop' -o $T/t.pb.gz
check "engine=timer: the timer engine, saying it was asked for" \
    grep -q 'engine: timer.*engine=timer was asked for' <(comments $T/t.pb.gz)
pe_stop

# ---- SIGPROF blocked in both workers
pe_start $P/p_cpu_split 60 0.4 block || exit 1
pe_get '/profile?duration=4&delay=0.001' -o $T/b.pb.gz
three=$(count_cum $T/b.pb.gz cpu_three_quarters); one=$(count_cum $T/b.pb.gz cpu_one_quarter)
pct=$(split_pct "${three:-0}" "${one:-0}")
echo "  perf, SIGPROF blocked: three=$three one=$one ($pct%)"
check "perf, SIGPROF blocked: sampled, the split within 3 points ($pct%)" near75 "$pct"
check "perf, SIGPROF blocked: no comment calls them unsampled" \
    bash -c "! grep -q 'block SIGPROF' <(go tool pprof -raw $T/b.pb.gz 2>/dev/null)"
# a wall-clock profile beside a perf CPU session: running threads from perf's samples, no signal
pe_get '/profile_start' >/dev/null
pe_get '/profile_wall?duration=3' -o $T/w.pb.gz
pe_get '/profile_stop' -o /dev/null
wp=$(count_cum $T/w.pb.gz cpu_three_quarters -tagfocus=capture=perf)
check "wall beside perf, SIGPROF blocked: running workers seen from perf's samples ($wp)" \
    [ "${wp:-0}" -ge 1 ]
check "... and said so" grep -q "from the perf engine's last samples" <(comments $T/w.pb.gz)
pe_stop

PE_ENV="PROFEP_CPU_ENGINE=timer" pe_start $P/p_cpu_split 60 0.4 block || exit 1
pe_get '/profile?duration=2' -o $T/c.pb.gz
comments $T/c.pb.gz | sed 's/^/  /'
three=$(count_cum $T/c.pb.gz cpu_three_quarters)
check "timer engine named, with its reason" grep -q 'PROFEP_CPU_ENGINE=timer' <(comments $T/c.pb.gz)
check "timer engine, SIGPROF blocked: the workers go unseen (${three:-0} samples)" \
    [ "${three:-0}" -le 5 ]
check "timer engine: the comments say 2 threads block SIGPROF" \
    grep -q '2 threads block SIGPROF' <(comments $T/c.pb.gz)
pe_stop

# ---- no EINTR: nothing is sent to the program's threads
pe_start $P/p_cpu_noeintr 8 || exit 1
pe_get '/profile?duration=6&delay=0.001' -o $T/d.pb.gz
wait $PE_PID; st=$?; PE_PID=
check "EINTR-fatal threads profiled at 1000 Hz: exit 0 ($st), $(cat $PE_OUT)" \
    grep -q "^0 eintr=0" <(echo "$st $(cat $PE_OUT)")
check "... by the perf engine" grep -q 'engine: perf' <(comments $T/d.pb.gz)

# ---- fallback: too few descriptors for threads x CPUs events
(ulimit -n 20; pe_start $P/p_cpu_split 30 0.1 && echo "$PE_PID $PE_ADDR" >$T/lim) || exit 1
read -r PE_PID PE_ADDR <$T/lim
pe_get '/profile?duration=1' -o $T/e.pb.gz
comments $T/e.pb.gz | sed 's/^/  /'
check "RLIMIT_NOFILE 20: the timer engine answers, saying why" \
    grep -q 'engine: timer.*descriptors' <(comments $T/e.pb.gz)
check "... with the workers' samples" [ "$(count_cum $T/e.pb.gz cpu_three_quarters)" -ge 1 ]
kill $PE_PID; PE_PID=

# ---- 1,000 threads: descriptors and ring memory within the README's figures
ncpu=$(getconf _NPROCESSORS_CONF)
pe_start $P/p_cpu_manythreads 1000 $T/go 120 || exit 1
eventually 60 grep -q '^ready' $PE_OUT
pe_get '/profile?duration=4&delay=0.001' -o $T/f.pb.gz &
getter=$!
fds=0 maps=0 ringkb=0
for _ in $(seq 30); do
    sleep 0.2
    f=$(ls -l /proc/$PE_PID/fd 2>/dev/null | grep -c 'perf_event')
    [ "$f" -gt "$fds" ] && fds=$f
    m=$(grep -c 'perf_event' /proc/$PE_PID/maps 2>/dev/null)
    if [ "$m" -gt "$maps" ]; then
        maps=$m ringkb=0
        while IFS=- read -r lo hi; do ringkb=$((ringkb + (16#$hi - 16#$lo) / 1024)); done \
            < <(awk '/perf_event/ { print $1 }' /proc/$PE_PID/maps)
    fi
done
wait $getter
touch $T/go
nofile=$(awk '/Max open files/ { print $4 }' /proc/$PE_PID/limits)
limit=$((1001 * ncpu + ncpu + 1))
echo "  1000 threads: $fds perf descriptors (threads x CPUs + CPUs + 1 = $limit; RLIMIT_NOFILE/4 = $((nofile / 4))), $maps rings, $ringkb KiB"
check "1000 threads: descriptors within threads x CPUs + CPUs + 1" [ "$fds" -ge 1 -a "$fds" -le "$limit" ]
check "1000 threads: descriptors within a quarter of RLIMIT_NOFILE" [ "$fds" -le $((nofile / 4)) ]
check "1000 threads: one ring a CPU ($maps), 516 KiB each at most ($ringkb KiB in all)" \
    [ "$maps" -ge 1 -a "$maps" -le "$ncpu" -a "$ringkb" -le $((516 * ncpu)) ]
check "1000 threads: sampled by perf events" grep -q 'engine: perf' <(comments $T/f.pb.gz)
check "1000 threads: many_work seen" [ "$(count_cum $T/f.pb.gz many_work)" -ge 1 ]
eventually 60 grep -q '^done' $PE_OUT
pe_stop

# ---- 1,000 threads made while the profile runs: they inherit their creator's events
pe_start $P/p_cpu_manythreads 1000 $T/go2 120 $T/make || exit 1
eventually 30 grep -q '^waiting' $PE_OUT
pe_get '/profile?duration=5&delay=0.001' -o $T/g.pb.gz &
getter=$!
sleep 1
touch $T/make
eventually 60 grep -q '^ready' $PE_OUT
fds=$(ls -l /proc/$PE_PID/fd 2>/dev/null | grep -c 'perf_event')
wait $getter
touch $T/go2
echo "  1000 threads made during the profile: $fds perf descriptors"
check "threads made during the profile: no descriptor of their own ($fds <= 3 x $ncpu + 1)" \
    [ "$fds" -le $((3 * ncpu + 1)) ]
check "threads made during the profile: sampled ($(count_cum $T/g.pb.gz many_work) in many_work)" \
    [ "$(count_cum $T/g.pb.gz many_work)" -ge 1 ]
eventually 60 grep -q '^done' $PE_OUT
pe_stop
pe_finish
