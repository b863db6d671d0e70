#!/usr/bin/env bash
# e2e_heap_cases.sh: the malloc family under the library, one workload mode of
# p_heap_cases each: realloc that moves, a buffer grown to 4 GiB, calloc (zeroed), the aligned
# allocators (aligned), a threaded program, a fork child that allocates, and a
# signal handler that allocates; and C++ new attributed to its caller.  Each must keep its semantics and exit 0, and
# the heap profile must attribute its bytes to the named sites.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go
P=$BUILD/test/p_heap_cases

# check_site FILE INDEX FUNC TRUE PCT
check_site() {
    local v
    v=$(bytes_flat "$1" "$2" "$3")
    within "$v" "$4" "$5" && ok "$3 $2 $v vs true $4 ($(pct "$v" "$4"))" ||
        bad "$3 $2 $v vs true $4 ($(pct "$v" "$4")), want within $5%"
}

run_case() { # MODE [ENV...]: start, fetch heap into $T/MODE.pb.gz
    local m=$1
    shift
    pe_start_ready "$m" "$@" -- "$P" "$m" || return 1
    [ "$(val "$m" semantics_ok)" = 1 ] && ok "$m: semantics kept" || bad "$m: semantics broken: $(cat "$T/$m.err")"
    code=$(pe_fetch /debug/pprof/heap "$T/$m.pb.gz")
    [ "$code" = 200 ] || { bad "$m: heap answered $code"; return 1; }
}

if run_case realloc; then
    check_site "$T/realloc.pb.gz" alloc_space site_realloc "$(val realloc realloc_bytes)" 10
    il=$(bytes_total "$T/realloc.pb.gz" inuse_space); L=$(val realloc live_bytes)
    within "$il" "$L" 15 && ok "realloc: inuse $il vs live $L ($(pct "$il" "$L")): moved blocks forgotten" ||
        bad "realloc: inuse $il vs live $L ($(pct "$il" "$L"))"
    pe_stop_ready realloc
fi

if run_case calloc; then
    check_site "$T/calloc.pb.gz" alloc_space site_calloc "$(val calloc calloc_bytes)" 10
    pe_stop_ready calloc
fi

if run_case aligned; then
    for s in posix_memalign aligned_alloc memalign valloc pvalloc; do
        check_site "$T/aligned.pb.gz" alloc_space "site_$s" "$(val aligned "${s}_bytes")" 12
    done
    pe_stop_ready aligned
fi

check_threads() { # LABEL: each site within 10%, in-use within 20%
    local k il L
    for k in 1 2 3 4; do
        check_site "$T/threads.pb.gz" alloc_space "thread_site_$k" "$(val threads "thread_site_${k}_bytes")" 10
    done
    il=$(bytes_total "$T/threads.pb.gz" inuse_space); L=$(val threads live_bytes)
    within "$il" "$L" 20 && ok "$1: inuse $il vs live $L ($(pct "$il" "$L"))" ||
        bad "$1: inuse $il vs live $L ($(pct "$il" "$L"))"
    pe_stop_ready threads
}

if run_case threads; then
    check_threads threads
fi

# 20 threads at once, in two waves: 12 own a stripe of the per-stack totals
# (plain adds), the rest share (atomic adds), and the second wave owns the
# stripes the first gave back at exit.
if run_case threads THREADS_PER_SITE=5; then
    check_threads "threads x20"
fi

if run_case fork PROFEP_HEAP_RATE=4096; then
    [ "$(val fork children_ok)" = 100 ] && ok "fork: 100 children allocated and exited 0" ||
        bad "fork: children ok $(val fork children_ok), hung $(val fork children_hung), failed $(val fork children_failed)"
    v=$(bytes_flat "$T/fork.pb.gz" alloc_space site_fork_child)
    [ "${v%.*}" -gt 0 ] && ok "fork: parent still profiles after forks" || bad "fork: parent profile lacks site_fork_child"
    pe_stop_ready fork
fi

# A buffer grown by realloc to 4 GiB: sampled big blocks are resized by the
# real realloc, header and all (mremap), never copied by us; the profile
# still holds the one live 4 GiB block.
if run_case grow; then
    ok "grow: peak resident $(val grow hwm_kb) KiB while growing a buffer to 4 GiB"
    v=$(bytes_flat "$T/grow.pb.gz" inuse_space site_grow)
    within "$v" "$(val grow live_bytes)" 1 && ok "grow: site_grow inuse $v" ||
        bad "grow: site_grow inuse $v vs true $(val grow live_bytes)"
    pe_stop_ready grow
fi
# The same at a 64 MiB rate: the first 1 MiB block is almost never sampled,
# so the buffer is seen in use only if big blocks are tagged from birth.
if run_case grow PROFEP_HEAP_RATE=67108864; then
    v=$(bytes_flat "$T/grow.pb.gz" inuse_space site_grow)
    within "$v" "$(val grow live_bytes)" 1 && ok "grow at 64 MiB: site_grow inuse $v" ||
        bad "grow at 64 MiB: site_grow inuse $v vs true $(val grow live_bytes)"
    pe_stop_ready grow
fi

