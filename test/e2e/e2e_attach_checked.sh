#!/usr/bin/env bash
# e2e_attach_checked: blocks made before an attach, used after it, under the
# allocators that check (issue 41).  p_attach_blocks (every block kind) under
# valgrind's memcheck, attached once for a few seconds while its 8 threads
# free, reallocate and measure the blocks: memcheck reports nothing (nothing
# of ours reads outside a block it made: valgrind's allocator keeps red zones
# around every block, and no header of ours is below it), checksum unchanged.
# (With the LD_PRELOAD way's read of the word below each freed block put
# back in free(), memcheck reports "Invalid read of size 8 ... 8 bytes before
# a block": the check is live.)  Then built with ASan (its allocator checks
# every free and realloc it is given; our code is not instrumented, so this
# pass shows the hand-over to a checking allocator, not our reads), 3
# attach/detach cycles: no report, checksum unchanged.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need cc
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (make tests)"; exit 77; }

run() { # NAME CYCLES HOLD PROG ARGS...: attach/detach CYCLES times, HOLD s attached
    local name=$1 n=$2 hold=$3 i
    shift 3
    shim_start "$name" -- "$@"
    shim_wait "$name" ready 300 || { bad "$name: did not start"; head -20 "$T/$name.err"; return 1; }
    for i in $(seq "$n"); do
        shim_cmd attach || { bad "$name: attach $i: $SHIM_RC $SHIM_LINE"; break; }
        sleep "$hold"
        shim_cmd detach || { bad "$name: detach $i: $SHIM_RC $SHIM_LINE"; break; }
    done
    ok "$name: $n attach/detach cycles"
    if pe_stop_ready "$name"; then
        grep -q '^checksum ok' "$T/$name.out" && ok "$name: checksum unchanged, no report" ||
            bad "$name: no checksum line"
    else
        grep -m 30 -e '^==' -e 'ERROR' "$T/$name.err"
    fi
}

if command -v valgrind >/dev/null; then
    # (valgrind's pvalloc aborts the program: valloc instead)
    # (nouserintercepts: valgrind would otherwise replace our malloc family
    # too, as it does any object's that defines malloc, and ours would never run)
    # (the shim attaches from inside: an injector would run its calls
    # natively in valgrind's own process, not in the program valgrind runs)
    ATTACH_VIA=shim
    P_BLOCKS_NO_PVALLOC=1 run memcheck 1 3 valgrind -q --error-exitcode=99 \
        --soname-synonyms=somalloc=nouserintercepts --suppressions=test/e2e/valgrind_libunwind.supp \
        --num-callers=20 "$BUILD/test/p_attach_blocks" 20000
else
    echo "(valgrind not installed: the memcheck pass is skipped)"
fi
ATTACH_VIA=
source test/e2e/attach_shim.sh # (the injector again, when built)
if cc -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address -o "$T/p_attach_blocks_asan" \
    test/progs/p_attach_blocks.c -ldl -lpthread 2>/dev/null; then
    # (the shim is preloaded ahead of ASan's runtime, which only warns about that)
    ASAN_OPTIONS=verify_asan_link_order=0:abort_on_error=0 \
        run asan 3 1 "$T/p_attach_blocks_asan" 200000
else
    echo "(no ASan runtime: the ASan pass is skipped)"
fi
pe_finish
