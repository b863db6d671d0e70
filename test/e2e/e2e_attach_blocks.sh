#!/usr/bin/env bash
# e2e_attach_blocks: blocks made before an attach are freed, reallocated and
# measured (malloc_usable_size) after it, on 8 threads, through attach/detach
# cycles (issue 41).  p_attach_blocks builds 1,000,000 blocks of every kind
# (small, mmapped, memalign, posix_memalign, aligned_alloc, valloc, pvalloc,
# calloc) before the first attach; its threads check each block's pattern
# and usable size as they go.  No crash, no hang (each attach and detach
# bounded), its checksum unchanged at exit, a heap profile during an attach,
# and after the last detach every relocation slot and protection as before.
# ATTACH_CYCLES (default 20) sets the number of cycles.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl python3 readelf
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (make tests)"; exit 77; }
CYCLES=${ATTACH_CYCLES:-20}

SHIM_SETTINGS='PROFEP_HEAP_RATE=65536'
shim_start blocks LD_BIND_NOW=1 -- "$BUILD/test/p_attach_blocks" 1000000
shim_wait blocks ready 120 || { bad "p_attach_blocks did not start"; cat "$T/blocks.err"; pe_finish; }
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
fails=0
for i in $(seq "$CYCLES"); do
    if ! shim_cmd attach; then
        bad "attach $i: $SHIM_RC $SHIM_LINE"; fails=$((fails + 1)); break
    fi
    if [ "$i" = 1 ]; then
        sleep 1
        code=$(pe_fetch /debug/pprof/heap "$T/heap.pb.gz")
        [ "$code" = 200 ] && ok "heap profile during the first attach" || bad "heap answered $code"
    fi
    sleep 0.2
    if ! shim_cmd detach; then
        bad "detach $i: $SHIM_RC $SHIM_LINE"; fails=$((fails + 1)); break
    fi
    kill -0 "$PE_PID" 2>/dev/null || { bad "the program died in cycle $i"; break; }
done
[ $fails = 0 ] && ok "$CYCLES attach/detach cycles, each bounded"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after the last detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
if pe_stop_ready blocks; then
    grep -q '^checksum ok' "$T/blocks.out" && ok "the blocks' checksum unchanged ($(grep '^checksum ok' "$T/blocks.out"))" ||
        bad "no checksum line"
fi
pe_finish
