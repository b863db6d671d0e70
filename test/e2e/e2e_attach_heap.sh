#!/usr/bin/env bash
# e2e_attach_heap: the heap after an attach (issue 41).  p_heap_split makes
# 64 MiB of blocks, waits; the library is attached 1 s later; the blocks from
# before are freed and the 70/30 split runs.  The heap split after the attach
# is within 2 points, live bytes per site within 5% of what was allocated
# since, the blocks from before count nowhere, every heap endpoint answers
# and says "since attach at".  After detach every relocation slot of every
# object is what it was before the attach (read from /proc/PID/mem), and so
# are the objects' mapping protections; the program ends with status 0.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl go python3 readelf
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (make tests)"; exit 77; }

# 32 KiB between samples: ~5,000 live samples at site_b, so 5% is several
# standard deviations of the estimate
SHIM_SETTINGS='PROFEP_HEAP_RATE=32768'
shim_start split LD_BIND_NOW=1 P_SPLIT_AFTER="$T/go" -- "$BUILD/test/p_heap_split" $((4 << 30)) $((1200 << 20)) 120
shim_wait split waiting || { bad "p_heap_split did not start"; cat "$T/split.err"; pe_finish; }
sleep 1
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
shim_cmd attach && ok "attached: $SHIM_LINE" || { bad "attach: $SHIM_RC $SHIM_LINE"; pe_finish; }
python3 test/e2e/got_check.py snap "$PE_PID" "$T/attached.json" "$T/before.json"
n=$(python3 test/e2e/got_check.py differ "$T/before.json" "$T/attached.json")
[ "${n:-0}" -gt 0 ] && ok "$n relocation slots redirected" || bad "no slot redirected"
touch "$T/go"
shim_wait split ready 300 || { bad "the split did not finish"; cat "$T/split.err"; pe_finish; }
A=$(val split site_a_bytes); B=$(val split site_b_bytes)
LA=$(val split live_a_bytes); LB=$(val split live_b_bytes)

code=$(pe_fetch /debug/pprof/heap "$T/heap.pb.gz")
[ "$code" = 200 ] || bad "/debug/pprof/heap answered $code"
ea=$(bytes_flat "$T/heap.pb.gz" alloc_space site_a_alloc); eb=$(bytes_flat "$T/heap.pb.gz" alloc_space site_b_alloc)
share=$(awk -v a="$ea" -v b="$eb" 'BEGIN { if (a + b > 0) printf "%.2f", 100 * a / (a + b); else print 0 }')
awk -v s="$share" 'BEGIN { exit !(s >= 68 && s <= 72) }' &&
    ok "heap split after attach: site_a $share% (truth 70%)" || bad "heap split: site_a $share%, want 70 +- 2"
ia=$(bytes_flat "$T/heap.pb.gz" inuse_space site_a_alloc); ib=$(bytes_flat "$T/heap.pb.gz" inuse_space site_b_alloc)
within "$ia" "$LA" 5 && ok "site_a live $ia vs true $LA ($(pct "$ia" "$LA"))" ||
    bad "site_a live $ia vs true $LA ($(pct "$ia" "$LA")), want within 5%"
within "$ib" "$LB" 5 && ok "site_b live $ib vs true $LB ($(pct "$ib" "$LB"))" ||
    bad "site_b live $ib vs true $LB ($(pct "$ib" "$LB")), want within 5%"
pre=$(bytes_flat "$T/heap.pb.gz" alloc_space site_pre_alloc)
[ "${pre%.*}" = 0 ] && ok "blocks from before the attach count nowhere (freed after it)" ||
    bad "site_pre_alloc has $pre bytes"
go tool pprof -raw "$T/heap.pb.gz" 2>/dev/null | grep -q 'since attach at' &&
    ok "the profile says since attach at" || bad "no 'since attach at' comment"

for path in /debug/pprof/allocs '/debug/pprof/heap?debug=1' '/debug/pprof/heap?min_age=0' \
    /heap_snapshot '/debug/pprof/heap?seconds=1' '/heap_timeline?format=json' /heap_peak \
    '/debug/pprof/heap?since=1' '/allocs_profile?seconds=1'; do
    code=$(pe_fetch "$path" "$T/x")
    [ "$code" = 200 ] && ok "$path answers" || bad "$path answered $code: $(head -c 200 "$T/x")"
done
grep -q 'since attach at' <(curl -s "http://$PE_ADDR/debug/pprof/heap?debug=1") &&
    ok "debug=1 says since attach at" || bad "debug=1 without the attach note"

shim_cmd detach && ok "detached: $SHIM_LINE" || bad "detach: $SHIM_RC $SHIM_LINE"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
pe_stop_ready split && ok "the program ended with status 0"
pe_finish
