#!/usr/bin/env bash
# bench_perf.sh: the CPU engines side by side, in one run, measured, never pass/fail:
# the 2-thread CPU-bound workload of bench_cpu (test/bench/bench_cpu.c "work")
# with no library (twice: the A/A noise floor), with ours under the perf engine (PROFEP_CPU_ENGINE=perf),
# ours under the timer engine (PROFEP_CPU_ENGINE=timer), and gperftools'
# libprofiler.so, each at 100 and 1000 Hz, in RUNS rounds (order rotated);
# beside them "floor": no library, each worker samples itself with a perf
# event that records only its thread id (bench_cpu's BENCH_FLOOR_HZ): what the
# kernel charges for that many perf samples whoever reads them; floorstack:
# the same with an 8 KiB copy of the user stack in each sample, as the perf
# engine asks (what the copy adds to the kernel's interrupt); and perf250,
# the perf engine at the rate the timer engine really delivers when asked for
# 1000 Hz on a kernel of HZ=250 (POSIX CPU timers fire from the scheduler
# tick: the overruns are weighted); and lib, ours preloaded with no profile
# running (its server and threads idle).  The last lines: samples a second each
# engine delivered at 1000 Hz, read from a profile's comment.
# Shown: the process CPU and wall ratios against the same round's no-library
# run (median [25-75%]), and what our collector thread used (ms of CPU per s
# of the workload, wake-ups per s); the program's own threads spend nothing in
# our code under the perf engine (no handler runs in them), so what it costs
# is the collector's CPU plus the kernel's sampling.
# Usage: scripts/bench_perf.sh BUILD   (BENCH_PERF_RUNS, BENCH_PERF_ITERS to change the size)
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
T=$(mktemp -d /tmp/pe-bench-perf.XXXXXX)
trap 'rm -rf $T; [ -n "${PID:-}" ] && kill $PID 2>/dev/null' EXIT
B=$T/bench_cpu
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -I. -I$BUILD/gen -o $B \
    test/bench/bench_cpu.c $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm ||
    { echo "bench_perf: build failed"; exit 1; }
ITERS=${BENCH_PERF_ITERS:-1000000000}
RUNS=${BENCH_PERF_RUNS:-5}
WAIT=0.6

# stats FILE: "median p25 p75" of the numbers in FILE
stats() {
    sort -g "$1" | awk '{ a[NR] = $1 } END { if (!NR) { print "0 0 0"; exit }
        print a[int((NR + 1) / 2)], a[1 + int((NR - 1) * 0.25)], a[1 + int((NR - 1) * 0.75 + 0.5)] }'
}
# one K: run configuration K (none, perf100, timer1000, gp100, ...) once
one() {
    local k=$1 hz engine w c pf
    hz=${k//[a-z]/}; engine=${k//[0-9]/}
    case $engine in
    none | aa) read -r w c < <($B work $WAIT $ITERS) ;;
    floor) read -r w c < <(BENCH_FLOOR_HZ=$hz $B work $WAIT $ITERS) ;;
    floorstack) read -r w c < <(BENCH_FLOOR_HZ=$hz BENCH_FLOOR_STACK=8192 $B work $WAIT $ITERS) ;;
    lib) read -r w c < <(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $B work $WAIT $ITERS 2>/dev/null) ;;
    gp) read -r w c < <(CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=$hz LD_PRELOAD=$GPERF \
        $B work $WAIT $ITERS 2>/dev/null) ;;
    *)
        pf=$T/port.$RANDOM
        PROFEP_CPU_ENGINE=$engine PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB \
            $B work $WAIT $ITERS >$T/out 2>/dev/null &
        PID=$!
        for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
        curl -s -o /dev/null "http://$(cat $pf)/profile_start?delay=$(awk -v h=$hz 'BEGIN { print 1 / h }')"
        wait $PID; PID=
        read -r w c <$T/out
        read -r _ _ _ cc cw < <(grep '^library' $T/out)
        awk -v cc=${cc:-0} -v cw=${cw:-0} -v t=$w -v p=$T/$k 'BEGIN {
            printf "%.3f\n", 1000 * cc / t >>(p ".col.cpu"); printf "%.2f\n", cw / t >>(p ".col.wake") }' ;;
    esac
    echo "$w $c" >$T/$k.last
}
CONFIGS="none aa lib perf100 floor100 timer100${GPERF:+ gp100} perf250 perf1000 floor1000 floorstack1000 timer1000${GPERF:+ gp1000}"
echo "== 2-thread CPU-bound workload: $RUNS rounds of: $CONFIGS (order rotated each round)"
for i in $(seq $RUNS); do
    set -- $CONFIGS; n=$#
    for j in $(seq 0 $((n - 1))); do set -- $CONFIGS; shift $(( (i + j) % n )); one $1; done
    read -r nw nc <$T/none.last
    for k in $CONFIGS; do
        [ $k = none ] && continue
        read -r w c <$T/$k.last
        awk -v nw=$nw -v nc=$nc -v w=$w -v c=$c -v p=$T/$k 'BEGIN { print c / nc >>(p ".cr"); print w / nw >>(p ".wr") }'
    done
done
printf "  %-14s %-30s %-30s %s\n" config "process CPU / none [25-75%]" "wall / none [25-75%]" "collector: ms CPU/s, wake-ups/s"
for k in $CONFIGS; do
    [ $k = none ] && continue
    read -r cm clo chi < <(stats $T/$k.cr); read -r wm wlo whi < <(stats $T/$k.wr)
    col="-"
    if [ -s $T/$k.col.cpu ]; then
        read -r ccm _ < <(stats $T/$k.col.cpu); read -r cwm _ < <(stats $T/$k.col.wake)
        col="$ccm ms/s, $cwm/s"
    fi
    awk -v k=$k -v cm=$cm -v clo=$clo -v chi=$chi -v wm=$wm -v wlo=$wlo -v whi=$whi -v col="$col" 'BEGIN {
        printf "  %-14s %+6.2f%% [%+6.2f%%, %+6.2f%%]       %+6.2f%% [%+6.2f%%, %+6.2f%%]       %s\n",
            k, 100 * (cm - 1), 100 * (clo - 1), 100 * (chi - 1), 100 * (wm - 1), 100 * (wlo - 1), 100 * (whi - 1), col }'
done
# samples a second a running thread gets at 1000 Hz (samples / weight: the
# timer's overruns are weighted), from one profile of 2 s each
if command -v go >/dev/null; then
    for engine in timer perf; do
        pf=$T/port.$RANDOM
        PROFEP_CPU_ENGINE=$engine PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB \
            $B work $WAIT $((ITERS * 4)) >/dev/null 2>&1 &
        PID=$!
        for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
        curl -s -o $T/p.pb.gz "http://$(cat $pf)/profile?duration=2&delay=0.001&format=pprof"
        kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
        go tool pprof -comments $T/p.pb.gz 2>/dev/null | awk -v e=$engine '/^cpu: / {
            printf "  %-6s engine asked for 1000 Hz: %.0f samples a second of a running thread (%s samples, weight %s)\n",
                e, $5 ? 1000 * $2 / $5 : 0, $2, $5 }'
    done
fi
[ -n "$GPERF" ] || echo "  gperftools: libprofiler.so not installed (scripts/deps.sh bench)"
