#!/usr/bin/env bash
# e2e_truncated: a sample kept with its leaf only says what the leaf was
# (issue 38, item 5).  p_asm_leaf spins in hand-written assembly without
# unwind tables: the CPU profile's "truncated" comment says there is no
# unwind information for the leaf's address, in p_asm_leaf, and does not
# blame the dynamic loader or our unwinder.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

# The timer engine unwinds in the handler and keeps the leaf alone when it
# cannot go on; the perf engine walks the copy by frame pointers past a leaf
# without unwind tables (e2e_cpu_perf), so the leaf-only case is the timer's.
PE_ENV=PROFEP_CPU_ENGINE=timer pe_start $P/p_asm_leaf 30 || exit 1
eventually 20 grep -q '^ready$' "$PE_OUT" || { bad "p_asm_leaf never ready"; pe_finish; }
code=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/cpu.pb.gz)
check "cpu profile: 200 ($code)" [ "$code" = 200 ]
go tool pprof -comments $T/cpu.pb.gz >$T/c.txt 2>/dev/null
check "truncated: no unwind information for the leaf ($(grep truncated $T/c.txt))" \
    grep -q "^truncated: [0-9]* samples .*no unwind information for the leaf's address.*p_asm_leaf" $T/c.txt
check "truncated: the loader and our unwinder are not blamed" \
    bash -c "! grep -q 'dynamic loader' $T/c.txt"
check "asm_spin is the leaf" sh -c "go tool pprof -top $T/cpu.pb.gz 2>/dev/null | grep -q asm_spin"
pe_stop
pe_finish
