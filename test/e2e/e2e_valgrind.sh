#!/usr/bin/env bash
# e2e_valgrind: the library's threaded unit tests under valgrind's drd (data
# races, lock misuse): u_heap (sampling tables shared by threads) and u_prof
# (concurrent symbol resolves and profile building).  Only valgrind's verdict
# counts: a unit test's own timing checks do not hold at valgrind's speed.
# Then memcheck on a small program with the library preloaded (below).
# Not feasible, and why (README "Hardening"): drd on preloaded programs;
# u_sampler and u_sampler_ring, whose lock-free ring
# and stop flags synchronise through C11 atomics, which drd and helgrind do
# not model (every hand-over is reported; u_sampler_ring does not finish);
# u_mutex, which locks an error-checking mutex twice on purpose (EDEADLK) and
# whose timed waits outlast its alarm under drd; for the same reason u_heap's
# threaded check of the lock-free live table runs natively only
# (PE_UNDER_DRD).
BUILD=${BUILD:-build}
command -v valgrind >/dev/null || { echo "skip: valgrind not installed"; exit 77; }
failed=0 ran=0
for t in u_heap u_prof; do
    [ -x "$BUILD/test/$t" ] || { echo "skip $t: not built"; continue; }
    log=$(mktemp /tmp/pe-vg.XXXXXX)
    start=$SECONDS
    PE_UNDER_DRD=1 valgrind --tool=drd -q --error-exitcode=99 --num-callers=12 "$BUILD/test/$t" >"$log" 2>&1
    rc=$?
    ran=$((ran + 1))
    if [ $rc = 99 ]; then
        echo "FAIL $t under drd:"
        grep -m 60 '^==' "$log"
        failed=1
    else
        echo "ok   $t under drd: no reports ($((SECONDS - start)) s; its own checks: $(tail -n 1 "$log"))"
    fi
    rm -f "$log"
done
# memcheck on a small program with the library preloaded (issue 31): it
# starts its server, serves, and exits; no error may come from us.  The one
# suppression (valgrind_libunwind.supp) is for libunwind's own write of a
# page's first byte into its validation pipe.
LIB=${LIB:-$BUILD/libprofendpoints.so}
if [ -x "$BUILD/test/p_sleep" ] && [ -f "$LIB" ]; then
    log=$(mktemp /tmp/pe-vg.XXXXXX)
    start=$SECONDS
    PROFEP_ADDR=127.0.0.1:0 valgrind -q --trace-children=yes --error-exitcode=99 \
        --suppressions=test/e2e/valgrind_libunwind.supp --num-callers=20 \
        env LD_PRELOAD="$LIB" "$BUILD/test/p_sleep" 8 3 >"$log" 2>&1
    rc=$?
    ran=$((ran + 1))
    if [ $rc != 3 ] || grep -q '^==' "$log" || ! grep -q '^profendpoints: serving' "$log"; then
        echo "FAIL memcheck on p_sleep with the library (status $rc, want 3):"
        grep -m 60 -e '^==' -e '^profendpoints' "$log"
        failed=1
    else
        echo "ok   memcheck on p_sleep with the library: served, no error ($((SECONDS - start)) s)"
    fi
    rm -f "$log"
fi
[ $ran -gt 0 ] || { echo "skip: no unit test built"; exit 77; }
exit $failed
