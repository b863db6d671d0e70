#!/usr/bin/env bash
# bench.sh: `make bench`.  Every figure is measured side by side with its
# baseline in the same run and reported as a ratio; nothing here passes or
# fails.  Module benchmarks (scripts/bench_*.sh) follow the core's.
set -u
BUILD=${1:-build}
export BUILD
LIB=$PWD/$BUILD/libprofendpoints.so
scripts/deps.sh bench || echo "bench: baselines' packages missing; their rows will say so"

runs=300
echo "== start-up: /bin/true x$runs, without and with the library (PROFEP_ADDR=127.0.0.1:0), alternating"
# test/bench/bench_startup.c: rounds of without / with / without (the A/A
# noise floor), wall time fork to reaped exit; medians and 10th-90th percentiles.
SB=$(mktemp /tmp/pe-bench-startup.XXXXXX)
if ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -o $SB test/bench/bench_startup.c; then
    PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn $SB $runs $LIB /bin/true >$SB.out 2>/dev/null
    cat $SB.out
    awk '/wall median/ { for (i = 1; i < NF; i++) if ($i == "median") { m[++n] = $(i + 1); break } }
         END { if (n >= 2) printf "  per run: %d us without, %d us with; ratio %.2f (+%d us), medians\n", m[1], m[2], m[2] / m[1], m[2] - m[1] }' $SB.out
else
    echo "  bench_startup did not build"
fi
rm -f $SB $SB.out

echo "== idle resident memory: p_sleep without and with the library, after 1 s"
rss() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
$BUILD/test/p_sleep 3 0 >/dev/null & p0=$!
PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $BUILD/test/p_sleep 3 0 >/dev/null 2>&1 & p1=$!
sleep 1
r0=$(rss $p0); r1=$(rss $p1)
awk -v a=$r0 -v b=$r1 'BEGIN { printf "  VmRSS: %d KiB without, %d KiB with; ratio %.2f (+%d KiB)\n", a, b, b / a, b - a }'
wait $p0 $p1

for b in scripts/bench_*.sh; do
    [ -f "$b" ] && [ "$b" != scripts/bench_lib.sh ] || continue # (the helpers they source)
    echo
    echo "== $b (load average $(cut -d' ' -f1-3 /proc/loadavg): the machine may be shared; see each A/A floor)"
    bash "$b" "$BUILD"
done
