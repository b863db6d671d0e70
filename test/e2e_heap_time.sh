#!/usr/bin/env bash
# e2e_heap_time.sh: memory over time against ground truth.  p_heap_leak churns
# ~16 MiB of short-lived blocks from churn_alloc and, for a known window, leaks
# 4 KiB blocks from leak_alloc: min_age/max_age (pprof, debug=1, age_s label,
# /heap_snapshot) must separate the two.
cd "$(dirname "$0")/.." || exit 1
. test/e2e_heap.inc

# share FILE FUNC: FUNC's share of the profile's inuse_space, in percent.
share() {
    local f t
    f=$(flat "$1" inuse_space "$2"); t=$(total "$1" inuse_space)
    awk -v f="$f" -v t="$t" 'BEGIN { if (t > 0) printf "%.1f", f * 100 / t; else print 0 }'
}
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
wait_line() { # NAME WORD: up to 60 s for a line starting with WORD
    local i
    for i in $(seq 300); do grep -q "^$2" "$T/$1.out" && return 0; sleep 0.2; done
    return 1
}

start_prog leak PROFEP_HEAP_RATE=1024 PROFEP_HEAP_CHECKPOINT=1 -- "$BUILD/test/p_heap_leak" 3 6 || finish
wait_line leak leak_start || fail "leak never started"
sleep 3
code=$(fetch '/debug/pprof/heap?max_age=1' "$T/young.pb.gz")
s=$(share "$T/young.pb.gz" churn_alloc)
[ "$code" = 200 ] && ge "$s" 80 && pass "max_age=1 while leaking: churn_alloc has $s% of the bytes" ||
    fail "max_age=1 ($code): churn_alloc has $s%, want >= 80%"
wait_line leak leak_done || fail "leak never finished"
LEAK=$(val leak leak_done); T_START=$(val leak leak_start)
# since=: the checkpoint nearest to 1.5 s before the leak began (checkpoints every 1 s).
ago=$(awk -v s="$T_START" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s + 1.5 }')
code=$(fetch "/debug/pprof/heap?since=$ago" "$T/since.pb.gz")
code2=$(fetch "/debug/pprof/heap?since=$ago&debug=1" "$T/since.txt") # at once: since= is relative to now
g=$(flat "$T/since.pb.gz" inuse_space leak_alloc); c=$(flat "$T/since.pb.gz" inuse_space churn_alloc)
[ "$code" = 200 ] && within "$g" "$LEAK" 10 && pass "since=$ago: leak_alloc grew $g vs true $LEAK ($(pct "$g" "$LEAK")), churn_alloc $c" ||
    fail "since=$ago ($code): leak_alloc grew $g vs true $LEAK ($(pct "$g" "$LEAK")), want within 10%"
go tool pprof -raw "$T/since.pb.gz" 2>/dev/null | grep -q '^Comment: change of the sampled live heap since the checkpoint of' &&
    pass "since= says which checkpoint" || fail "since= comment"
[ "$code2" = 200 ] && grep -q $'\tleak_alloc' "$T/since.txt" && pass "since=&debug=1 text" || { fail "since debug=1 ($code2)"; head -3 "$T/since.txt"; }
code=$(fetch "/debug/pprof/heap?since=5&min_age=1" "$T/x")
[ "$code" = 400 ] && pass "since with min_age is 400" || fail "since+min_age answered $code"
sleep 6
code=$(fetch '/debug/pprof/heap?min_age=5' "$T/old.pb.gz")
s=$(share "$T/old.pb.gz" leak_alloc); b=$(flat "$T/old.pb.gz" inuse_space leak_alloc)
[ "$code" = 200 ] && ge "$s" 95 && pass "min_age=5: leak_alloc has $s% of the bytes" ||
    fail "min_age=5 ($code): leak_alloc has $s%, want >= 95%"
within "$b" "$LEAK" 10 && pass "min_age=5: leak_alloc $b vs true $LEAK ($(pct "$b" "$LEAK"))" ||
    fail "min_age=5: leak_alloc $b vs true $LEAK ($(pct "$b" "$LEAK")), want within 10%"
code=$(fetch '/debug/pprof/heap?min_age=0' "$T/all.pb.gz")
go tool pprof -top -unit=B -tagfocus=age_s=5: "$T/all.pb.gz" >"$T/focus" 2>&1
grep -q 'leak_alloc' "$T/focus" && ! grep -q 'churn_alloc' "$T/focus" &&
    pass "-tagfocus=age_s=5: keeps leak_alloc only" || { fail "tagfocus age_s"; head -12 "$T/focus"; }
go tool pprof -raw "$T/all.pb.gz" 2>/dev/null | grep -q 'age_s:\[[0-9]*\]' && pass "age_s is a numeric label" ||
    fail "no numeric age_s label"
