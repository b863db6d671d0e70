#!/usr/bin/env bash
# bench_cpu.sh: CPU sampling figures, in one run, as ratios (never pass/fail):
#   1. wall time of a 2-thread CPU-bound workload: no library, ours at 100 Hz,
#      gperftools' libprofiler.so at 100 Hz (CPUPROFILE_FREQUENCY=100);
#   2. median cost of one sample (signal + unwind + store) at depth 30;
#   3. samples per CPU-second at delay=0.001 (signals, and signals + overruns).
# Usage: scripts/bench_cpu.sh BUILD
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
T=$(mktemp -d /tmp/pe-bench-cpu.XXXXXX)
trap 'rm -rf $T; [ -n "${PID:-}" ] && kill $PID 2>/dev/null' EXIT
export HOME=$T GOCACHE=$T/gocache GOTOOLCHAIN=local
B=$T/bench_cpu
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -I. -I$BUILD/gen -o $B \
    test/bench/bench_cpu.c $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm ||
    { echo "bench_cpu: build failed"; exit 1; }
ITERS=${BENCH_CPU_ITERS:-1500000000}
WAIT=0.6

start_ours() { # args...: start with the library, wait for its port; sets PID ADDR
    local pf=$T/port.$RANDOM
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB "$@" >$T/out 2>/dev/null &
    PID=$!
    for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
    ADDR=$(cat $pf)
}

RUNS=${BENCH_CPU_RUNS:-7}
echo "== 2-thread CPU-bound workload: wall s and process CPU s (median of $RUNS interleaved runs)"
none=() ours=() gp=() nonec=() oursc=() gpc=()
for i in $(seq $RUNS); do
    read -r w c < <($B work $WAIT $ITERS); none+=($w); nonec+=($c)
    start_ours $B work $WAIT $ITERS
    curl -s -o /dev/null "http://$ADDR/profile_start?delay=0.01"
    wait $PID; PID=
    read -r w c <$T/out; ours+=($w); oursc+=($c)
    if [ -n "$GPERF" ]; then
        read -r w c < <(CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=100 LD_PRELOAD=$GPERF $B work $WAIT $ITERS 2>/dev/null)
        gp+=($w); gpc+=($c)
    fi
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { print a[int((NR + 1) / 2)] }'; }
mn=$(med "${none[@]}"); mo=$(med "${ours[@]}"); cn=$(med "${nonec[@]}"); co=$(med "${oursc[@]}")
awk -v n=$mn -v o=$mo -v cn=$cn -v co=$co 'BEGIN {
    printf "  none        wall %.3f s  cpu %.3f s\n", n, cn
    printf "  ours@100Hz  wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
        o, co, o / n, 100 * (o / n - 1), co / cn, 100 * (co / cn - 1) }'
if [ -n "$GPERF" ]; then
    mg=$(med "${gp[@]}"); cg=$(med "${gpc[@]}")
    awk -v n=$mn -v g=$mg -v o=$mo -v cn=$cn -v cg=$cg 'BEGIN {
        printf "  gperftools  wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
            g, cg, g / n, 100 * (g / n - 1), cg / cn, 100 * (cg / cn - 1)
        printf "  ours/gperftools wall %.4f\n", o / g }'
else
    echo "  gperftools: libprofiler.so not installed (apt-get install libgoogle-perftools4)"
fi

echo "== one sample at stack depth 30 (tgkill to self -> handler -> unwind -> ring), median"
read -r s e < <($B sample 20000)
awk -v s=$s -v e=$e 'BEGIN { printf "  ours %d ns   empty handler %d ns   ratio %.2f; unwind+store %d ns\n", s, e, s / e, s - e }'

echo "== samples per CPU-second at delay=0.001 (1000 Hz asked; kernel HZ caps signals)"
start_ours $B work 0.3 $((ITERS * 2))
sleep 0.35
c0=$(awk '{print $14 + $15}' /proc/$PID/stat)
curl -s -o $T/k.pb.gz "http://$ADDR/profile?delay=0.001&duration=3"
c1=$(awk '{print $14 + $15}' /proc/$PID/stat)
kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
hz=$(getconf CLK_TCK)
line=$(go tool pprof -raw $T/k.pb.gz 2>/dev/null |
       sed -n 's/^Comment: cpu: \([0-9]*\) signals, weight \([0-9]*\) with.*/\1 \2/p')
read -r sig tot <<<"$line"
awk -v s=${sig:-0} -v t=${tot:-0} -v c=$((c1 - c0)) -v hz=$hz 'BEGIN {
    cs = c / hz; if (cs <= 0) { print "  no CPU measured"; exit }
    printf "  CPU used %.2f s: %.0f signals/CPU-s, %.0f samples/CPU-s with overruns; profile accounts for %.1f%% of CPU\n",
        cs, s / cs, t / cs, 100 * t / 1000 / cs }'
