#!/usr/bin/env bash
# e2e_heap_allocs.sh: /allocs_profile, /allocs_profile_start, /allocs_profile_stop
# (Bernoulli per call, scaled by 1/sample_rate, label bytes, one recording at a
# time: 409s), parameter errors (400), and heap sampling off (503 on the heap
# endpoints, /allocs_profile still works).  The workload allocates from two
# sites, 7 calls to 3, with the same sizes, and prints its running byte total.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go
P=$BUILD/test/p_heap_cases
# the program's last running total and its time: "BYTES SECONDS"
lastbytes() { awk '$1 == "loop_bytes" { v = $2; t = $3 } END { print (v == "" ? 0 : v), (t == "" ? 0 : t) }' "$T/loop.out"; }

pe_start_ready loop -- "$P" loop || pe_finish
for q in 'sample_rate=0' 'sample_rate=2' 'sample_rate=abc' 'duration=-1'; do
    code=$(pe_fetch "/allocs_profile?$q" "$T/x")
    [ "$code" = 400 ] && ok "/allocs_profile?$q is 400 ($(head -c 80 "$T/x"))" || bad "/allocs_profile?$q answered $code"
done

# a first profile reads the program's debug information (about a second on a
# busy machine): done here, so that the measured request's window is the recording's
pe_fetch '/allocs_profile?sample_rate=0.001&duration=0.2' "$T/warm.pb.gz" >/dev/null
sleep 0.3
read -r b0 t0 < <(lastbytes)
code=$(pe_fetch '/allocs_profile?sample_rate=0.001&duration=2' "$T/a.pb.gz")
read -r b1 t1 < <(lastbytes)
# what the program allocated in 2 s at its rate around the request: the request
# itself outlasts its 2 s window (by seconds at a load of 25), the rate does not
want=$(awk -v b0="$b0" -v b1="$b1" -v t0="$t0" -v t1="$t1" \
    'BEGIN { printf "%.0f", (t1 > t0 ? (b1 - b0) * 2 / (t1 - t0) : 0) }')
[ "$code" = 200 ] || bad "/allocs_profile answered $code"
go tool pprof -raw "$T/a.pb.gz" >"$T/raw" 2>&1 || bad "pprof cannot read the allocs profile"
grep -q '^alloc_objects/count alloc_space/bytes\[dflt\]' "$T/raw" && ok "sample types alloc_objects, alloc_space" ||
    bad "sample types: $(grep -A1 '^Samples' "$T/raw" | tail -1)"
grep -q 'bytes:\[[0-9]*\]' "$T/raw" && ok "label bytes" || bad "no bytes label"
a=$(bytes_flat "$T/a.pb.gz" alloc_space site_loop_a); b=$(bytes_flat "$T/a.pb.gz" alloc_space site_loop_b)
awk -v a="$a" -v b="$b" 'BEGIN { f = a / (a + b); exit !(f > 0.66 && f < 0.74) }' &&
    ok "site split $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / (a + b) }') (true 0.70)" ||
    bad "site split a=$a b=$b, want 0.70 +- 0.04"
within "$((a + b))" "$want" 25 && ok "scaled bytes $((a + b)) vs ~$want in the 2 s window ($(pct $((a + b)) $want))" ||
    bad "scaled bytes $((a + b)) vs ~$want in the 2 s window ($(pct $((a + b)) $want)); $((b1 - b0)) in $t0..$t1"

code=$(pe_fetch '/allocs_profile_stop' "$T/x")
[ "$code" = 409 ] && ok "stop without a recording is 409" || bad "stop without recording answered $code"
code=$(pe_fetch '/allocs_profile_start?sample_rate=0.01' "$T/x")
[ "$code" = 200 ] && ok "start: $(cat "$T/x")" || bad "start answered $code"
code=$(pe_fetch '/allocs_profile_start' "$T/x")
[ "$code" = 409 ] && ok "second start is 409 ($(cat "$T/x"))" || bad "second start answered $code"
code=$(pe_fetch '/allocs_profile?duration=1' "$T/x")
[ "$code" = 409 ] && ok "timed recording during a session is 409" || bad "timed during session answered $code"
sleep 1
code=$(pe_fetch '/allocs_profile_stop' "$T/s.pb.gz")
sa=$(bytes_flat "$T/s.pb.gz" alloc_space site_loop_a)
[ "$code" = 200 ] && [ "${sa%.*}" -gt 0 ] && ok "stop returns the profile (site_loop_a $sa B)" || bad "stop answered $code, site_loop_a $sa"
code=$(pe_fetch '/allocs_profile_stop' "$T/x")
[ "$code" = 409 ] && ok "second stop is 409" || bad "second stop answered $code"
# A timed recording blocks a start while it runs.
pe_fetch '/allocs_profile?duration=2' "$T/t.pb.gz" >"$T/tcode" &
bg=$!
sleep 0.5
code=$(pe_fetch '/allocs_profile_start' "$T/x")
wait $bg
[ "$code" = 409 ] && [ "$(cat "$T/tcode")" = 200 ] && ok "start during a timed recording is 409" ||
    bad "start during timed answered $code (timed: $(cat "$T/tcode"))"
pe_stop_ready loop

# A recording sees every call from its start, on every thread, however far
# into its sampling countdown each thread was (the start parks them all).
pe_start_ready burst -- "$BUILD/test/p_heap_cases" burst || pe_finish
code=$(pe_fetch '/allocs_profile_start?sample_rate=1' "$T/x")
[ "$code" = 200 ] || bad "burst: start answered $code"
echo go >&3
for i in $(seq 100); do grep -q '^burst_done' "$T/burst.out" && break; sleep 0.1; done
code=$(pe_fetch '/allocs_profile_stop' "$T/b.pb.gz")
for site in site_burst_main site_burst_thread; do
    n=$(bytes_flat "$T/b.pb.gz" alloc_objects "$site")
    [ "$code" = 200 ] && [ "$n" = 1000 ] && ok "burst: $site recorded $n of 1000 calls from the start" ||
        bad "burst: $site recorded $n of 1000 calls (stop answered $code)"
done
pe_stop_ready burst

# Heap sampling off: the heap endpoints say why, /allocs_profile still works.
pe_start_ready loop PROFEP_HEAP_RATE=0 -- "$P" loop || pe_finish
code=$(curl -s -m 10 -D "$T/hdr" -o "$T/x" -w '%{http_code}' "http://$PE_ADDR/debug/pprof/heap")
[ "$code" = 503 ] && grep -qi '^X-Go-Pprof: 1' "$T/hdr" && grep -q 'PROFEP_HEAP_RATE' "$T/x" &&
    ok "rate 0: heap is 503 ($(cat "$T/x"))" || bad "rate 0: heap answered $code: $(cat "$T/x")"
code=$(pe_fetch /debug/pprof/allocs "$T/x")
[ "$code" = 503 ] && ok "rate 0: allocs is 503" || bad "rate 0: allocs answered $code"
code=$(pe_fetch '/allocs_profile?duration=0.5&sample_rate=0.01' "$T/o.pb.gz")
[ "$code" = 200 ] && go tool pprof -raw "$T/o.pb.gz" >/dev/null 2>&1 && ok "rate 0: /allocs_profile works" ||
    bad "rate 0: /allocs_profile answered $code"
pe_stop_ready loop
pe_finish
