#!/usr/bin/env bash
# e2e_heap_allocs.sh: /allocs_profile, /allocs_profile_start, /allocs_profile_stop
# (Bernoulli per call, scaled by 1/sample_rate, label bytes, one recording at a
# time: 409s), parameter errors (400), and heap sampling off (503 on the heap
# endpoints, /allocs_profile still works).  The workload allocates from two
# sites, 7 calls to 3, with the same sizes, and prints its running byte total.
cd "$(dirname "$0")/.." || exit 1
. test/e2e_heap.inc
P=$BUILD/test/p_heap_cases
lastbytes() { awk '$1 == "loop_bytes" { v = $2 } END { print (v == "" ? 0 : v) }' "$T/loop.out"; }

start_prog loop -- "$P" loop || finish
for q in 'sample_rate=0' 'sample_rate=2' 'sample_rate=abc' 'duration=-1'; do
    code=$(fetch "/allocs_profile?$q" "$T/x")
    [ "$code" = 400 ] && pass "/allocs_profile?$q is 400 ($(head -c 80 "$T/x"))" || fail "/allocs_profile?$q answered $code"
done

sleep 0.3
b0=$(lastbytes)
code=$(fetch '/allocs_profile?sample_rate=0.001&duration=2' "$T/a.pb.gz")
b1=$(lastbytes)
[ "$code" = 200 ] || fail "/allocs_profile answered $code"
go tool pprof -raw "$T/a.pb.gz" >"$T/raw" 2>&1 || fail "pprof cannot read the allocs profile"
grep -q '^alloc_objects/count alloc_space/bytes\[dflt\]' "$T/raw" && pass "sample types alloc_objects, alloc_space" ||
    fail "sample types: $(grep -A1 '^Samples' "$T/raw" | tail -1)"
grep -q 'bytes:\[[0-9]*\]' "$T/raw" && pass "label bytes" || fail "no bytes label"
a=$(flat "$T/a.pb.gz" alloc_space site_loop_a); b=$(flat "$T/a.pb.gz" alloc_space site_loop_b)
awk -v a="$a" -v b="$b" 'BEGIN { f = a / (a + b); exit !(f > 0.66 && f < 0.74) }' &&
    pass "site split $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / (a + b) }') (true 0.70)" ||
    fail "site split a=$a b=$b, want 0.70 +- 0.04"
within "$((a + b))" "$((b1 - b0))" 25 && pass "scaled bytes $((a + b)) vs ~$((b1 - b0)) in the window ($(pct $((a + b)) $((b1 - b0))))" ||
    fail "scaled bytes $((a + b)) vs ~$((b1 - b0)) in the window ($(pct $((a + b)) $((b1 - b0))))"

code=$(fetch '/allocs_profile_stop' "$T/x")
[ "$code" = 409 ] && pass "stop without a recording is 409" || fail "stop without recording answered $code"
code=$(fetch '/allocs_profile_start?sample_rate=0.01' "$T/x")
[ "$code" = 200 ] && pass "start: $(cat "$T/x")" || fail "start answered $code"
code=$(fetch '/allocs_profile_start' "$T/x")
[ "$code" = 409 ] && pass "second start is 409 ($(cat "$T/x"))" || fail "second start answered $code"
code=$(fetch '/allocs_profile?duration=1' "$T/x")
[ "$code" = 409 ] && pass "timed recording during a session is 409" || fail "timed during session answered $code"
sleep 1
code=$(fetch '/allocs_profile_stop' "$T/s.pb.gz")
sa=$(flat "$T/s.pb.gz" alloc_space site_loop_a)
[ "$code" = 200 ] && [ "${sa%.*}" -gt 0 ] && pass "stop returns the profile (site_loop_a $sa B)" || fail "stop answered $code, site_loop_a $sa"
code=$(fetch '/allocs_profile_stop' "$T/x")
[ "$code" = 409 ] && pass "second stop is 409" || fail "second stop answered $code"
# A timed recording blocks a start while it runs.
fetch '/allocs_profile?duration=2' "$T/t.pb.gz" >"$T/tcode" &
bg=$!
sleep 0.5
code=$(fetch '/allocs_profile_start' "$T/x")
wait $bg
[ "$code" = 409 ] && [ "$(cat "$T/tcode")" = 200 ] && pass "start during a timed recording is 409" ||
    fail "start during timed answered $code (timed: $(cat "$T/tcode"))"
stop_prog loop

# A recording sees every call from its start, on every thread, however far
# into its sampling countdown each thread was (the start parks them all).
start_prog burst -- "$BUILD/test/p_heap_cases" burst || finish
code=$(fetch '/allocs_profile_start?sample_rate=1' "$T/x")
[ "$code" = 200 ] || fail "burst: start answered $code"
echo go >&3
for i in $(seq 100); do grep -q '^burst_done' "$T/burst.out" && break; sleep 0.1; done
code=$(fetch '/allocs_profile_stop' "$T/b.pb.gz")
for site in site_burst_main site_burst_thread; do
    n=$(flat "$T/b.pb.gz" alloc_objects "$site")
    [ "$code" = 200 ] && [ "$n" = 1000 ] && pass "burst: $site recorded $n of 1000 calls from the start" ||
        fail "burst: $site recorded $n of 1000 calls (stop answered $code)"
done
stop_prog burst

# Heap sampling off: the heap endpoints say why, /allocs_profile still works.
start_prog loop PROFEP_HEAP_RATE=0 -- "$P" loop || finish
code=$(curl -s -m 10 -D "$T/hdr" -o "$T/x" -w '%{http_code}' "http://$ADDR/debug/pprof/heap")
[ "$code" = 503 ] && grep -qi '^X-Go-Pprof: 1' "$T/hdr" && grep -q 'PROFEP_HEAP_RATE' "$T/x" &&
    pass "rate 0: heap is 503 ($(cat "$T/x"))" || fail "rate 0: heap answered $code: $(cat "$T/x")"
code=$(fetch /debug/pprof/allocs "$T/x")
[ "$code" = 503 ] && pass "rate 0: allocs is 503" || fail "rate 0: allocs answered $code"
code=$(fetch '/allocs_profile?duration=0.5&sample_rate=0.01' "$T/o.pb.gz")
[ "$code" = 200 ] && go tool pprof -raw "$T/o.pb.gz" >/dev/null 2>&1 && pass "rate 0: /allocs_profile works" ||
    fail "rate 0: /allocs_profile answered $code"
stop_prog loop
finish
