#!/usr/bin/env bash
# e2e_heap_split.sh: heap profile accuracy against ground truth.  p_heap_split
# allocates 8 GiB from two named sites in a 70/30 split, keeps 1.2 GiB, frees
# half of it.  At the default rate each site's alloc_space must be within 5%
# of its true bytes and the live bytes (inuse_space) within 10%; sample types,
# period, default type, debug=1 text and seconds=N delta are checked too.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go

pe_start_ready split -- "$BUILD/test/p_heap_split" || pe_finish
A=$(val split site_a_bytes); B=$(val split site_b_bytes)
LA=$(val split live_a_bytes); LB=$(val split live_b_bytes); L=$((LA + LB))

code=$(pe_fetch /debug/pprof/heap "$T/heap.pb.gz")
[ "$code" = 200 ] || bad "/debug/pprof/heap answered $code"
go tool pprof -raw "$T/heap.pb.gz" >"$T/raw" 2>&1 || bad "pprof cannot read the heap profile"
grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]' "$T/raw" &&
    ok "sample types in Go's order, default inuse_space" || bad "sample types: $(grep -A1 '^Samples' "$T/raw" | tail -1)"
grep -q '^PeriodType: space bytes' "$T/raw" && grep -q '^Period: 524288' "$T/raw" &&
    ok "period space/bytes 524288" || bad "period type/period"
grep -q 'bytes:\[' "$T/raw" && ok "bytes label" || bad "no bytes label"

ea=$(bytes_flat "$T/heap.pb.gz" alloc_space site_a_alloc); eb=$(bytes_flat "$T/heap.pb.gz" alloc_space site_b_alloc)
within "$ea" "$A" 5 && ok "site_a alloc_space $ea vs true $A ($(pct "$ea" "$A"))" ||
    bad "site_a alloc_space $ea vs true $A ($(pct "$ea" "$A")), want within 5%"
within "$eb" "$B" 5 && ok "site_b alloc_space $eb vs true $B ($(pct "$eb" "$B"))" ||
    bad "site_b alloc_space $eb vs true $B ($(pct "$eb" "$B")), want within 5%"
ia=$(bytes_flat "$T/heap.pb.gz" inuse_space site_a_alloc); ib=$(bytes_flat "$T/heap.pb.gz" inuse_space site_b_alloc)
il=$(bytes_total "$T/heap.pb.gz" inuse_space)
within "$il" "$L" 10 && ok "inuse_space $il vs true live $L ($(pct "$il" "$L"); site_a $(pct "$ia" "$LA"), site_b $(pct "$ib" "$LB"))" ||
    bad "inuse_space $il vs true live $L ($(pct "$il" "$L")), want within 10%"

code=$(pe_fetch /debug/pprof/allocs "$T/allocs.pb.gz")
[ "$code" = 200 ] && go tool pprof -raw "$T/allocs.pb.gz" 2>/dev/null | grep -q 'alloc_space/bytes\[dflt\]' &&
    ok "/debug/pprof/allocs defaults to alloc_space" || bad "/debug/pprof/allocs ($code)"
a2=$(bytes_flat "$T/allocs.pb.gz" alloc_space site_a_alloc)
[ "$a2" = "$ea" ] && ok "allocs is cumulative (same totals while idle)" || bad "allocs $a2 vs heap $ea"

code=$(pe_fetch '/debug/pprof/heap?debug=1' "$T/heap.txt")
{ [ "$code" = 200 ] && head -1 "$T/heap.txt" | grep -Eq '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/1048576$' &&
    grep -Eq '^[0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @( 0x[0-9a-f]+)+$' "$T/heap.txt" &&
    grep -Eq $'^#\t0x[0-9a-f]+\tsite_a_alloc' "$T/heap.txt"; } && ok "debug=1 text" ||
    { bad "debug=1 text ($code)"; head -5 "$T/heap.txt"; }
# go tool pprof reads the legacy text too (and unbiases it with heap/2*rate).
ta=$(bytes_flat "$T/heap.txt" alloc_space site_a_alloc)
within "$ta" "$A" 10 && ok "debug=1 read back by pprof: site_a $(pct "$ta" "$A")" || bad "debug=1 via pprof: site_a $ta vs $A"

code=$(pe_fetch '/debug/pprof/heap?seconds=1' "$T/delta.pb.gz")
da=$(bytes_flat "$T/delta.pb.gz" alloc_space site_a_alloc); di=$(bytes_total "$T/delta.pb.gz" inuse_space)
[ "$code" = 200 ] && [ "${da%.*}" -lt $((A / 100)) ] && within "$di" "$L" 10 &&
    ok "seconds=1: idle delta alloc_space $da, inuse at end $di" || bad "seconds=1 delta ($code): alloc $da inuse $di"
code=$(pe_fetch '/debug/pprof/heap?seconds=1&debug=1' "$T/x")
[ "$code" = 400 ] && ok "seconds with debug is 400" || bad "seconds+debug answered $code"

pe_stop_ready split
pe_finish
