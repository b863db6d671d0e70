#!/usr/bin/env bash
# bench_cpu.sh: CPU sampling figures, in one run, as ratios (never pass/fail):
#   1. process CPU and wall time of a 2-thread CPU-bound workload: no library,
#      no library again (the A/A noise floor), ours at 100 Hz, gperftools'
#      libprofiler.so at 100 Hz (CPUPROFILE_FREQUENCY=100), run in turn in each
#      of RUNS rounds; each ratio is taken against its own round's first run,
#      then the median and the spread (25th-75th percentile, min-max) over the
#      rounds; and what our own threads (collector, server) used meanwhile;
#   2. one sample at depth 30 by its parts (libunwind's unw_backtrace, our
#      frame cutting, the ring store, the whole handler), in ns (warm, the
#      lowest of 20 rounds) and in instructions (callgrind: load-independent),
#      and the signal round trip with our handler against an empty one;
#   3. samples per CPU-second at delay=0.001 (signals, and signals + overruns).
# Usage: scripts/bench_cpu.sh BUILD   (BENCH_CPU_RUNS, BENCH_CPU_ITERS to change the size;
#        BENCH_CPU_BASE=other/build/libprofendpoints.so adds that library as a row of each round)
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
BASE=${BENCH_CPU_BASE:-} # another build's library, for a before/after row in the same rounds
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

start_ours() { # args...: start with the library (LIB, or $USE), wait for its port; sets PID ADDR
    local pf=$T/port.$RANDOM
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=${USE:-$LIB} "$@" >$T/out 2>/dev/null &
    PID=$!
    for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
    ADDR=$(cat $pf)
}

# stats FILE: "median p25 p75 min max" of the numbers in FILE (one a line)
stats() {
    sort -g "$1" | awk '{ a[NR] = $1 } END {
        if (!NR) { print "0 0 0 0 0"; exit }
        m = a[int((NR + 1) / 2)]; lo = a[1 + int((NR - 1) * 0.25)]; hi = a[1 + int((NR - 1) * 0.75 + 0.5)]
        print m, lo, hi, a[1], a[NR] }'
}
# row LABEL FILE: a ratio's median, its percent, and its spread in percent
row() {
    read -r m lo hi mn mx < <(stats "$2")
    awk -v l="$1" -v m=$m -v lo=$lo -v hi=$hi -v mn=$mn -v mx=$mx 'BEGIN {
        printf "  %-22s %.4f (%+.2f%%)   spread 25-75%% [%+.2f%%, %+.2f%%], min-max [%+.2f%%, %+.2f%%]\n",
            l, m, 100 * (m - 1), 100 * (lo - 1), 100 * (hi - 1), 100 * (mn - 1), 100 * (mx - 1) }'
}

RUNS=${BENCH_CPU_RUNS:-9}
CONFIGS="none aa ours${BASE:+ base}${GPERF:+ gp}"
echo "== 2-thread CPU-bound workload at 100 Hz: $RUNS rounds of none, none again (A/A), ours,${BASE:+ base,} gperftools (order rotated each round)"
for k in none aa ours base gp; do : >$T/$k.w; : >$T/$k.c; : >$T/$k.cr; : >$T/$k.wr; done
for k in ours base; do : >$T/$k.lib.cpu; : >$T/$k.lib.wake; : >$T/$k.col.cpu; : >$T/$k.col.wake; done
: >$T/og.cr; : >$T/og.wr
# one K: run configuration K once; appends its wall and CPU (and ours: our threads)
one() {
    local k=$1 w c lc lw cc cw
    case $k in
    none | aa) read -r w c < <($B work $WAIT $ITERS) ;;
    gp) read -r w c < <(CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=100 LD_PRELOAD=$GPERF $B work $WAIT $ITERS 2>/dev/null) ;;
    ours | base)
        USE=$([ $k = base ] && echo $BASE) start_ours $B work $WAIT $ITERS
        curl -s -o /dev/null "http://$ADDR/profile_start?delay=0.01"
        wait $PID; PID=
        read -r w c <$T/out
        read -r _ lc lw cc cw < <(grep '^library' $T/out)
        awk -v c=${lc:-0} -v lw=${lw:-0} -v cc=${cc:-0} -v cw=${cw:-0} -v t=$w -v p=$T/$k 'BEGIN {
            printf "%.3f\n", 1000 * c / t >>(p ".lib.cpu"); printf "%.2f\n", lw / t >>(p ".lib.wake")
            printf "%.3f\n", 1000 * cc / t >>(p ".col.cpu"); printf "%.2f\n", cw / t >>(p ".col.wake") }' ;;
    esac
    echo $w >$T/$k.last.w; echo $c >$T/$k.last.c
    echo $w >>$T/$k.w; echo $c >>$T/$k.c
}
for i in $(seq $RUNS); do
    # rotate the order, so no configuration always runs first or after another
    set -- $CONFIGS; n=$#
    for j in $(seq 0 $((n - 1))); do set -- $CONFIGS; shift $(( (i + j) % n )); one $1; done
    nw=$(cat $T/none.last.w); nc=$(cat $T/none.last.c)
    for k in $CONFIGS; do
        [ $k = none ] && continue
        awk -v nw=$nw -v nc=$nc -v w=$(cat $T/$k.last.w) -v c=$(cat $T/$k.last.c) -v p=$T/$k 'BEGIN {
            print c / nc >>(p ".cr"); print w / nw >>(p ".wr") }'
    done
    if [ -n "$GPERF" ]; then
        awk -v ow=$(cat $T/ours.last.w) -v oc=$(cat $T/ours.last.c) -v gw=$(cat $T/gp.last.w) \
            -v gc=$(cat $T/gp.last.c) -v d=$T 'BEGIN { print oc / gc >>(d "/og.cr"); print ow / gw >>(d "/og.wr") }'
    fi
