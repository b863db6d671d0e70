#!/usr/bin/env bash
# bench_heap.sh [BUILD]: the cost of heap sampling, in one run, as ratios to no
# library (glibc malloc):
#   ours        libprofendpoints.so at the default rate (PROFEP_HEAP_RATE=524288)
#   ours_off    libprofendpoints.so with PROFEP_HEAP_RATE=0
#   shim        a bare forwarding interposer (test/bench/bench_heap_shim.c): the floor
#   shim_checks the same plus the per-call least of any byte-sampling interposer
#               that knows its blocks at free (a TLS countdown in malloc, a
#               sign test in free; test/bench/bench_heap_shim.c -DSHIM_CHECKS)
#   shim_unwind shim_checks plus what any sampler that unwinds with libunwind
#               pays at its sample points (same 512 KiB mean: the draw and one
#               unw_backtrace, nothing recorded; -DSHIM_UNWIND): the floor of
#               sampling itself
#   jemalloc    Debian's libjemalloc2 with MALLOC_CONF=prof:true,lg_prof_sample:19
#               (sampled profiling at the same 512 KiB mean), and without (jemalloc_noprof)
# Workloads (test/bench/bench_heap.c): "mt" 2 threads x OPS random free+malloc pairs
# (process CPU seconds), "pair" one thread of malloc(64)+free (ns per pair),
# "ab" the mt workload against glibc's own functions inside one process.
# Each configuration runs BENCH_RUNS times (default 11), interleaved; the
# minimum is reported (the least disturbed run), the median in brackets.
# Never pass/fail.  Our server runs (port 0) as it would in production.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${BENCH_RUNS:-11}
OPS=${BENCH_OPS:-10000000}
PAIRS=${BENCH_PAIRS:-50000000}
LIB=$BUILD/libprofendpoints.so
B=$BUILD/test/bench_heap
SHIM=$BUILD/test/libbench_heap_shim.so
SHIMC=$BUILD/test/libbench_heap_shim_checks.so
SHIMU=$BUILD/test/libbench_heap_shim_unwind.so
JE=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
T=$(mktemp -d /tmp/pe_bench_heap.XXXXXX)
trap 'rm -rf "$T"' EXIT

mkdir -p "$BUILD/test"
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$B" test/bench/bench_heap.c || exit 1
cc -O2 -shared -fPIC -o "$SHIM" test/bench/bench_heap_shim.c || exit 1
cc -O2 -shared -fPIC -DSHIM_CHECKS -o "$SHIMC" test/bench/bench_heap_shim.c || exit 1
cc -O2 -shared -fPIC -DSHIM_UNWIND -o "$SHIMU" test/bench/bench_heap_shim.c -ldl -lm || exit 1
[ -f "$LIB" ] || { echo "bench_heap: $LIB not built"; exit 1; }

configs="base ours ours_off shim shim_checks shim_unwind"
je_note=
if [ -n "$JE" ]; then
    # Built with --enable-prof?  Then config.prof is true and prof:true is accepted.
    if MALLOC_CONF=stats_print:true LD_PRELOAD=$JE /bin/true 2>&1 | grep -q 'config.prof: true' &&
        ! MALLOC_CONF=prof:true LD_PRELOAD=$JE /bin/true 2>&1 | grep -q 'Invalid conf'; then
        configs="$configs jemalloc jemalloc_noprof"
        je_note="jemalloc: $JE, config.prof true (built with --enable-prof)"
    else
        je_note="jemalloc: $JE was built without --enable-prof: sampled profiling unavailable"
        configs="$configs jemalloc_noprof"
    fi
else
    je_note="jemalloc: libjemalloc2 not installed: unavailable"
fi

run() { # CONFIG MODE ARG
    local c=$1
    shift
    case $c in
    base) "$B" "$@" ;;
    ours) LD_PRELOAD=$LIB PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn "$B" "$@" ;;
    ours_off) LD_PRELOAD=$LIB PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn PROFEP_HEAP_RATE=0 "$B" "$@" ;;
    shim) LD_PRELOAD=$SHIM "$B" "$@" ;;
    shim_checks) LD_PRELOAD=$SHIMC "$B" "$@" ;;
    shim_unwind) LD_PRELOAD=$SHIMU "$B" "$@" ;;
    jemalloc) LD_PRELOAD=$JE MALLOC_CONF=prof:true,lg_prof_sample:19 "$B" "$@" ;;
    jemalloc_noprof) LD_PRELOAD=$JE "$B" "$@" ;;
    esac
}

for r in $(seq "$RUNS"); do
    for c in $configs; do
        run "$c" mt "$OPS" | awk '{ print $2 }' >>"$T/$c.mt"
        run "$c" pair "$PAIRS" | awk '{ print $2 }' >>"$T/$c.pair"
    done
done

stat() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%s %s", v[1], v[int((NR + 1) / 2)] }'; }
read -r bmt bmtmed <<<"$(stat "$T/base.mt")"
read -r bp bpmed <<<"$(stat "$T/base.pair")"
echo "bench_heap: $RUNS runs each, mt = 2 threads x $OPS free+malloc, pair = $PAIRS x malloc(64)+free"
echo "$je_note"
printf '%-16s %12s %16s %10s %18s %12s\n' config mt_cpu_s "mt ratio" pair_ns "pair vs glibc" "[medians]"
for c in $configs; do
    read -r mt mtmed <<<"$(stat "$T/$c.mt")"
    read -r p pmed <<<"$(stat "$T/$c.pair")"
    printf '%-16s %12.4f %16s %10.2f %18s   [%.4f s %s, %.2f ns]\n' "$c" "$mt" \
        "$(awk -v a="$mt" -v b="$bmt" 'BEGIN { printf "%.3f (%+.1f%%)", a / b, (a / b - 1) * 100 }')" "$p" \
        "$(awk -v a="$p" -v b="$bp" 'BEGIN { printf "%+.2f ns", a - b }')" "$mtmed" \
        "$(awk -v a="$mtmed" -v b="$bmtmed" 'BEGIN { printf "%.3f", a / b }')" "$pmed"
