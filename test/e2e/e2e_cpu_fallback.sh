#!/usr/bin/env bash
# e2e_cpu_fallback: perf events refused, the timer engine answers and the
# profile says why (sampler/engine_perf.c's reasons, sampler/sampler.c's
# "engine:" comment), with the 75/25 split program still measured roughly:
#   - perf_event_open answering EPERM (strace's fault injection: no seccomp
#     filter, so the library profiles): "perf_event_open: EPERM, operation not
#     permitted";
#   - kernel.perf_event_paranoid 3 (set here, restored on every exit) and the
#     program run as nobody: "perf_event_open: EACCES" where the kernel
#     honours 3 (Debian's); skipped where it does not (a vanilla kernel treats
#     3 as 2);
#   - a launcher whose seccomp filter answers perf_event_open with EPERM
#     (test/progs/p_seccomp_noperf.c), PROFEP_SECCOMP=serve: as documented
#     (README, docs/HARDENING.md), a process started under a filter serves
#     with CPU profiling off, since a filter may kill it on timer_create: 503
#     saying so, and the program runs on unharmed (PROFEP_SECCOMP=try, which
#     profiles there, is e2e_cpu_seccomp's).
# run.sh: alone (sets kernel.perf_event_paranoid machine-wide: refuses other tests' perf events)
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }
split_pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + b == 0) print -1; else printf "%.1f", 100 * a / (a + b) }'; }
# roughly: the timer engine on a shared 2-core machine, not the perf engine's 3 points
rough75() { awk -v p="$1" 'BEGIN { exit !(p >= 65 && p <= 85) }'; }

# start_any DIR CMD...: CMD in the background (PE_PID: its first process,
# maybe a tracer or runuser), the library's port file from whichever process
# serves (SRV_PID, named by the file); stop_any ends both
SRV_PID=
start_any() {
    local d=$1 pf; shift
    mkdir -p "$d"
    PE_OUT=$d/out PE_ERR=$d/err
    "$@" >"$PE_OUT" 2>"$PE_ERR" &
    PE_PID=$!
    for _ in $(seq 200); do
        pf=$(ls "$d"/port.* 2>/dev/null | head -1)
        [ -n "$pf" ] && [ -s "$pf" ] && break
        sleep 0.05
    done
    [ -n "$pf" ] && [ -s "$pf" ] || { echo "no port file from $*; stderr:"; cat "$PE_ERR"; return 1; }
    PE_ADDR=$(cat "$pf")
    SRV_PID=${pf##*/port.}
}
stop_any() {
    [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
    SRV_PID=
    pe_stop
}
# timer_fallback NAME REASON-ERE: the CPU profile answers 200 with samples,
# from the timer engine, saying REASON, and the split is roughly 75/25
timer_fallback() {
    local n=$1 why=$2 st three one pct
    st=$(pe_fetch '/debug/pprof/profile?seconds=2' $T/$n.pb.gz)
    comments $T/$n.pb.gz | sed 's/^/  /'
    check "$n: /debug/pprof/profile answers 200 ($st)" [ "$st" = 200 ]
    check "$n: the timer engine produced it, saying why" \
        grep -Eq "engine: timer .*perf events not used: $why" <(comments $T/$n.pb.gz)
    three=$(count_cum $T/$n.pb.gz cpu_three_quarters); one=$(count_cum $T/$n.pb.gz cpu_one_quarter)
    pct=$(split_pct "${three:-0}" "${one:-0}")
    echo "  $n: three=$three one=$one ($pct%)"
    check "$n: samples in both workers' functions" [ "${three:-0}" -ge 10 -a "${one:-0}" -ge 3 ]
    check "$n: the split is roughly 75/25 ($pct%)" rough75 "$pct"
}

# ---- perf_event_open answers EPERM (injected by strace; every other call untouched)
if command -v strace >/dev/null; then
    start_any $T/st strace -f -qq -o /dev/null -e trace=perf_event_open \
        -e inject=perf_event_open:error=EPERM \
        env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/st/port.%p" LD_PRELOAD="$LIB" \
        $P/p_cpu_split 30 0.4 || exit 1
    timer_fallback eperm 'perf events refused \(perf_event_open: EPERM, operation not permitted'
    stop_any
else
    echo "skip: no strace (its fault injection makes perf_event_open answer EPERM)"
fi

# ---- kernel.perf_event_paranoid 3, the program as nobody
PARANOID_OLD=
restore_paranoid() {
    [ -n "$PARANOID_OLD" ] && sysctl -qw kernel.perf_event_paranoid="$PARANOID_OLD"
    PARANOID_OLD=
}
trap '[ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null; restore_paranoid; pe_cleanup' EXIT
trap 'exit 1' INT TERM HUP
old=$(sysctl -n kernel.perf_event_paranoid 2>/dev/null)
if [ "$(id -u)" = 0 ] && [ -n "$old" ] && id nobody >/dev/null 2>&1 &&
    PARANOID_OLD=$old && sysctl -qw kernel.perf_event_paranoid=3 2>/dev/null; then
    # the library and the program where nobody can read them, a directory it can write
    mkdir -p $T/nb/run && cp "$LIB" $P/p_cpu_split $T/nb/ && chmod 755 $T $T/nb $T/nb/* &&
        chown nobody $T/nb/run
    start_any $T/nb/run runuser -u nobody -- env PROFEP_ADDR=127.0.0.1:0 \
        PROFEP_PORT_FILE="$T/nb/run/port.%p" LD_PRELOAD=$T/nb/libprofendpoints.so \
        $T/nb/p_cpu_split 30 0.4 || { restore_paranoid; exit 1; }
    st=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/nb.pb.gz)
    if [ "$st" = 200 ] && grep -q 'engine: perf' <(comments $T/nb.pb.gz); then
        restore_paranoid
        echo "skip: this kernel lets nobody open perf events at perf_event_paranoid 3 (it treats 3 as 2)"
    else
        timer_fallback paranoid3 'perf events refused \(perf_event_open: EACCES, permission denied'
        restore_paranoid
    fi
    stop_any
    check "kernel.perf_event_paranoid is back at $old" [ "$(sysctl -n kernel.perf_event_paranoid)" = "$old" ]
else
    PARANOID_OLD=
    echo "skip: kernel.perf_event_paranoid cannot be set here (not root, or read-only)"
fi

# ---- a launcher's seccomp filter refusing perf_event_open, PROFEP_SECCOMP=serve
# (the launcher itself runs without the library: LD_PRELOAD is for what it execs)
start_any $T/sc env LD_PRELOAD= $P/p_seccomp_noperf env PROFEP_ADDR=127.0.0.1:0 \
    PROFEP_PORT_FILE="$T/sc/port.%p" LD_PRELOAD="$LIB" PROFEP_SECCOMP=serve \
    $P/p_cpu_split 30 0.4 || exit 1
check "seccomp launcher: the program runs under its filter" \
    grep -q '^Seccomp:[[:space:]]*2' /proc/$PE_PID/status
st=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/sc.txt)
check "seccomp launcher, PROFEP_SECCOMP=serve: CPU profiling off as documented, 503 saying why ($st $(cat $T/sc.txt))" \
    grep -q '^503 .*started under a seccomp filter' <(echo "$st $(cat $T/sc.txt)")
check "seccomp launcher: the server answers otherwise" [ "$(pe_status /debug/pprof/heap)" = 200 ]
check "seccomp launcher: the program runs on" kill -0 $PE_PID
stop_any
pe_finish
