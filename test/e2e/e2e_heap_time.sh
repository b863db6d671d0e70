#!/usr/bin/env bash
# e2e_heap_time.sh: memory over time against ground truth.  p_heap_leak churns
# ~16 MiB of short-lived blocks from churn_alloc and, for a known window, leaks
# 4 KiB blocks from leak_alloc: min_age/max_age (pprof, debug=1, age_s label,
# /heap_snapshot) must separate the two.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go

# share FILE FUNC: FUNC's share of the profile's inuse_space, in percent.
share() {
    local f t
    f=$(bytes_flat "$1" inuse_space "$2"); t=$(bytes_total "$1" inuse_space)
    awk -v f="$f" -v t="$t" 'BEGIN { if (t > 0) printf "%.1f", f * 100 / t; else print 0 }'
}
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
wait_line() { # NAME WORD: up to 60 s for a line starting with WORD
    local i
    for i in $(seq 300); do grep -q "^$2" "$T/$1.out" && return 0; sleep 0.2; done
    return 1
}

pe_start_ready leak PROFEP_HEAP_RATE=1024 PROFEP_HEAP_CHECKPOINT=1 -- "$BUILD/test/p_heap_leak" 3 6 || pe_finish
wait_line leak leak_start || bad "leak never started"
sleep 3
code=$(pe_fetch '/debug/pprof/heap?max_age=1' "$T/young.pb.gz")
s=$(share "$T/young.pb.gz" churn_alloc)
[ "$code" = 200 ] && ge "$s" 80 && ok "max_age=1 while leaking: churn_alloc has $s% of the bytes" ||
    bad "max_age=1 ($code): churn_alloc has $s%, want >= 80%"
wait_line leak leak_done || bad "leak never finished"
LEAK=$(val leak leak_done); T_START=$(val leak leak_start)
# since=: the checkpoint nearest to 1.5 s before the leak began (checkpoints every 1 s).
ago=$(awk -v s="$T_START" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s + 1.5 }')
code=$(pe_fetch "/debug/pprof/heap?since=$ago" "$T/since.pb.gz")
code2=$(pe_fetch "/debug/pprof/heap?since=$ago&debug=1" "$T/since.txt") # at once: since= is relative to now
g=$(bytes_flat "$T/since.pb.gz" inuse_space leak_alloc); c=$(bytes_flat "$T/since.pb.gz" inuse_space churn_alloc)
[ "$code" = 200 ] && within "$g" "$LEAK" 10 && ok "since=$ago: leak_alloc grew $g vs true $LEAK ($(pct "$g" "$LEAK")), churn_alloc $c" ||
    bad "since=$ago ($code): leak_alloc grew $g vs true $LEAK ($(pct "$g" "$LEAK")), want within 10%"
go tool pprof -raw "$T/since.pb.gz" 2>/dev/null | grep -q '^Comment: change of the sampled live heap since the checkpoint of' &&
    ok "since= says which checkpoint" || bad "since= comment"
[ "$code2" = 200 ] && grep -q $'\tleak_alloc' "$T/since.txt" && ok "since=&debug=1 text" || { bad "since debug=1 ($code2)"; head -3 "$T/since.txt"; }
code=$(pe_fetch "/debug/pprof/heap?since=5&min_age=1" "$T/x")
[ "$code" = 400 ] && ok "since with min_age is 400" || bad "since+min_age answered $code"
sleep 6
code=$(pe_fetch '/debug/pprof/heap?min_age=5' "$T/old.pb.gz")
s=$(share "$T/old.pb.gz" leak_alloc); b=$(bytes_flat "$T/old.pb.gz" inuse_space leak_alloc)
[ "$code" = 200 ] && ge "$s" 95 && ok "min_age=5: leak_alloc has $s% of the bytes" ||
    bad "min_age=5 ($code): leak_alloc has $s%, want >= 95%"
within "$b" "$LEAK" 10 && ok "min_age=5: leak_alloc $b vs true $LEAK ($(pct "$b" "$LEAK"))" ||
    bad "min_age=5: leak_alloc $b vs true $LEAK ($(pct "$b" "$LEAK")), want within 10%"
code=$(pe_fetch '/debug/pprof/heap?min_age=0' "$T/all.pb.gz")
go tool pprof -top -unit=B -tagfocus=age_s=5: "$T/all.pb.gz" >"$T/focus" 2>&1
grep -q 'leak_alloc' "$T/focus" && ! grep -q 'churn_alloc' "$T/focus" &&
    ok "-tagfocus=age_s=5: keeps leak_alloc only" || { bad "tagfocus age_s"; head -12 "$T/focus"; }