done
# The parts of our cost: being an interposer at all (the shim), the per-call
# checks any sampler needs (shim_checks), our fast paths with sampling off,
# and sampling itself (ours vs ours_off).
read -r omt omtmed <<<"$(stat "$T/ours_off.mt")"
read -r smt smtmed <<<"$(stat "$T/shim.mt")"
read -r cmt cmtmed <<<"$(stat "$T/shim_checks.mt")"
read -r umt umtmed <<<"$(stat "$T/ours.mt")"
awk -v a="$cmt" -v b="$smt" -v am="$cmtmed" -v bm="$smtmed" \
    'BEGIN { printf "shim_checks vs shim (mt), the checks alone: %+.1f%% [medians %+.1f%%]\n", (a / b - 1) * 100, (am / bm - 1) * 100 }'
awk -v a="$omt" -v b="$smt" -v am="$omtmed" -v bm="$smtmed" \
    'BEGIN { printf "ours_off vs shim (mt): %+.1f%% [medians %+.1f%%]\n", (a / b - 1) * 100, (am / bm - 1) * 100 }'
awk -v a="$omt" -v b="$cmt" -v am="$omtmed" -v bm="$cmtmed" \
    'BEGIN { printf "ours_off vs shim_checks (mt): %+.1f%% [medians %+.1f%%]\n", (a / b - 1) * 100, (am / bm - 1) * 100 }'
awk -v a="$umt" -v b="$smt" -v am="$umtmed" -v bm="$smtmed" \
    'BEGIN { printf "ours vs shim (mt): %+.1f%% [medians %+.1f%%]\n", (a / b - 1) * 100, (am / bm - 1) * 100 }'
awk -v a="$umt" -v b="$omt" -v am="$umtmed" -v bm="$omtmed" \
    'BEGIN { printf "ours vs ours_off (mt), the cost of sampling: %+.1f%% [medians %+.1f%%]\n", (a / b - 1) * 100, (am / bm - 1) * 100 }'
# In one process, no process-to-process noise: the mt workload in rounds that
# alternate glibc's own __libc_malloc/__libc_free with malloc/free as linked
# (bench_heap ab).  1.00 without a preload (base: the A/A noise floor); the
# ratio is the interposer's cost.  The configurations alternate, AB_REPS
# processes each; per configuration the median of the processes' medians and
# their spread (min..max).  Sampling itself is ours over ours_off; its floor
# (any libunwind sampler at this rate) shim_unwind over shim_checks.
AB_REPS=${BENCH_AB_REPS:-3}
abc="base shim shim_checks shim_unwind ours_off ours"
for r in $(seq "$AB_REPS"); do
    for c in $abc; do
        run "$c" ab 2000000 24 | awk '{ print $2 }' >>"$T/$c.ab"
    done
done
abstat() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%.4f %.4f %.4f", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo "in-process A/B (bench_heap ab: linked malloc/free vs glibc's own, per-round thread CPU ratio; median of 24 rounds, median [min..max] of $AB_REPS processes):"
for c in $abc; do
    read -r m lo hi <<<"$(abstat "$T/$c.ab")"
    printf '  %-12s %.3f [%.3f..%.3f]\n' "$c" "$m" "$lo" "$hi"
done
read -r am _ <<<"$(abstat "$T/base.ab")"
read -r om _ <<<"$(abstat "$T/ours_off.ab")"
read -r um _ <<<"$(abstat "$T/ours.ab")"
read -r cm _ <<<"$(abstat "$T/shim_checks.ab")"
read -r wm _ <<<"$(abstat "$T/shim_unwind.ab")"
awk -v a="$am" -v o="$om" -v u="$um" -v c="$cm" -v w="$wm" 'BEGIN {
    printf "  sampling itself, ours / ours_off: %+.1f%%; its floor, shim_unwind / shim_checks: %+.1f%%; A/A floor (base): %+.1f%%\n",
        (u / o - 1) * 100, (w / c - 1) * 100, (a - 1) * 100 }'
# One sample's own cost, in place (bench_heap cost: every call timed, the
# sampled ones told by their tag; medians, so a loaded machine moves it little).
for r in 1 2 3; do
    run ours cost 2000000 | awk '/^cost_sample_ns/ { print $2, $4, $6 }' >>"$T/cost"
done
sort -g "$T/cost" | awk '{ v[NR] = $0 } END { split(v[int((NR + 1) / 2)], m, " ");
    printf "one heap sample in place (bench_heap cost, median of %d): %.0f ns beyond a plain malloc+free, %.2f%% of the threads CPU (%d samples)\n", NR, m[1], m[2], m[3] }'
# A process whose server did not start ("bind failed") is dormant and samples
# nothing (preload/init.h): then no figure of ours above is sampling's.
awk '$3 == 0 { d++ } END { if (d) printf "  NOTE: %d of %d cost runs of ours sampled nothing: dormant (no server)\n", d, NR }' "$T/cost"
# A real program (perl building hashes): scripts/bench_perl.sh.
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
