#!/usr/bin/env bash
# e2e_host_proc: the program's process events under the library (issue 15):
#  - exec while a 1000 Hz wall-clock profile runs, with 1.6 MB of arguments
#    and from a non-main thread: the new image is not killed by our SIGPROF;
#  - vfork+exec during a CPU profile: no timer left, samples not inflated;
#  - fork children dlopen/dlclose while threads allocate at heap rate 1:
#    none hangs on an unwinder pin;
#  - SIGHUP ignored at start (nohup) with PROFEP_PEEK_SIGNAL=HUP: children of
#    system(), popen() and posix_spawn keep it ignored (PROFEP_CHILDREN=off:
#    a child with the library would take the peek signal itself); the peek
#    still works;
#  - signal/sigset refuse SIG_ERR;
#  - the process rows (test/progs/p_host_*: clone, spawn, system, vfork, exec) under
#    CPU and wall-clock profiles: exit 0, no timers left.
source test/e2e/lib.sh
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
ntimers() { grep -c '^ID:' /proc/$1/timers 2>/dev/null; }
no_timers() { [ "$(ntimers $1)" = 0 ]; }

# run_row PROG [VAR=value...]: run a row with stdin at EOF (it exits once done); prints its status
run_row() {
    local prog=$1; shift
    timeout -s KILL 100 env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" \
        "$@" $P/$prog </dev/null >$T/$prog.out 2>$T/$prog.err
    echo $?
}
# start_row PROG [VAR=value...]: start a row whose stdin stays open until stop_row; sets PE_PID, PE_ADDR
start_row() {
    local prog=$1 pf; shift
    rm -f $T/in; mkfifo $T/in
    PE_OUT=$T/$prog.out PE_ERR=$T/$prog.err
    env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" "$@" $P/$prog \
        <$T/in >$PE_OUT 2>$PE_ERR &
    PE_PID=$!
    exec 7>$T/in # the row's stdin: EOF once closed
    pf=$T/port.$PE_PID
    for _ in $(seq 200); do [ -s "$pf" ] && break; sleep 0.05; done
    PE_ADDR=$(cat "$pf" 2>/dev/null)
}
# wait_done: until the row says HOST-ROW-DONE or exits (60 s at most)
wait_done() {
    for _ in $(seq 600); do
        grep -q HOST-ROW-DONE $PE_OUT 2>/dev/null && return 0
        kill -0 $PE_PID 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
# stop_row: EOF on its stdin; sets rc to its exit status (not in a subshell: it waits)
stop_row() {
    exec 7>&-
    ( sleep 20; kill -9 $PE_PID 2>/dev/null ) & local g=$!
    wait $PE_PID; rc=$?
    kill $g 2>/dev/null; wait $g 2>/dev/null
    PE_PID=
}

# ---- 1. exec while a wall-clock profile runs ----------------------------------------
for prog in p_host_exec_huge p_host_exec_thread; do
    n=0 good=0
    for _ in 1 2 3; do
        rc=$(run_row $prog PE_ROW_SELF_WALL=1 PE_ROW_GENS=3)
        n=$((n + 1))
        if [ "$rc" = 0 ] && grep -q HOST-ROW-DONE $T/$prog.out; then good=$((good + 1)); else
            echo "  $prog: exit $rc"; grep -v serving $T/$prog.err | head -3; fi
    done
    check "$prog: 3 execs each inside a 1000 Hz wall profile, $good of $n runs lived" [ $good = $n ]
done

# the same inside CPU profiles at 1000 Hz (timer signals at exec) and stack captures
for path in '/profile?duration=1&delay=0.001' '/debug/pprof/goroutine?debug=2'; do
    rc=$(run_row p_host_exec_thread PE_ROW_SELF_WALL=1 PE_ROW_SELF_PATH="$path" PE_ROW_GENS=3)
    check "p_host_exec_thread: 3 execs each inside $path (exit $rc)" [ "$rc" = 0 ]
done

# ---- 2. vfork + exec during a CPU profile ---------------------------------------------
start_row p_host_vfork PE_ROW_SECONDS=5
c0=$(proc_cpu_ticks $PE_PID)
st=$(pe_get '/profile?duration=3' -o $T/vfork.pb.gz -w '%{http_code}')
c1=$(proc_cpu_ticks $PE_PID)
eventually 5 no_timers $PE_PID
nt=$(ntimers $PE_PID)
check "vfork loop profiled ($st)" [ "$st" = 200 ]
check "no POSIX timer left after the profile ($nt)" [ "$nt" = 0 ]
s=$(count_total $T/vfork.pb.gz); ticks=$((c1 - c0))
echo "  samples $s, CPU ticks during the profile $ticks"
check "samples not inflated ($s samples for $ticks ticks of 10 ms)" \
    [ "${s:-0}" -gt 0 -a "${s:-0}" -le $((ticks * 3 / 2 + 30)) ]
wait_done; stop_row
check "vfork row: every child's status right (exit $rc)" [ "$rc" = 0 ]

# ---- 3. fork children dlopen/dlclose while threads allocate (heap rate 1) -------------------
rc=$(run_row p_host_fork_dlopen PROFEP_HEAP_RATE=1 PE_ROW_CHILDREN=100)
grep -v serving $T/p_host_fork_dlopen.err | sed 's/^/  /'
check "2 x 100 fork children (dlopen/dlclose; then a thread in the loader) at heap rate 1, none hung (exit $rc)" [ "$rc" = 0 ]

# ---- 5. ignored SIGHUP handed on through system, popen, posix_spawn ----------------------
for prog in p_host_system p_host_spawn; do
    rm -f $T/in; mkfifo $T/in
    PE_OUT=$T/$prog.out PE_ERR=$T/$prog.err
    ( trap "" HUP; exec env PROFEP_CHILDREN=off PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" \
        PROFEP_PEEK_SIGNAL=HUP PROFEP_PEEK_SECONDS=0.2 PE_ROW_SECONDS=1 $P/$prog \
        <$T/in >$PE_OUT 2>$PE_ERR ) &
    PE_PID=$!
    exec 7>$T/in
    wait_done
    check "$prog under nohup: children survive the SIGHUP they ignore" \
        grep -q 'SIGHUP ignored: checked' $PE_ERR
    kill -HUP $PE_PID
    for _ in $(seq 100); do grep -q 'peek done' $PE_ERR && break; sleep 0.1; done
    check "$prog: the peek still answers SIGHUP afterwards" grep -q 'peek done' $PE_ERR
    stop_row
    check "$prog under nohup: exit $rc" [ "$rc" = 0 ]
    [ "$rc" = 0 ] || grep -v serving $PE_ERR | head -5
done

# ---- 8. SIG_ERR refused ---------------------------------------------------------------
out=$(PROFEP_SERVER=off LD_PRELOAD="$LIB" $P/p_proc_sigerr)
check "signal/bsd_signal/ssignal/sigset refuse SIG_ERR ($out)" [ "$out" = "sigerr ok" ]

# ---- the process rows under CPU and wall-clock profiles --------------------------------
for prog in p_host_clone p_host_spawn p_host_system p_host_vfork p_host_fork_dlopen; do
    start_row $prog PE_ROW_SECONDS=2 PE_ROW_CHILDREN=40
    pe_status '/profile?duration=2&delay=0.001' -o /dev/null >$T/st1 &
    p1=$!
    st2=$(pe_status '/profile_wall?duration=2&delay=0.005' -o /dev/null)
    wait $p1
    pe_status '/debug/pprof/goroutine?debug=2' -o /dev/null >/dev/null
    wait_done
    eventually 5 no_timers $PE_PID
    nt=$(ntimers $PE_PID)
    stop_row
    check "$prog under CPU ($(cat $T/st1)) and wall ($st2) profiles: exit $rc, $nt timers left" \
        [ "$rc" = 0 -a "$nt" = 0 ]
    [ "$rc" = 0 ] || grep -v serving $T/$prog.err | head -5
done

pe_finish