done
read -r mnw _ < <(stats $T/none.w); read -r mnc _ < <(stats $T/none.c)
read -r mow _ < <(stats $T/ours.w)
read -r moc _ < <(stats $T/ours.c)
read -r wr _ < <(stats $T/ours.wr); read -r cr _ < <(stats $T/ours.cr)
awk -v n=$mnw -v cn=$mnc 'BEGIN { printf "  none        wall %.3f s  cpu %.3f s (medians)\n", n, cn }'
awk -v o=$mow -v co=$moc -v wr=$wr -v cr=$cr 'BEGIN {
    printf "  ours@100Hz  wall %.3f s  cpu %.3f s   wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n",
        o, co, wr, 100 * (wr - 1), cr, 100 * (cr - 1) }'
if [ -n "$GPERF" ]; then
    read -r gwr _ < <(stats $T/gp.wr); read -r gcr _ < <(stats $T/gp.cr); read -r ogw _ < <(stats $T/og.wr)
    awk -v wr=$gwr -v cr=$gcr -v og=$ogw 'BEGIN {
        printf "  gperftools  wall ratio %.4f (%+.2f%%), cpu ratio %.4f (%+.2f%%)\n", wr, 100 * (wr - 1), cr, 100 * (cr - 1)
        printf "  ours/gperftools wall %.4f\n", og }'
else
    echo "  gperftools: libprofiler.so not installed (apt-get install libgoogle-perftools4)"
fi
echo "  process CPU ratios against the same round's no-library run, over $RUNS rounds:"
row "A/A (noise floor)" $T/aa.cr
row "ours@100Hz" $T/ours.cr
[ -n "$BASE" ] && row "base@100Hz" $T/base.cr
[ -n "$GPERF" ] && row "gperftools@100Hz" $T/gp.cr && row "ours/gperftools" $T/og.cr
echo "  wall ratios, the same way:"
row "A/A (noise floor)" $T/aa.wr
row "ours@100Hz" $T/ours.wr
[ -n "$GPERF" ] && row "gperftools@100Hz" $T/gp.wr
echo "  our threads while the workload ran (run time from schedstat, per s; median [25-75%]), as a share of the workload's CPU:"
for k in ours${BASE:+ base}; do
    read -r lcm lclo lchi _ < <(stats $T/$k.lib.cpu); read -r lwm _ < <(stats $T/$k.lib.wake)
    read -r ccm cclo cchi _ < <(stats $T/$k.col.cpu); read -r cwm _ < <(stats $T/$k.col.wake)
    awk -v k=$k -v c=$lcm -v lo=$lclo -v hi=$lchi -v w=$lwm -v n=$mnc -v t=$mnw 'BEGIN {
        printf "    %-4s all (collector, server, heap history): %.3f ms/s [%.3f, %.3f] = %.3f%%, %.1f wake-ups/s\n",
            k, c, lo, hi, 100 * c / 1000 / (n / t), w }'
    awk -v k=$k -v c=$ccm -v lo=$cclo -v hi=$cchi -v w=$cwm -v n=$mnc -v t=$mnw 'BEGIN {
        printf "    %-4s the collector:                         %.3f ms/s [%.3f, %.3f] = %.3f%%, %.1f wake-ups/s\n",
            k, c, lo, hi, 100 * c / 1000 / (n / t), w }'
done