go tool pprof -raw "$T/all.pb.gz" 2>/dev/null | grep -q 'age_s:\[[0-9]*\]' && ok "age_s is a numeric label" ||
    bad "no numeric age_s label"
code=$(pe_fetch '/debug/pprof/heap?min_age=5&debug=1' "$T/old.txt")
[ "$code" = 200 ] && head -1 "$T/old.txt" | grep -Eq '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/2$' &&
    grep -q $'\tleak_alloc' "$T/old.txt" && ! grep -q $'\tchurn_alloc' "$T/old.txt" &&
    ok "min_age=5&debug=1: Go's text, leak only" || { bad "debug=1 text ($code)"; head -5 "$T/old.txt"; }
tb=$(bytes_flat "$T/old.txt" space leak_alloc) # (pprof names equal alloc and inuse "space")
within "$tb" "$b" 2 && ok "debug=1 read back by pprof: $tb" || bad "debug=1 via pprof: $tb vs $b"
code=$(pe_fetch '/debug/pprof/heap?min_age=5&format=text' "$T/old.text")
[ "$code" = 200 ] && grep -q leak_alloc "$T/old.text" && ! grep -q churn_alloc "$T/old.text" &&
    ok "min_age=5&format=text" || bad "format=text ($code)"
code=$(pe_fetch '/heap_snapshot?min_age=5' "$T/old.heapsnapshot")
[ "$code" = 200 ] && grep -q leak_alloc "$T/old.heapsnapshot" && ! grep -q churn_alloc "$T/old.heapsnapshot" &&
    ok "/heap_snapshot?min_age=5 lists the leak only" || bad "/heap_snapshot?min_age=5 ($code)"
code=$(pe_fetch '/heap_snapshot?max_age=1' "$T/young.heapsnapshot")
[ "$code" = 200 ] && grep -q churn_alloc "$T/young.heapsnapshot" && ! grep -q leak_alloc "$T/young.heapsnapshot" &&
    ok "/heap_snapshot?max_age=1 lists the churn only" || bad "/heap_snapshot?max_age=1 ($code)"
code=$(pe_fetch '/debug/pprof/heap?min_age=9&max_age=3' "$T/x")
[ "$code" = 400 ] && ok "min_age > max_age is 400" || bad "min_age > max_age answered $code"
code=$(pe_fetch '/debug/pprof/heap?min_age=5&seconds=1' "$T/x")
[ "$code" = 400 ] && ok "min_age with seconds is 400" || bad "min_age+seconds answered $code"
pe_stop_ready leak

# p_heap_peak: 300 MiB from site_big held 3 s and freed, then 20 MiB from site_small.
pe_start_ready peak PROFEP_HEAP_RATE=16384 PROFEP_HEAP_CHECKPOINT=1 -- "$BUILD/test/p_heap_peak" 300 20 3 || pe_finish
BIG=$(val peak big_bytes); SMALL=$(val peak small_bytes)
B0=$(val peak big_held); B1=$(val peak big_done)
sleep 1.5
mid=$(awk -v a="$B0" -v b="$B1" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - (a + b) / 2 }')
code=$(pe_fetch "/debug/pprof/heap?since=$mid" "$T/since_peak.pb.gz")
code1=$(pe_fetch /heap_peak "$T/peak.pb.gz")
code2=$(pe_fetch /debug/pprof/heap "$T/now.pb.gz")
pb=$(bytes_flat "$T/peak.pb.gz" inuse_space site_big)
[ "$code1" = 200 ] && within "$pb" "$BIG" 10 && ok "/heap_peak: site_big $pb vs true $BIG ($(pct "$pb" "$BIG"))" ||
    bad "/heap_peak ($code1): site_big $pb vs true $BIG ($(pct "$pb" "$BIG")), want within 10%"
go tool pprof -raw "$T/peak.pb.gz" 2>/dev/null | grep -Eq '^Comment: peak of the sampled live heap: [0-9]+ bytes .* at 20' &&
    ok "/heap_peak says when and how much" || bad "/heap_peak comment"
ns=$(bytes_flat "$T/now.pb.gz" inuse_space site_small); nb=$(bytes_flat "$T/now.pb.gz" inuse_space site_big)
[ "$code2" = 200 ] && within "$ns" "$SMALL" 10 && [ "${nb%.*}" -lt $((BIG / 100)) ] &&
    ok "/debug/pprof/heap now: site_small $ns vs true $SMALL ($(pct "$ns" "$SMALL")), site_big $nb" ||
    bad "/debug/pprof/heap now ($code2): site_small $ns vs $SMALL ($(pct "$ns" "$SMALL")), site_big $nb"
