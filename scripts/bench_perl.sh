#!/usr/bin/env bash
# bench_perl.sh: where every percent of a real single-threaded, malloc-heavy
# program goes under our library (make bench; ratios, never pass/fail).
# perl builds hashes of arrays (Debian's perl calls glibc's malloc).
#   1. process CPU, configurations alternating round by round (order
#      rotated), each round's ratio to its own no-library run, medians and
#      spreads; base2 (no library again) is the A/A floor.  The rows peel the
#      library apart: shim_checks (any byte-sampling interposer's two checks),
#      thread (a preloaded object that only starts one sleeping thread: what
#      any in-process server costs before it serves, since glibc takes its
#      locks only once a second thread exists), ours_noserver (PROFEP_ADDR=off:
#      the library without its threads), ours_off (heap sampling off, server
#      on) and ours (the default);
#   2. the same program, smaller, under callgrind: instructions of each
#      configuration (load-independent), ours split by object and its own
#      functions, so that the timed percents can be told from noise (perl's
#      hash seed fixed, so that every run does the same work).
# Usage: scripts/bench_perl.sh BUILD   (BENCH_PERL_ROUNDS, default 11)
set -u
source "${BASH_SOURCE%/*}/bench_lib.sh"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-bench-perl.XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v perl >/dev/null || { echo "bench_perl: perl not installed"; exit 0; }
[ -x /usr/bin/time ] || { echo "bench_perl: /usr/bin/time not installed (scripts/deps.sh bench)"; exit 0; }
[ -f "$LIB" ] || { echo "bench_perl: $LIB not built"; exit 1; }
cc -O2 -shared -fPIC -DSHIM_CHECKS -o "$T/shimc.so" test/bench/bench_heap_shim.c || exit 1
cc -O2 -shared -fPIC -pthread -o "$T/thread.so" test/bench/bench_thread_shim.c || exit 1
ROUNDS=${BENCH_PERL_ROUNDS:-11}

PL='my $t = 0; for my $r (1..2) { my %h; for my $i (1..300000) { $h{"k$i"} = [$i, "v$i" x 3, {a => $i}]; } $t += keys %h; } print "$t\n";'
# CONFIG -> the environment it runs perl in, in the array cfg_env
config_env() {
    case $1 in
    base | base2) cfg_env=() ;;
    shim_checks) cfg_env=(LD_PRELOAD="$T/shimc.so") ;;
    thread) cfg_env=(LD_PRELOAD="$T/thread.so") ;;
    ours_noserver) cfg_env=(LD_PRELOAD="$LIB" PROFEP_ADDR=off PROFEP_LOG=warn) ;;
    ours_off) cfg_env=(LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn PROFEP_HEAP_RATE=0) ;;
    ours) cfg_env=(LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn) ;;
    esac
}
run() { # CONFIG: process CPU seconds (user + sys)
    config_env "$1"
    /usr/bin/time -f "%U %S" env "${cfg_env[@]}" perl -e "$PL" 2>&1 >/dev/null | tail -1 | awk '{ print $1 + $2 }'
}
CONFIGS="base base2 shim_checks thread ours_noserver ours_off ours"
if [ "$ROUNDS" -gt 0 ]; then
    echo "== perl building hashes (single-threaded, malloc-heavy), process CPU, $ROUNDS rounds (order rotated); $(load)"
    set -- $CONFIGS
    n=$#
    for r in $(seq "$ROUNDS"); do
        order=
        for i in $(seq 0 $((n - 1))); do
            j=$(((i + r) % n + 1))
            order="$order ${!j}"
        done
        for c in $order; do run "$c" >"$T/$c.now"; done
        b=$(cat "$T/base.now")
        for c in $CONFIGS; do
            cat "$T/$c.now" >>"$T/$c.s"
            awk -v a="$(cat "$T/$c.now")" -v b="$b" 'BEGIN { printf "%.5f\n", a / b }' >>"$T/$c.r"
        done
    done
    # median, 25th and 75th percentile, min, max of a column of numbers
    q() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%s %s %s %s %s", v[int((NR + 1) / 2)], v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)], v[1], v[NR] }'; }
    for c in $CONFIGS; do
        read -r sm _ _ slo shi <<<"$(q "$T/$c.s")"
        read -r m p25 p75 lo hi <<<"$(q "$T/$c.r")"
        awk -v c=$c -v s=$sm -v m=$m -v a=$p25 -v b=$p75 -v lo=$lo -v hi=$hi 'BEGIN {
            printf "  %-14s %.3f s   vs base %+6.2f%%   spread 25-75%% [%+.2f%%, %+.2f%%], min-max [%+.2f%%, %+.2f%%]\n",
                c, s, (m - 1) * 100, (a - 1) * 100, (b - 1) * 100, (lo - 1) * 100, (hi - 1) * 100 }'
    done
    echo "  ($(load))"
fi

echo "== the same under callgrind (1 round of 100000 keys): instructions, load-independent"
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
    PLS='my $t = 0; for my $r (1..1) { my %h; for my $i (1..100000) { $h{"k$i"} = [$i, "v$i" x 3, {a => $i}]; } $t += keys %h; } print "$t\n";'
    cg() { # CONFIG: total instructions; the run's data in $T/cg.CONFIG
        config_env "$1"
        env "${cfg_env[@]}" PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 valgrind --tool=callgrind \
            --callgrind-out-file="$T/cg.$1" perl -e "$PLS" >/dev/null 2>&1
        awk '/^summary:|^totals:/ { print $2; exit }' "$T/cg.$1"
    }
    ib=$(cg base)
    for c in shim_checks thread ours_noserver ours; do
        i=$(cg $c)
        awk -v c=$c -v i="$i" -v b="$ib" 'BEGIN { printf "  %-14s %d Ir   vs base %+.2f%% (%+d)\n", c, i, (i / b - 1) * 100, i - b }'
    done
    awk -v b="$ib" 'BEGIN { printf "  %-14s %d Ir\n", "base", b }'
    # by object (exclusive instructions): ours against base, so that each
    # object's share of the difference shows (libc's: its multi-threaded paths)
    for c in base ours; do
        callgrind_annotate --inclusive=no --threshold=100 "$T/cg.$c" 2>/dev/null >"$T/$c.txt"
        awk '/\[.*\]$/ { n = $1; gsub(",", "", n); if (n !~ /^[0-9]+$/) next
                         o = $NF; gsub(/[\[\]]/, "", o); sub(/.*\//, "", o); by[o] += n }
             END { for (o in by) print o, by[o] }' "$T/$c.txt" >"$T/$c.obj"
    done
    echo "  by object, exclusive instructions, ours minus base, against base's total:"
    awk -v b="$ib" 'NR == FNR { base[$1] = $2; next } { ours[$1] = $2 }
        END { for (o in ours) printf "    %-28s %+12d Ir  %+6.2f%%\n", o, ours[o] - base[o], (ours[o] - base[o]) / b * 100
              for (o in base) if (!(o in ours)) printf "    %-28s %+12d Ir  %+6.2f%%\n", o, -base[o], -base[o] / b * 100 }' \
        "$T/base.obj" "$T/ours.obj" | sort -k2 -g -r | head -8
    echo "  our library's own functions (exclusive, the largest):"
    awk -v b="$ib" '/libprofendpoints/ { n = $1; gsub(",", "", n); if (n !~ /^[0-9]+$/) next
                    f = $0; sub(/ \[.*/, "", f); sub(/.*:/, "", f)
                    printf "    %-40s %10d Ir  %6.3f%%\n", f, n, n / b * 100 }' "$T/ours.txt" | head -10
else
    echo "  valgrind not installed"
fi
