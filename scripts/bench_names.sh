#!/usr/bin/env bash
# bench_names.sh (in `make bench`): what source lines and inlined frames add to a
# profile's answer.  A C++ program (test/progs/lines/work.cc, g++ -O2 -g) runs with
# the library twice, with PROFEP_DEBUG_MEM=0 (names only) and with the default;
# each answers /profile?duration=1 three times (format=text: the whole profile is
# resolved).  Reported: the first answer's extra time over names only (the debug
# info read: libc's from libc6-dbg when installed, and the program's), the later
# answers' (tables kept), and the process's peak RSS.  Never pass/fail.
set -u
BUILD=${1:-build}
LIB=$PWD/$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-bench-names.XXXXXX)
trap 'rm -rf $T' EXIT
g++ -O2 -g -o $T/w-cxx test/progs/lines/work.cc || { echo "  g++ failed"; exit 0; }
run() { # DEBUG_MEM: three answer times (s) and the peak RSS (KiB)
    local port=$((17100 + RANDOM % 800)) pid t1 t2 t3
    PROFEP_ADDR=127.0.0.1:$port PROFEP_DEBUG_MEM=$1 LD_PRELOAD=$LIB $T/w-cxx 60 >/dev/null 2>&1 &
    pid=$!
    sleep 0.5
    t1=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/profile?duration=1&format=text")
    t2=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/profile?duration=1&format=text")
    t3=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/profile?duration=1&format=text")
    echo "$t1 $t2 $t3 $(awk '/^VmHWM/ {print $2}' /proc/$pid/status)"
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
}
read -r n1 n2 n3 nr <<<"$(run 0)"
read -r l1 l2 l3 lr <<<"$(run 256m)"
awk -v n1=$n1 -v n2=$n2 -v n3=$n3 -v l1=$l1 -v l2=$l2 -v l3=$l3 -v nr=$nr -v lr=$lr 'BEGIN {
    printf "  answer of /profile?duration=1: names only %.3f %.3f %.3f s; with lines %.3f %.3f %.3f s\n", n1, n2, n3, l1, l2, l3
    printf "  first profile with lines: +%.0f ms; later ones: %+.0f ms (tables kept)\n", (l1 - n1) * 1000, ((l2 + l3) - (n2 + n3)) / 2 * 1000
    printf "  peak RSS: %d KiB names only, %d KiB with lines; ratio %.2f\n", nr, lr, lr / nr }'