sb=$(bytes_flat "$T/since_peak.pb.gz" inuse_space site_big)
[ "$code" = 200 ] && within "${sb#-}" "$BIG" 10 && [ "${sb:0:1}" = - ] &&
    ok "since= across the free: site_big $sb (negative, Go's delta)" || bad "since= across the free ($code): site_big $sb, want -$BIG"
for f in text folded svg; do
    code=$(pe_fetch "/heap_peak?format=$f" "$T/peak.$f")
    [ "$code" = 200 ] && grep -q site_big "$T/peak.$f" && ok "/heap_peak?format=$f" || bad "/heap_peak?format=$f ($code)"
done
code=$(pe_fetch '/heap_peak?debug=1' "$T/peak.txt")
[ "$code" = 200 ] && grep -q $'\tsite_big' "$T/peak.txt" && ok "/heap_peak?debug=1" || bad "/heap_peak?debug=1 ($code)"
# The timeline follows the program: its highest sampled heap is the 300 MiB, its last the 20 MiB,
# and its RSS is what /proc says.
# (The requests above grow our own RSS for a moment, symbolizing: let the
# 1 s timeline take a point after them before comparing with /proc.)
sleep 2.5
code=$(pe_fetch '/heap_timeline?format=json' "$T/tl.json")
read -r n hmax hlast rlast tdiff <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); p = d["points"]
ts = [b["t_ms"] - a["t_ms"] for a, b in zip(p, p[1:])]
print(len(p), max(x["heap"] for x in p), p[-1]["heap"], p[-1]["rss"], max(ts) if ts else 0)' "$T/tl.json")"
prss=$(awk -v pg="$(getconf PAGESIZE)" '{ print $2 * pg }' "/proc/$PE_PID/statm")
[ "$code" = 200 ] && [ "${n:-0}" -ge 5 ] && ok "timeline JSON: $n points, largest gap ${tdiff} ms" || bad "timeline JSON ($code): ${n:-no} points"
within "$hmax" "$BIG" 10 && ok "timeline: highest heap $hmax vs true $BIG ($(pct "$hmax" "$BIG"))" ||
    bad "timeline: highest heap $hmax vs true $BIG ($(pct "$hmax" "$BIG"))"
within "$hlast" "$SMALL" 10 && ok "timeline: last heap $hlast vs true $SMALL ($(pct "$hlast" "$SMALL"))" ||
    bad "timeline: last heap $hlast vs true $SMALL ($(pct "$hlast" "$SMALL"))"
within "$rlast" "$prss" 10 && ok "timeline: RSS $rlast vs /proc $prss ($(pct "$rlast" "$prss"))" ||
    bad "timeline: RSS $rlast vs /proc $prss ($(pct "$rlast" "$prss"))"
code=$(pe_fetch /heap_timeline "$T/tl.html")
[ "$code" = 200 ] && grep -q '<svg' "$T/tl.html" && grep -q 'id="s-rss"' "$T/tl.html" && grep -q 'id="peak"' "$T/tl.html" &&
    grep -q 'href="debug/pprof/heap?since=' "$T/tl.html" && ! grep -qi '<script' "$T/tl.html" &&
    ok "timeline page: SVG chart, peak marked, links to heap?since=, no script" || bad "timeline page ($code)"
if command -v chromium >/dev/null; then
    # The page as a browser renders it: the DOM's last point matches the JSON.
    timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom "http://$PE_ADDR/heap_timeline" >"$T/dom.html" 2>/dev/null
    dheap=$(grep -o 'class="pt"[^>]*data-heap="[0-9]*"' "$T/dom.html" | tail -1 | sed 's/.*data-heap="\([0-9]*\)"/\1/')
    [ -n "$dheap" ] && within "$dheap" "$hlast" 1 && ok "headless Chromium: the DOM's last heap $dheap matches the JSON's $hlast" ||
        bad "headless Chromium DOM: heap '$dheap' vs JSON $hlast"
    timeout 60 chromium --headless --no-sandbox --disable-gpu --window-size=1100,720 \
        --screenshot="$T/timeline.png" "http://$PE_ADDR/heap_timeline" >/dev/null 2>&1
    [ -s "$T/timeline.png" ] && ok "headless Chromium screenshot ($(stat -c %s "$T/timeline.png") bytes)" || bad "no screenshot"
    [ -n "$PE_KEEP_SCREENSHOT" ] && cp "$T/timeline.png" "$PE_KEEP_SCREENSHOT"
else
    echo "skip: chromium missing (the page's DOM check)"
