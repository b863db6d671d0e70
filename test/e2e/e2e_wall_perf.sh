#!/usr/bin/env bash
# e2e_wall_perf: wall-clock profiles by perf events (sampler/wall.c, issue 42
# item 5): where perf events open, a wall profile takes its running threads
# from the engine's last samples and its blocked ones from /proc, and sends no
# signal to any program thread.  The program blocks SIGPROF in every thread
# and reports whether one ever became pending, and treats EINTR as fatal.
# Also: a CPU profile by perf events in the middle of a wall session takes the
# engine and hands it back (still no signal); PROFEP_CPU_ENGINE=timer signals
# the running threads as before, saying why (the program sees it pending).
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }

# ---- a wall profile alone, at 500 Hz
pe_start $P/p_wall_perf 5 || exit 1
pe_get '/profile_wall?duration=3&delay=0.002' -o $T/a.pb.gz
comments $T/a.pb.gz | sed 's/^/  /'
if comments $T/a.pb.gz | grep -q 'perf events not used'; then
    why=$(comments $T/a.pb.gz | grep 'perf events not used')
    pe_stop
    echo "skip: perf events are refused here ($why)"
    exit 77
fi
wait $PE_PID; st=$?; PE_PID=
check "wall by perf: the program exits 0 with no SIGPROF pending in any thread ($st, $(cat $PE_OUT))" \
    grep -q "^0 pending=0 eintr=0" <(echo "$st $(cat $PE_OUT)")
check "wall by perf: no signal sent" grep -q ', 0 signals sent' <(comments $T/a.pb.gz)
check "wall by perf: said so" grep -q 'running threads from perf events (no signal)' <(comments $T/a.pb.gz)
spin=$(count_cum $T/a.pb.gz wall_spin -tagfocus=capture=perf)
nap=$(count_cum $T/a.pb.gz wall_nap -tagfocus=capture=proc)
main=$(count_cum $T/a.pb.gz wall_main_wait -tagfocus=capture=proc)
echo "  running wall_spin (perf) $spin, blocked wall_nap (proc) $nap, wall_main_wait (proc) $main"
check "wall by perf: the running thread's frames, from perf ($spin)" [ "${spin:-0}" -ge 20 ]
check "wall by perf: the blocked threads' frames, from /proc ($nap, $main)" \
    [ "${nap:-0}" -ge 20 -a "${main:-0}" -ge 20 ]
check "wall by perf: no comment calls the threads unsampled while they run" \
    bash -c "! grep -q 'block SIGPROF' <(go tool pprof -raw $T/a.pb.gz 2>/dev/null)"

# ---- a CPU profile by perf events in the middle of a wall session, then the wall's own again
pe_start $P/p_wall_perf 6 || exit 1
pe_get '/profile_wall_start?delay=0.005' >/dev/null
pe_get '/profile?duration=1&delay=0.002' -o $T/c.pb.gz
sleep 1
pe_get '/profile_wall_stop' -o $T/b.pb.gz
wait $PE_PID; st=$?; PE_PID=
check "wall, a CPU profile inside: the CPU profile by perf" grep -q 'engine: perf' <(comments $T/c.pb.gz)
check "wall, a CPU profile inside: no SIGPROF pending anywhere ($st, $(cat $PE_OUT))" \
    grep -q "^0 pending=0 eintr=0" <(echo "$st $(cat $PE_OUT)")
check "wall, a CPU profile inside: no signal sent" grep -q ', 0 signals sent' <(comments $T/b.pb.gz)
spin=$(count_cum $T/b.pb.gz wall_spin -tagfocus=capture=perf)
check "wall, a CPU profile inside: the running thread's frames ($spin)" [ "${spin:-0}" -ge 20 ]

# ---- PROFEP_CPU_ENGINE=timer: the running threads are signalled (the program sees it)
PE_ENV="PROFEP_CPU_ENGINE=timer" pe_start $P/p_wall_perf 3 || exit 1
pe_get '/profile_wall?duration=1&delay=0.002' -o $T/t.pb.gz
wait $PE_PID; st=$?; PE_PID=
check "PROFEP_CPU_ENGINE=timer: running threads signalled, saying why" \
    grep -q 'perf events not used: PROFEP_CPU_ENGINE=timer' <(comments $T/t.pb.gz)
check "PROFEP_CPU_ENGINE=timer: the program saw SIGPROF pending ($(cat $PE_OUT))" \
    bash -c "! grep -q '^pending=0' $PE_OUT"

pe_finish
