#!/usr/bin/env bash
# bench_jit.sh: JIT code figures, as ratios where there is a baseline (never pass/fail):
#   1. node --perf-basic-prof running test/e2e/js/busy.js (fib + JSON.stringify, fixed
#      work): wall and CPU without a profiler, with ours at 100 Hz (names JIT
#      frames from the perf map) and with gperftools' libprofiler.so at 100 Hz
#      (names none of them);
#   2. loading a perf map of 1e6 entries, and one line appended to it (CPU time),
#      with the index's size (test/unit/u_jitmap prints them).
# Usage: scripts/bench_jit.sh BUILD
set -u
source "${BASH_SOURCE%/*}/bench_lib.sh"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
T=$(mktemp -d /tmp/pe-bench-jit.XXXXXX)
trap 'rm -rf $T; [ -n "${PID:-}" ] && kill $PID 2>/dev/null' EXIT
JS=$PWD/test/e2e/js/busy.js
cd $T # node --perf-basic-prof writes isolate-*-v8.log into its cwd
ROUNDS=${BENCH_JIT_ROUNDS:-1500}
WAIT=600
RUNS=${BENCH_JIT_RUNS:-5}

if command -v node >/dev/null; then
    echo "== node --perf-basic-prof busy.js ($ROUNDS rounds): wall s and CPU s, median of $RUNS interleaved runs"
    none=() nonec=() ours=() oursc=() gp=() gpc=() pids=()
    for _ in $(seq $RUNS); do
        node --perf-basic-prof $JS 0 $ROUNDS $WAIT >$T/out 2>/dev/null &
        PID=$!; wait $PID; pids+=($PID); PID=
        read -r w c <$T/out; none+=($w); nonec+=($c)
        pf=$T/port.$RANDOM
        PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB \
            node --perf-basic-prof $JS 0 $ROUNDS $WAIT >$T/out 2>/dev/null &
        PID=$!
        for _ in $(seq 500); do [ -s $pf ] && break; sleep 0.02; done
        # busy.js waits WAIT ms before its rounds, time enough to start the profile
        [ -s $pf ] && curl -s -o /dev/null "http://$(cat $pf)/profile_start?delay=0.01"
        wait $PID; pids+=($PID); PID=
        read -r w c <$T/out; ours+=($w); oursc+=($c)
        if [ -n "$GPERF" ]; then
            CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=100 LD_PRELOAD=$GPERF \
                node --perf-basic-prof $JS 0 $ROUNDS $WAIT >$T/out 2>/dev/null &
            PID=$!; wait $PID; pids+=($PID); PID=
            read -r w c <$T/out; gp+=($w); gpc+=($c)
        fi
    done
    rm -f $(for p in "${pids[@]}"; do echo /tmp/perf-$p.map; done) # node leaves its maps
    mn=$(median "${none[@]}"); mo=$(median "${ours[@]}"); cn=$(median "${nonec[@]}"); co=$(median "${oursc[@]}")
    awk -v n=$mn -v o=$mo -v cn=$cn -v co=$co 'BEGIN {
        printf "  none        wall %.3f s  cpu %.3f s\n", n, cn
        printf "  ours@100Hz  wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
            o, co, o / n, 100 * (o / n - 1), co / cn, 100 * (co / cn - 1) }'
    if [ -n "$GPERF" ]; then
        mg=$(median "${gp[@]}"); cg=$(median "${gpc[@]}")
        awk -v n=$mn -v g=$mg -v o=$mo -v cn=$cn -v cg=$cg -v co=$co 'BEGIN {
            printf "  gperftools  wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
                g, cg, g / n, 100 * (g / n - 1), cg / cn, 100 * (cg / cn - 1)
            printf "  ours/gperftools wall %.4f, cpu %.4f\n", o / g, co / cg }'
    else
        echo "  gperftools: libprofiler.so not installed (scripts/deps.sh bench)"
    fi
else
    echo "== node: not installed (scripts/deps.sh node)"
fi

echo "== a perf map of 1e6 entries (test/unit/u_jitmap; CPU time, the machine may be busy)"
cd - >/dev/null
if [ -x $BUILD/test/u_jitmap ]; then
    $BUILD/test/u_jitmap | sed -n 's/^1e6-entry map: /  /p'
else
    echo "  $BUILD/test/u_jitmap not built (make tests)"
fi
