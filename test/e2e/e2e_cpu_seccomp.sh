#!/usr/bin/env bash
# e2e_cpu_seccomp: a program started under a seccomp filter that answers
# EPERM (as Docker's default profile does), from a launcher
# (test/progs/p_seccomp_exec.c) that refuses perf_event_open, and with -t
# timer_create too, then execs the 75/25 split program with the library:
#   - PROFEP_SECCOMP unset (dormant): no server, one line naming the setting;
#   - PROFEP_SECCOMP=serve: CPU profiling off, 503 naming PROFEP_SECCOMP=try;
#   - PROFEP_SECCOMP=try: the timer engine answers with samples of the
#     workers, its comment naming the perf refusal (sampler/seccomp.c);
#   - PROFEP_SECCOMP=try, timer_create refused too: 503 saying so;
#   - PROFEP_SECCOMP=try under a filter that refuses nothing (-n), with
#     kernel.perf_event_paranoid 3 (root only: set here, restored on every
#     exit) and the program as nobody: the timer engine, naming EACCES
#     (skipped where the kernel treats 3 as 2);
# and in every case the program's output and exit status are its own.
# run.sh: alone (sets kernel.perf_event_paranoid machine-wide: refuses other tests' perf events)
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl
[ -x "$P/p_seccomp_exec" ] || { echo "skip: $P/p_seccomp_exec not built"; exit 77; }

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }

# run NAME SECONDS SETTING [-t]: the split program under the launcher's
# filter (the launcher and env exec: PE_PID is the program), PE_ADDR once
# its server answers (none when dormant)
run() {
    local n=$1 secs=$2 setting=$3 pf; shift 3
    PE_OUT=$T/$n.out PE_ERR=$T/$n.err PE_ADDR=
    env LD_PRELOAD= "$P/p_seccomp_exec" "$@" env PROFEP_ADDR=127.0.0.1:0 \
        PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" ${setting:+PROFEP_SECCOMP=$setting} \
        "$P/p_cpu_split" "$secs" 0.3 >"$PE_OUT" 2>"$PE_ERR" &
    PE_PID=$!
    [ "$setting" ] || return 0
    pf=$T/port.$PE_PID
    for _ in $(seq 200); do [ -s "$pf" ] && break; sleep 0.05; done
    [ -s "$pf" ] || { echo "no port file ($n); stderr:"; cat "$PE_ERR"; return 1; }
    PE_ADDR=$(cat "$pf")
}
# unchanged NAME: the program ends by itself, status 0 and "done" as without us
unchanged() {
    wait "$PE_PID"; local st=$?
    PE_PID=
    check "$1: the program's output and exit status are its own (status $st, out '$(cat $T/$1.out)')" \
        [ "$st" = 0 -a "$(cat $T/$1.out)" = done ]
}

# ---- PROFEP_SECCOMP unset: dormant, one line naming the setting
run dormant 2 ""
sleep 0.5
check "dormant: the program runs under the launcher's filter" \
    grep -q '^Seccomp:[[:space:]]*2' /proc/$PE_PID/status
unchanged dormant
check "dormant: no server (no port file)" [ -z "$(ls $T/port.* 2>/dev/null)" ]
sed 's/^/  /' $T/dormant.err
check "dormant: one line naming PROFEP_SECCOMP=try" grep -q 'started under a seccomp filter.*PROFEP_SECCOMP=serve.*=try' $T/dormant.err

# ---- serve: CPU profiling off, 503 naming the setting
run serve 3 serve || exit 1
st=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/serve.txt)
echo "  $st $(cat $T/serve.txt)"
check "serve: the CPU profile answers 503 naming PROFEP_SECCOMP=try ($st)" \
    grep -q '^503 .*started under a seccomp filter.*PROFEP_SECCOMP=try' <(echo "$st $(cat $T/serve.txt)")
check "serve: the line at start names PROFEP_SECCOMP=try" grep -q 'PROFEP_SECCOMP=try' $T/serve.err
check "serve: the heap profile answers" [ "$(pe_status /debug/pprof/heap)" = 200 ]
unchanged serve

