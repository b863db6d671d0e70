#!/usr/bin/env bash
# demo.sh: the README's first command: preload the library into a workload,
# fetch a 3 s CPU profile over HTTP and print its top with go tool pprof.
set -eu
BUILD=${1:-build}
LIB=$PWD/$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-demo.XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$T"' EXIT
export HOME=${HOME:-$T} GOCACHE=$T/gocache

echo "== starting $BUILD/test/p_cpu_split (two threads burn CPU 75/25 in two functions) with LD_PRELOAD=$LIB"
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