# Every allocation sampled (rate 1): every block carries our tag in front, so
# realloc, calloc, the aligned family and malloc_usable_size all go through
# the tagged paths, threads free each other's tagged blocks, and the heap
# profile must still count exactly what is live.
for m in realloc calloc aligned threads; do
    if pe_start_ready "all_$m" PROFEP_HEAP_RATE=1 -- "$P" "$m"; then
        [ "$(val "all_$m" semantics_ok)" = 1 ] && ok "rate 1, $m: semantics kept with every block tagged" ||
            bad "rate 1, $m: semantics broken: $(cat "$T/all_$m.err")"
        if [ "$m" = realloc ]; then
            pe_fetch /debug/pprof/heap "$T/all.pb.gz" >/dev/null
            il=$(bytes_total "$T/all.pb.gz" inuse_space); L=$(val all_realloc live_bytes)
            within "$il" "$L" 1 && ok "rate 1: inuse $il vs live $L exactly" || bad "rate 1: inuse $il vs live $L"
        fi
        pe_stop_ready "all_$m"
    fi
done

# Differential: a fixed random sequence of malloc-family calls (odd, zero,
# invalid and impossible sizes and alignments, realloc growing and shrinking,
# malloc_usable_size) must print the same trace with the library as without,
# at every rate (rate 1: every block tagged).
D=$BUILD/test/p_heap_diff
"$D" >"$T/diff.0" 2>&1
for r in 1 4096 524288; do
    PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn PROFEP_HEAP_RATE=$r LD_PRELOAD=$LIB "$D" >"$T/diff.$r" 2>&1
    cmp -s "$T/diff.0" "$T/diff.$r" && ok "malloc family: same $(wc -l <"$T/diff.0")-line trace at rate $r" ||
        bad "malloc family: trace differs at rate $r: $(diff "$T/diff.0" "$T/diff.$r" | head -5)"
done

# Another allocator behind us (no headers: a pointer at a page start is never
# read below).  pvalloc is left out: jemalloc lacks it, glibc's would answer.
JE=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
if [ -n "$JE" ]; then
    LIB_SAVE=$LIB
    LIB="$LIB $JE"
    for m in realloc calloc threads; do
        if pe_start_ready "je_$m" PROFEP_HEAP_RATE=1 -- "$P" "$m"; then
            [ "$(val "je_$m" semantics_ok)" = 1 ] && ok "jemalloc behind us, rate 1, $m: semantics kept" ||
                bad "jemalloc behind us, rate 1, $m: semantics broken: $(cat "$T/je_$m.err")"
            pe_stop_ready "je_$m"
        fi
    done
    LD_PRELOAD=$JE "$D" 200000 foreign >"$T/jdiff.0" 2>&1
    for r in 1 524288; do
        PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn PROFEP_HEAP_RATE=$r LD_PRELOAD="$LIB" "$D" 200000 foreign >"$T/jdiff.$r" 2>&1
        cmp -s "$T/jdiff.0" "$T/jdiff.$r" && ok "jemalloc behind us: same malloc-family trace at rate $r" ||
            bad "jemalloc behind us: trace differs at rate $r: $(diff "$T/jdiff.0" "$T/jdiff.$r" | head -5)"
    done
    LIB=$LIB_SAVE
else
    echo "note: libjemalloc2 not installed: the foreign-allocator case is not run"
fi

# C++: operator new is the leaf, its caller next.
if pe_start_ready new -- "$BUILD/test/p_heap_new"; then
    code=$(pe_fetch /debug/pprof/heap "$T/new.pb.gz")
    c=$(bytes_cum "$T/new.pb.gz" alloc_space site_new); N=$(val new new_bytes)
    within "$c" "$N" 10 && ok "C++ new: site_new cum alloc_space $c vs true $N ($(pct "$c" "$N"))" ||
        bad "C++ new: site_new cum alloc_space $c vs true $N ($code)"
    go tool pprof -traces -sample_index=alloc_space "$T/new.pb.gz" 2>/dev/null |
        grep -A1 -E '^ +[0-9.]+[kMG]?B +operator new' | grep -q 'site_new' &&
        ok "C++ new: leaf operator new, then site_new" || bad "C++ new: stacks do not end in operator new <- site_new"
    pe_stop_ready new
fi

# The signal case runs over an async-signal-safe allocator preloaded after us.
BUMP=$T/libbump.so
if cc -O2 -shared -fPIC -o "$BUMP" test/bench/bench_heap_bump.c 2>"$T/cc.err"; then
    LIB_SAVE=$LIB
    LIB="$LIB $BUMP"
    if run_case signal PROFEP_HEAP_RATE=1024; then
        ok "signal: $(val signal handler_runs) handler runs allocating on an allocating thread"
        v=$(bytes_flat "$T/signal.pb.gz" alloc_space site_signal_handler)
        [ "${v%.*}" -gt 0 ] && ok "signal: handler allocations sampled ($v B)" || bad "signal: no site_signal_handler samples"
        pe_stop_ready signal
    fi
    LIB=$LIB_SAVE
else
    bad "cannot build the bump allocator: $(cat "$T/cc.err")"
fi
pe_finish