fi
# scripts/profep: peak, leaks AGE, timeline
P=$PWD/scripts/profep
(cd "$T" && bash "$P" peak "$PE_ADDR" -o peak2.pb.gz 2>"$T/profep.err") && [ "$(bytes_flat "$T/peak2.pb.gz" inuse_space site_big)" = "$pb" ] &&
    ok "profep peak" || { bad "profep peak"; cat "$T/profep.err"; }
(cd "$T" && bash "$P" leaks "$PE_ADDR" 1 -o leaks.pb.gz 2>"$T/profep.err") && grep -q 'older\|more than 1 s' "$T/profep.err" &&
    [ "$(bytes_flat "$T/leaks.pb.gz" inuse_space site_small)" != 0 ] && ok "profep leaks 1" || { bad "profep leaks"; cat "$T/profep.err"; }
(cd "$T" && bash "$P" timeline "$PE_ADDR" 5 -f json -o tl2.json 2>"$T/profep.err") &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert 1 <= len(d["points"]) <= 5' "$T/tl2.json" &&
    ok "profep timeline 5 -f json" || { bad "profep timeline"; cat "$T/profep.err"; }
(cd "$T" && bash "$P" timeline "$PE_ADDR" -o tl2.html 2>"$T/profep.err") && grep -q '<svg' "$T/tl2.html" &&
    ok "profep timeline (html)" || { bad "profep timeline html"; cat "$T/profep.err"; }
code=$(pe_fetch /debug/pprof/ "$T/index.html")
grep -q 'heap_timeline' "$T/index.html" && grep -q 'heap_peak' "$T/index.html" && grep -q 'PROFEP_HEAP_CHECKPOINT' "$T/index.html" &&
    ok "index lists /heap_timeline, /heap_peak, PROFEP_HEAP_CHECKPOINT" || bad "index"
pe_stop_ready peak

# Bounded: 131072 distinct stacks (four times the stack table) held live, a checkpoint a second.
pe_start_ready stacks PROFEP_HEAP_RATE=1 PROFEP_HEAP_CHECKPOINT=1 -- "$BUILD/test/p_heap_stacks" 17 || pe_finish
sleep 4
code=$(pe_fetch '/heap_timeline?format=json' "$T/st.json")
read -r ck hb <<<"$(python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); print(d["checkpoints"], d["history_bytes"])' "$T/st.json")"
bound=$(( 3600 * 56 + (ck + 1) * 24 * 32768 ))
[ "$code" = 200 ] && [ "${ck:-0}" -ge 3 ] && [ "${hb:-0}" -le "$bound" ] &&
    ok "131072 stacks: history holds $hb bytes after $ck checkpoints (bound $bound; 60 kept: $(( 3600 * 56 + 61 * 24 * 32768 )))" ||
    bad "131072 stacks ($code): history $hb bytes after $ck checkpoints, bound $bound"
code=$(pe_fetch '/debug/pprof/heap?since=2' "$T/st.pb.gz")
[ "$code" = 200 ] && ok "since= with a full stack table" || bad "since= with a full stack table ($code)"
pe_stop_ready stacks
# Heap sampling off: one 503 per request (each written once), the timeline still answers.
pe_start_ready off PROFEP_HEAP_RATE=0 -- "$BUILD/test/p_heap_peak" 1 1 0 || pe_finish
raw() { # PATH: the whole raw answer to a GET
    exec 5<>"/dev/tcp/${PE_ADDR%:*}/${PE_ADDR##*:}" && printf 'GET %s HTTP/1.0\r\n\r\n' "$1" >&5 && timeout 10 cat <&5; exec 5>&-
}
for q in '/debug/pprof/heap' '/debug/pprof/heap?min_age=1' '/debug/pprof/heap?since=1' '/heap_peak'; do
    n=$(raw "$q" | grep -c '^HTTP/1.1 ')
    st=$(raw "$q" | head -1 | tr -d '\r')
    [ "$n" = 1 ] && [ "$st" = "HTTP/1.1 503 Service Unavailable" ] && ok "rate 0: $q answers one 503" ||
        bad "rate 0: $q: $n status lines, first '$st'"
done
sleep 1.2
code=$(pe_fetch '/heap_timeline?format=json' "$T/off.json")
[ "$code" = 200 ] && python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"]; assert p and p[-1]["rss"] > 0 and p[-1]["heap"] == 0' "$T/off.json" &&
    ok "rate 0: /heap_timeline still answers (RSS, heap 0)" || bad "rate 0: /heap_timeline ($code)"
pe_stop_ready off
pe_finish