code=$(fetch '/debug/pprof/heap?min_age=5&debug=1' "$T/old.txt")
[ "$code" = 200 ] && head -1 "$T/old.txt" | grep -Eq '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/2$' &&
    grep -q $'\tleak_alloc' "$T/old.txt" && ! grep -q $'\tchurn_alloc' "$T/old.txt" &&
    pass "min_age=5&debug=1: Go's text, leak only" || { fail "debug=1 text ($code)"; head -5 "$T/old.txt"; }
tb=$(flat "$T/old.txt" space leak_alloc) # (pprof names equal alloc and inuse "space")
within "$tb" "$b" 2 && pass "debug=1 read back by pprof: $tb" || fail "debug=1 via pprof: $tb vs $b"
code=$(fetch '/debug/pprof/heap?min_age=5&format=text' "$T/old.text")
[ "$code" = 200 ] && grep -q leak_alloc "$T/old.text" && ! grep -q churn_alloc "$T/old.text" &&
    pass "min_age=5&format=text" || fail "format=text ($code)"
code=$(fetch '/heap_snapshot?min_age=5' "$T/old.heapsnapshot")
[ "$code" = 200 ] && grep -q leak_alloc "$T/old.heapsnapshot" && ! grep -q churn_alloc "$T/old.heapsnapshot" &&
    pass "/heap_snapshot?min_age=5 lists the leak only" || fail "/heap_snapshot?min_age=5 ($code)"
code=$(fetch '/heap_snapshot?max_age=1' "$T/young.heapsnapshot")
[ "$code" = 200 ] && grep -q churn_alloc "$T/young.heapsnapshot" && ! grep -q leak_alloc "$T/young.heapsnapshot" &&
    pass "/heap_snapshot?max_age=1 lists the churn only" || fail "/heap_snapshot?max_age=1 ($code)"
code=$(fetch '/debug/pprof/heap?min_age=9&max_age=3' "$T/x")
[ "$code" = 400 ] && pass "min_age > max_age is 400" || fail "min_age > max_age answered $code"
code=$(fetch '/debug/pprof/heap?min_age=5&seconds=1' "$T/x")
[ "$code" = 400 ] && pass "min_age with seconds is 400" || fail "min_age+seconds answered $code"
stop_prog leak

# p_heap_peak: 300 MiB from site_big held 3 s and freed, then 20 MiB from site_small.
start_prog peak PROFEP_HEAP_RATE=16384 PROFEP_HEAP_CHECKPOINT=1 -- "$BUILD/test/p_heap_peak" 300 20 3 || finish
BIG=$(val peak big_bytes); SMALL=$(val peak small_bytes)
B0=$(val peak big_start); B1=$(val peak big_done)
sleep 1.5
mid=$(awk -v a="$B0" -v b="$B1" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - (a + b) / 2 }')
code=$(fetch "/debug/pprof/heap?since=$mid" "$T/since_peak.pb.gz")
code1=$(fetch /heap_peak "$T/peak.pb.gz")
code2=$(fetch /debug/pprof/heap "$T/now.pb.gz")
pb=$(flat "$T/peak.pb.gz" inuse_space site_big)
[ "$code1" = 200 ] && within "$pb" "$BIG" 10 && pass "/heap_peak: site_big $pb vs true $BIG ($(pct "$pb" "$BIG"))" ||
    fail "/heap_peak ($code1): site_big $pb vs true $BIG ($(pct "$pb" "$BIG")), want within 10%"
go tool pprof -raw "$T/peak.pb.gz" 2>/dev/null | grep -Eq '^Comment: peak of the sampled live heap: [0-9]+ bytes .* at 20' &&
    pass "/heap_peak says when and how much" || fail "/heap_peak comment"
ns=$(flat "$T/now.pb.gz" inuse_space site_small); nb=$(flat "$T/now.pb.gz" inuse_space site_big)
[ "$code2" = 200 ] && within "$ns" "$SMALL" 10 && [ "${nb%.*}" -lt $((BIG / 100)) ] &&
    pass "/debug/pprof/heap now: site_small $ns vs true $SMALL ($(pct "$ns" "$SMALL")), site_big $nb" ||
    fail "/debug/pprof/heap now ($code2): site_small $ns vs $SMALL ($(pct "$ns" "$SMALL")), site_big $nb"
sb=$(flat "$T/since_peak.pb.gz" inuse_space site_big)
[ "$code" = 200 ] && within "${sb#-}" "$BIG" 10 && [ "${sb:0:1}" = - ] &&
    pass "since= across the free: site_big $sb (negative, Go's delta)" || fail "since= across the free ($code): site_big $sb, want -$BIG"
for f in text folded svg; do
    code=$(fetch "/heap_peak?format=$f" "$T/peak.$f")
    [ "$code" = 200 ] && grep -q site_big "$T/peak.$f" && pass "/heap_peak?format=$f" || fail "/heap_peak?format=$f ($code)"
done
code=$(fetch '/heap_peak?debug=1' "$T/peak.txt")
[ "$code" = 200 ] && grep -q $'\tsite_big' "$T/peak.txt" && pass "/heap_peak?debug=1" || fail "/heap_peak?debug=1 ($code)"
#STEP4
stop_prog peak
finish