echo "== one sample at stack depth 30 by its parts: ns per call (warm, lowest of 20 rounds of 5000) and instructions (callgrind)"
read -r bt us st hd f0 f1 < <($B parts 5000 20)
ir_bt=; ir_us=; ir_st=; ir_hd=
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
    # ir FUNC: its inclusive instructions per call (the calls: its callers' "(Nx)")
    ir() { awk -v F="$1" '
        /^ *[0-9,]+ .*< / { if (match($0, /\(([0-9,]+)x\)/)) { c = substr($0, RSTART + 1, RLENGTH - 3)
                                                           gsub(",", "", c); calls += c }; next }
        /\*  / { n = $1; gsub(",", "", n); s = $0; sub(/ \[.*/, "", s); sub(/.*:/, "", s)
                 if (s == F && calls > 0) { printf "%d\n", n / calls; exit }
                 calls = 0; next }
        /^$/ { calls = 0 }' $T/cg.txt; }
    valgrind --tool=callgrind --callgrind-out-file=$T/cg.out $B parts 2000 1 >/dev/null 2>&1
    callgrind_annotate --inclusive=yes --tree=caller $T/cg.out 2>/dev/null >$T/cg.txt
    ir_bt=$(ir backtrace)
    ir_us=$(ir pe_unwind_signal)
    ir_st=$(( $(ir store_once) + $(ir pe_ring_peek) + $(ir pe_ring_release) ))
    ir_hd=$(ir pe_cpu_handler)
fi
printf "  %-44s %5d ns  %6s Ir\n" "libunwind unw_backtrace ($f0 frames)" $bt "${ir_bt:--}"
printf "  %-44s %5d ns  %6s Ir\n" "pe_unwind_signal (+ cut to $f1 frames, pin)" $us "${ir_us:--}"
printf "  %-44s %5d ns  %6s Ir\n" "  of which ours (cutting, pin, JIT check)" $((us - bt)) \
    "$([ -n "$ir_us" ] && echo $((ir_us - ir_bt)) || echo -)"
printf "  %-44s %5d ns  %6s Ir\n" "ring store (claim, fill, publish, drain)" $st "${ir_st:--}"
printf "  %-44s %5d ns  %6s Ir\n" "whole handler, timer signal (unwind+store)" $hd "${ir_hd:--}"
read -r s e < <($B sample 20000)
awk -v s=$s -v e=$e 'BEGIN { printf "  signal round trip (median of 20000): ours %d ns   empty handler %d ns   ratio %.2f; unwind+store %d ns\n", s, e, s / e, s - e }'
# The anchor the same way: gperftools' handler (its unwind and hash-table
# store) on the same signal at the same depth, against an empty handler in
# the same process.
if [ -n "$GPERF" ] && read -r g ge < <(CPUPROFILE_FREQUENCY=1 LD_PRELOAD=$GPERF $B sample_gperf 20000 2>/dev/null); then
    awk -v s=$s -v e=$e -v g=$g -v ge=$ge 'BEGIN { printf "  gperftools the same way:               theirs %d ns   empty handler %d ns   ratio %.2f; unwind+store %d ns; ours/theirs beyond empty %.2f\n", g, ge, g / ge, g - ge, (s - e) / (g - ge > 0 ? g - ge : 1) }'
else
    echo "  gperftools the same way: libprofiler.so missing or ProfilerStart failed"
fi

echo "== samples per CPU-second at delay=0.001 (1000 Hz asked; kernel HZ caps signals)"
start_ours $B work 0.3 $((ITERS * 2))
sleep 0.35
c0=$(awk '{print $14 + $15}' /proc/$PID/stat)
curl -s -o $T/k.pb.gz "http://$ADDR/profile?delay=0.001&duration=3"
c1=$(awk '{print $14 + $15}' /proc/$PID/stat)
kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
hz=$(getconf CLK_TCK)
go tool pprof -raw $T/k.pb.gz >$T/k.raw 2>/dev/null
line=$(sed -n 's/^Comment: cpu: \([0-9]*\) signals, weight \([0-9]*\) with.*/\1 \2/p' $T/k.raw)
drop=$(sed -n 's/^Comment: dropped: \([0-9]*\) samples (sample ring full).*/\1/p' $T/k.raw)
read -r sig tot <<<"$line"
awk -v s=${sig:-0} -v t=${tot:-0} -v c=$((c1 - c0)) -v hz=$hz -v d=${drop:-0} 'BEGIN {
    cs = c / hz; if (cs <= 0) { print "  no CPU measured"; exit }
    printf "  CPU used %.2f s: %.0f signals/CPU-s, %.0f samples/CPU-s with overruns; profile accounts for %.1f%% of CPU; %d lost to a full ring\n",
        cs, s / cs, t / cs, 100 * t / 1000 / cs, d }'
