#!/usr/bin/env bash
# bench_attach.sh [BUILD]: what `profep attach` / `detach` cost a running
# program (docs/ATTACH.md), measured, never pass/fail.  test/bench/bench_attach.c
# runs 100 threads: one stamps the clock in a tight loop and keeps its
# largest gap, 99 sleep in 1 ms nanosleeps.  Per round: the stamper's
# largest gap during an attach, during a detach, and over as long with
# nothing done (the A/A floor: the machine's own scheduling), and the stop
# of the one thread the injector holds (its --stats line).  Then the time
# from running the injector to the first answer of /debug/pprof/; the
# process's resident memory, descriptors and threads before and after 100
# cycles; and, where gdb is installed, `gdb -p PID -batch -ex 'call
# dlopen(...)'` as the anchor (gdb stops every thread).
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
INJ=$BUILD/profep-inject
BIN=$BUILD/test/bench_attach
ROUNDS=${BENCH_ATTACH_ROUNDS:-10}
T=$(mktemp -d /tmp/pe-bench-attach.XXXXXX)
trap 'exec 3>&- 4<&-; [ -n "${pid:-}" ] && kill $pid 2>/dev/null; rm -rf "$T"' EXIT
[ -x "$INJ" ] && [ -f "$LIB" ] || { echo "bench_attach: $INJ or $LIB not built"; exit 0; }
mkdir -p "$BUILD/test"
cc -std=gnu11 -D_GNU_SOURCE -O2 -o "$BIN" test/bench/bench_attach.c -lpthread || exit 0

mkfifo "$T/in" "$T/out"
"$BIN" 100 <"$T/in" >"$T/out" &
pid=$!
exec 3>"$T/in" 4<"$T/out"
read -r _ <&4 # ready
ask() { echo "$1" >&3; read -r v <&4; echo "$v"; }
now_ms() { date +%s%3N; }
med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%d", v[int((NR + 1) / 2)]; else printf "-" }'; }
mx() { sort -n | tail -1; }

: >"$T/att" ; : >"$T/det"; : >"$T/aa"; : >"$T/stop_a"; : >"$T/stop_d"; : >"$T/first"
for i in $(seq "$ROUNDS"); do
    ask r >/dev/null
    t0=$(now_ms)
    out=$(PROFEP_ADDR=127.0.0.1:0 "$INJ" --stats attach $pid --lib "$LIB" 2>"$T/st")
    a=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$out")
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/")" = 200 ]; do sleep 0.001; done
    t1=$(now_ms)
    echo $((t1 - t0)) >>"$T/first"
    ask g >>"$T/att"
    sed -n 's/.*stopped for \([0-9]*\) us.*/\1/p' "$T/st" >>"$T/stop_a"
    ask r >/dev/null
    t0=$(now_ms)
    "$INJ" --stats detach $pid --lib "$LIB" >/dev/null 2>"$T/st"
    t1=$(now_ms)
    ask g >>"$T/det"
    sed -n 's/.*stopped for \([0-9]*\) us.*/\1/p' "$T/st" >>"$T/stop_d"
    ask r >/dev/null
    sleep "$(awk -v ms=$((t1 - t0 + 50)) 'BEGIN { printf "%.3f", ms / 1000 }')"
    ask g >>"$T/aa"
done
echo "  $ROUNDS rounds, 100 threads; microseconds, median / max:"
echo "  the stamper's largest gap: attach $(med <"$T/att") / $(mx <"$T/att"), detach $(med <"$T/det") / $(mx <"$T/det"), A/A floor $(med <"$T/aa") / $(mx <"$T/aa")"
echo "  the stopped thread's pause: attach $(med <"$T/stop_a") / $(mx <"$T/stop_a"), detach $(med <"$T/stop_d") / $(mx <"$T/stop_d") (goal: under 5000)"
echo "  from running profep attach to the first answer of /debug/pprof/: $(med <"$T/first") / $(mx <"$T/first") ms (goal: under 100)"

st() { echo "rss $(awk '/^VmRSS/ {print $2}' /proc/$pid/status) KiB, $(ls /proc/$pid/fd | wc -l) fds, $(ls /proc/$pid/task | wc -l) threads"; }
before=$(st)
t0=$(now_ms)
for i in $(seq 100); do
    PROFEP_ADDR=127.0.0.1:0 "$INJ" attach $pid --lib "$LIB" >/dev/null
    "$INJ" detach $pid --lib "$LIB" >/dev/null
done
t1=$(now_ms)
echo "  100 attach/detach cycles ($(( (t1 - t0) / 100 )) ms each): after the rounds above $before; after 100 more $(st)"

if command -v gdb >/dev/null; then
    civ=$(ls /usr/lib/x86_64-linux-gnu/libcivetweb.so.1 2>/dev/null)
    if [ -n "$civ" ]; then
        ask r >/dev/null
        t0=$(now_ms)
        if timeout -k 5 60 gdb -p $pid -batch -ex "call (void*)dlopen(\"$civ\", 2)" >/dev/null 2>&1; then
            t1=$(now_ms)
            echo "  anchor: gdb -p PID -batch -ex 'call dlopen(libcivetweb)': $((t1 - t0)) ms; the stamper's largest gap $(ask g) us (gdb stops every thread)"
        else
            echo "  anchor: gdb -p PID -batch -ex 'call dlopen(libcivetweb)' did not finish within 60 s"
        fi
    fi
else
    echo "  anchor: gdb not installed"
fi
