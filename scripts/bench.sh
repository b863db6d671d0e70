#!/usr/bin/env bash
# bench.sh: `make bench`.  Every figure is measured side by side with its
# baseline in the same run and reported as a ratio; nothing here passes or
# fails.  Module benchmarks (scripts/bench_*.sh) follow the core's.
set -u
BUILD=${1:-build}
export BUILD
LIB=$PWD/$BUILD/libprofendpoints.so
scripts/deps.sh bench || echo "bench: baselines' packages missing; their rows will say so"

now_ns() { date +%s%N; }
runs=300
echo "== start-up: /bin/true x$runs, without and with the library (PROFEP_ADDR=127.0.0.1:0)"
t0=$(now_ns); for _ in $(seq $runs); do /bin/true; done; t1=$(now_ns)
for _ in $(seq $runs); do PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB /bin/true 2>/dev/null; done; t2=$(now_ns)
base=$(( (t1 - t0) / runs / 1000 )); ours=$(( (t2 - t1) / runs / 1000 ))
awk -v b=$base -v o=$ours 'BEGIN { printf "  per run: %d us without, %d us with; ratio %.2f (+%d us)\n", b, o, o / b, o - b }'

echo "== idle resident memory: p_sleep without and with the library, after 1 s"
rss() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
$BUILD/test/p_sleep 3 0 >/dev/null & p0=$!
PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $BUILD/test/p_sleep 3 0 >/dev/null 2>&1 & p1=$!
sleep 1
r0=$(rss $p0); r1=$(rss $p1)
awk -v a=$r0 -v b=$r1 'BEGIN { printf "  VmRSS: %d KiB without, %d KiB with; ratio %.2f (+%d KiB)\n", a, b, b / a, b - a }'
wait $p0 $p1

for b in scripts/bench_*.sh; do
    [ -f "$b" ] || continue
    echo
    echo "== $b (load average $(cut -d' ' -f1-3 /proc/loadavg): the machine may be shared; see each A/A floor)"
    bash "$b" "$BUILD"
done
