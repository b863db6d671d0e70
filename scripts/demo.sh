#!/usr/bin/env bash
# demo.sh: the README's first command: preload the library into a workload,
# fetch a 3 s CPU profile over HTTP and print its top with go tool pprof.  What
# it says the output shows is checked by test/e2e/e2e_readme.sh.
set -eu
BUILD=${1:-build}
LIB=$(cd "$BUILD" && pwd)/libprofendpoints.so # absolute: the program may run anywhere
T=$(mktemp -d /tmp/pe-demo.XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$T"' EXIT
export HOME=${HOME:-$T} GOCACHE=$T/gocache

echo "== starting $BUILD/test/p_cpu_split with LD_PRELOAD=$LIB: threads split-a and split-b"
echo "   spin (the flat time) called 3:1 from cpu_three_quarters and cpu_one_quarter; from 0.5 s"
echo "   a third thread, late-one, spins from late (late_work).  The three share the CPU alike:"
echo "   in the cum column expect cpu_three_quarters near a half, late near a third and"
echo "   cpu_one_quarter near a sixth"
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port LD_PRELOAD=$LIB "$BUILD/test/p_cpu_split" 8 0.5 &
pid=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
addr=$(cat "$T/port")
echo "== curl -o cpu.pb.gz 'http://$addr/profile?duration=3'"
curl -sS -o "$T/cpu.pb.gz" "http://$addr/profile?duration=3"
echo "== go tool pprof -top cpu.pb.gz"
go tool pprof -top "$T/cpu.pb.gz" 2>/dev/null | head -n 15
echo "== the same as text, Julia-style: curl 'http://$addr/profile?duration=1&pprof=false&format=flat'"
curl -sS "http://$addr/profile?duration=1&pprof=false&format=flat" | head -n 12
