#!/usr/bin/env bash
# e2e_heap_split.sh: heap profile accuracy against ground truth.  p_heap_split
# allocates 8 GiB from two named sites in a 70/30 split, keeps 1.2 GiB, frees
# half of it.  At the default rate each site's alloc_space must be within 5%
# of its true bytes and the live bytes (inuse_space) within 10%; sample types,
# period, default type, debug=1 text and seconds=N delta are checked too.
cd "$(dirname "$0")/.." || exit 1
. test/e2e_heap.inc

start_prog split -- "$BUILD/test/p_heap_split" || finish
A=$(val split site_a_bytes); B=$(val split site_b_bytes)
LA=$(val split live_a_bytes); LB=$(val split live_b_bytes); L=$((LA + LB))

code=$(fetch /debug/pprof/heap "$T/heap.pb.gz")
[ "$code" = 200 ] || fail "/debug/pprof/heap answered $code"
go tool pprof -raw "$T/heap.pb.gz" >"$T/raw" 2>&1 || fail "pprof cannot read the heap profile"
grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]' "$T/raw" &&
    pass "sample types in Go's order, default inuse_space" || fail "sample types: $(grep -A1 '^Samples' "$T/raw" | tail -1)"
grep -q '^PeriodType: space bytes' "$T/raw" && grep -q '^Period: 524288' "$T/raw" &&
    pass "period space/bytes 524288" || fail "period type/period"
grep -q 'bytes:\[' "$T/raw" && pass "bytes label" || fail "no bytes label"

ea=$(flat "$T/heap.pb.gz" alloc_space site_a_alloc); eb=$(flat "$T/heap.pb.gz" alloc_space site_b_alloc)
within "$ea" "$A" 5 && pass "site_a alloc_space $ea vs true $A ($(pct "$ea" "$A"))" ||
    fail "site_a alloc_space $ea vs true $A ($(pct "$ea" "$A")), want within 5%"
within "$eb" "$B" 5 && pass "site_b alloc_space $eb vs true $B ($(pct "$eb" "$B"))" ||
    fail "site_b alloc_space $eb vs true $B ($(pct "$eb" "$B")), want within 5%"
ia=$(flat "$T/heap.pb.gz" inuse_space site_a_alloc); ib=$(flat "$T/heap.pb.gz" inuse_space site_b_alloc)
il=$(total "$T/heap.pb.gz" inuse_space)
within "$il" "$L" 10 && pass "inuse_space $il vs true live $L ($(pct "$il" "$L"); site_a $(pct "$ia" "$LA"), site_b $(pct "$ib" "$LB"))" ||
    fail "inuse_space $il vs true live $L ($(pct "$il" "$L")), want within 10%"

code=$(fetch /debug/pprof/allocs "$T/allocs.pb.gz")
[ "$code" = 200 ] && go tool pprof -raw "$T/allocs.pb.gz" 2>/dev/null | grep -q 'alloc_space/bytes\[dflt\]' &&
    pass "/debug/pprof/allocs defaults to alloc_space" || fail "/debug/pprof/allocs ($code)"
a2=$(flat "$T/allocs.pb.gz" alloc_space site_a_alloc)
[ "$a2" = "$ea" ] && pass "allocs is cumulative (same totals while idle)" || fail "allocs $a2 vs heap $ea"

code=$(fetch '/debug/pprof/heap?debug=1' "$T/heap.txt")
{ [ "$code" = 200 ] && head -1 "$T/heap.txt" | grep -Eq '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/1048576$' &&
    grep -Eq '^[0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @( 0x[0-9a-f]+)+$' "$T/heap.txt" &&
    grep -Eq $'^#\t0x[0-9a-f]+\tsite_a_alloc' "$T/heap.txt"; } && pass "debug=1 text" ||
    { fail "debug=1 text ($code)"; head -5 "$T/heap.txt"; }
# go tool pprof reads the legacy text too (and unbiases it with heap/2*rate).
ta=$(flat "$T/heap.txt" alloc_space site_a_alloc)
within "$ta" "$A" 10 && pass "debug=1 read back by pprof: site_a $(pct "$ta" "$A")" || fail "debug=1 via pprof: site_a $ta vs $A"

code=$(fetch '/debug/pprof/heap?seconds=1' "$T/delta.pb.gz")
da=$(flat "$T/delta.pb.gz" alloc_space site_a_alloc); di=$(total "$T/delta.pb.gz" inuse_space)
[ "$code" = 200 ] && [ "${da%.*}" -lt $((A / 100)) ] && within "$di" "$L" 10 &&
    pass "seconds=1: idle delta alloc_space $da, inuse at end $di" || fail "seconds=1 delta ($code): alloc $da inuse $di"
code=$(fetch '/debug/pprof/heap?seconds=1&debug=1' "$T/x")
[ "$code" = 400 ] && pass "seconds with debug is 400" || fail "seconds+debug answered $code"

stop_prog split
finish
