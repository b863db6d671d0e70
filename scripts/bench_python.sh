#!/usr/bin/env bash
# bench_python.sh: the cost of CPU profiling Debian's CPython 3.11 at 100 Hz (and 1000 Hz),
# as ratios (never pass/fail): a CPU-bound Python program (recursive fib under
# four more frames: Python stacks up to ~37 deep) run to completion with no
# profiler, with ours profiling it all along (/profile_start at delay=0.01,
# so every sample also reads its Python frames), and with gperftools'
# libprofiler.so at 100 Hz (which names no Python function).  Median of
# interleaved runs; process CPU seconds from the program's own view.  Then the
# Python part of one sample alone, in an embedded CPython (test/bench/bench_python.c):
# what the handler adds (thread state, frames, merge) and what the collector
# adds (names), beside the cost of one process_vm_readv on this machine.
# Usage: scripts/bench_python.sh BUILD
set -u
source "${BASH_SOURCE%/*}/bench_lib.sh"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
PY=/usr/bin/python3
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
[ -x $PY ] || { echo "  no $PY: skipped"; exit 0; }
T=$(mktemp -d /tmp/pe-bench-py.XXXXXX)
trap 'rm -rf $T; [ -n "${PID:-}" ] && kill $PID 2>/dev/null' EXIT
cat >$T/work.py <<'PYEOF'
import os, sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def deep(d):
    return deep(d - 1) if d else fib(int(sys.argv[2]))
def main():
    time.sleep(float(sys.argv[1]))  # time for the profiler to start
    w, c = time.time(), time.process_time()
    deep(4)
    while len(sys.argv) > 3:  # "forever": for the sampling-rate run
        deep(4)
    print("%.4f %.4f" % (time.time() - w, time.process_time() - c))
main()
PYEOF
N=${BENCH_PY_FIB:-32}
WAIT=0.6
RUNS=${BENCH_PY_RUNS:-5}

run_ours() { # delay
    local pf=$T/port.$RANDOM
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB $PY $T/work.py $WAIT $N \
        >$T/out 2>/dev/null &
    PID=$!
    for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
    curl -s -o /dev/null "http://$(cat $pf)/profile_start?delay=$1"
    wait $PID; PID=
    cat $T/out
}

compare() { # delay hz
    local none=() ours=() gp=() nonec=() oursc=() gpc=() w c mn mo cn co mg cg
    echo "== python3 fib($N) under 4 more frames at $2 Hz: wall s and CPU s of the Python work (median of $RUNS interleaved runs)"
    for i in $(seq $RUNS); do
        read -r w c < <($PY $T/work.py $WAIT $N); none+=($w); nonec+=($c)
        read -r w c < <(run_ours $1); ours+=($w); oursc+=($c)
        if [ -n "$GPERF" ]; then
            read -r w c < <(CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=$2 LD_PRELOAD=$GPERF \
                $PY $T/work.py $WAIT $N 2>/dev/null)
            gp+=($w); gpc+=($c)
        fi
    done
    mn=$(median "${none[@]}"); mo=$(median "${ours[@]}"); cn=$(median "${nonec[@]}"); co=$(median "${oursc[@]}")
    awk -v n=$mn -v o=$mo -v cn=$cn -v co=$co -v hz=$2 'BEGIN {
        printf "  none        wall %.3f s  cpu %.3f s\n", n, cn
        printf "  ours        wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
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
}
compare 0.01 100
compare 0.001 1000

echo "== one sample's Python part, in an embedded CPython (test/bench/bench_python.c), median of 5"
PYCFG=/usr/bin/python3.11-config
if [ -x $PYCFG ] && ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -g -I. -I$BUILD/gen $($PYCFG --includes) \
    -o $T/bench_python test/bench/bench_python.c $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a \
    -lcivetweb $($PYCFG --embed --ldflags) -ldl -lpthread -lm 2>/dev/null; then
    for depth in 5 40; do
        for i in 1 2 3 4 5; do $T/bench_python $depth 5000 2>/dev/null; done |
            awk -v d=$depth '{ a[NR] = $6; b[NR] = $10; c[NR] = $8; py = $2 }
                function med(x, n,  i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                    if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t } return x[int((n + 1) / 2)] }
                END { printf "  %d Python frames: handler +%.1f us (thread state, frames read a page at a time, merge); collector +%.1f us (names cached), %.0f us the first time\n",
                      py, med(a, NR) / 1000, med(b, NR) / 1000, med(c, NR) / 1000 }'
    done
    ${CC:-cc} -O2 -o $T/sc -x c - <<'CEOF' 2>/dev/null && $T/sc
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(void) {
    char a[64], b[64]; struct iovec l = {b, 64}, r = {a, 64}; pid_t p = getpid(); long t = ns();
    for (int i = 0; i < 20000; i++) process_vm_readv(p, &l, 1, &r, 1, 0);
    printf("  (one process_vm_readv here: %.1f us; the handler's Python part is about 3 of them)\n", (ns() - t) / 20000 / 1000.0);
    return 0;
}
CEOF
else
    echo "  python3.11-dev not installed (scripts/deps.sh python): skipped"
fi

echo "== the same program profiled at delay=0.001 for 3 s"
pf=$T/port.k
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB $PY $T/work.py 0.3 $N forever \
    >/dev/null 2>&1 &
PID=$!
for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
sleep 0.35
curl -s -o $T/k.txt "http://$(cat $pf)/profile?delay=0.001&duration=3&format=folded"
kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
awk '{ n += $NF; if ($0 ~ /;fib/) f += $NF; d = split($1, a, ";"); if ($0 ~ /;fib/) { fr += d * $NF } }
    END { if (n) printf "  %.1f%% of CPU time has Python frames (fib), average stack %.0f frames\n",
              100 * f / n, f ? fr / f : 0 }' $T/k.txt