# ---- try: perf_event_open refused, the timer engine answers saying why
run try 8 try || exit 1
st=$(pe_status '/debug/pprof/goroutine?debug=2')
check "try: thread stacks answer ($st)" [ "$st" = 200 ]
st=$(pe_fetch '/debug/pprof/profile?seconds=2' $T/try.pb.gz)
go tool pprof -raw $T/try.pb.gz >$T/try.raw 2>/dev/null
grep '^Comment:' $T/try.raw | sed 's/^/  /'
check "try: /debug/pprof/profile answers 200 ($st)" [ "$st" = 200 ]
check "try: the timer engine produced it, naming the perf refusal" \
    grep -Eq 'engine: timer .*perf events not used: perf events refused \(perf_event_open: EPERM' \
    $T/try.raw
check "try: no thread singled out as under a filter of its own" \
    bash -c "! grep -q 'seccomp filter of their own' $T/try.raw"
three=$(count_cum $T/try.pb.gz cpu_three_quarters); one=$(count_cum $T/try.pb.gz cpu_one_quarter)
echo "  try: three=$three one=$one"
check "try: samples in both workers' functions" [ "${three:-0}" -ge 10 -a "${one:-0}" -ge 3 ]
unchanged try

# ---- try, timer_create refused too: 503 saying why
run notimer 3 try -t || exit 1
st=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/notimer.txt)
echo "  $st $(cat $T/notimer.txt)"
check "try, no timers: the CPU profile answers 503 naming timer_create ($st)" \
    grep -q '^503 .*seccomp filter refuses timer_create' <(echo "$st $(cat $T/notimer.txt)")
check "try, no timers: the heap profile answers" [ "$(pe_status /debug/pprof/heap)" = 200 ]
unchanged notimer

# ---- try, perf refused by kernel.perf_event_paranoid 3 (root sets it; nobody runs)
PARANOID_OLD=
restore_paranoid() {
    [ -n "$PARANOID_OLD" ] && sysctl -qw kernel.perf_event_paranoid="$PARANOID_OLD"
    PARANOID_OLD=
}
trap 'restore_paranoid; pe_cleanup' EXIT
trap 'exit 1' INT TERM HUP
old=$(sysctl -n kernel.perf_event_paranoid 2>/dev/null)
if [ "$(id -u)" = 0 ] && [ -n "$old" ] && id nobody >/dev/null 2>&1 &&
    PARANOID_OLD=$old && sysctl -qw kernel.perf_event_paranoid=3 2>/dev/null; then
    nb=$T/nb
    mkdir -p $nb/run && cp "$LIB" $P/p_cpu_split $P/p_seccomp_exec $nb/ && chmod 755 $T $nb $nb/* &&
        chown nobody $nb/run
    PE_OUT=$T/paranoid.out PE_ERR=$T/paranoid.err
    runuser -u nobody -- env LD_PRELOAD= $nb/p_seccomp_exec -n env PROFEP_ADDR=127.0.0.1:0 \
        PROFEP_PORT_FILE="$nb/run/port.%p" LD_PRELOAD=$nb/libprofendpoints.so PROFEP_SECCOMP=try \
        $nb/p_cpu_split 5 0.3 >"$PE_OUT" 2>"$PE_ERR" &
    PE_PID=$!
    for _ in $(seq 200); do
        pf=$(ls $nb/run/port.* 2>/dev/null | head -1)
        [ -n "$pf" ] && [ -s "$pf" ] && break
        sleep 0.05
    done
    PE_ADDR=$(cat "$pf" 2>/dev/null)
    st=$(pe_fetch '/debug/pprof/profile?seconds=2' $T/paranoid.pb.gz)
    restore_paranoid
    comments $T/paranoid.pb.gz >$T/paranoid.txt
    sed 's/^/  /' $T/paranoid.txt
    if [ "$st" = 200 ] && grep -q 'engine: perf' $T/paranoid.txt; then
        echo "skip: this kernel lets nobody open perf events at perf_event_paranoid 3 (it treats 3 as 2)"
    else
        check "paranoid 3, try: /debug/pprof/profile answers 200 ($st)" [ "$st" = 200 ]
        check "paranoid 3, try: the timer engine produced it, naming EACCES" \
            grep -Eq 'engine: timer .*perf events refused \(perf_event_open: EACCES' $T/paranoid.txt
        three=$(count_cum $T/paranoid.pb.gz cpu_three_quarters)
        check "paranoid 3, try: samples of the workers ($three)" [ "${three:-0}" -ge 10 ]
    fi
    unchanged paranoid
    check "kernel.perf_event_paranoid is back at $old" [ "$(sysctl -n kernel.perf_event_paranoid)" = "$old" ]
else
    PARANOID_OLD=
    echo "skip: kernel.perf_event_paranoid cannot be set here (not root, or read-only)"
fi
pe_finish
