#!/usr/bin/env bash
# e2e_snapshot.sh: /heap_snapshot against ground truth.  p_heap_three keeps
# 40, 20 and 10 MiB at site_a, site_b and site_c (varied sizes, several call
# paths each) while two threads allocate and free.  The snapshot is read by an
# independent reader (test/e2e/heapsnapshot.py, Python's json): V8 format and
# consistent counts, a tree below the root, per-site sizes within 10% of the
# truth (PROFEP_HEAP_RATE=16384: about 5 standard deviations for the smallest
# site), the retained size of main;fill equal to the three sites together,
# all_one=true giving one per object, headers, HEAD, 400, /debug_engine, and 8
# snapshots at once while the program allocates and frees.  503 when heap
# sampling is off.  memlab's loader: test/e2e/e2e_snapshot_memlab.sh.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
CHK="python3 test/e2e/heapsnapshot.py"

pe_start_ready three PROFEP_HEAP_RATE=16384 -- "$BUILD/test/p_heap_three" 40 20 10 16 2 || pe_finish

code=$(curl -s -m 40 -D "$T/hdr" -o "$T/snap.json" -w '%{http_code}' "http://$PE_ADDR/heap_snapshot")
[ "$code" = 200 ] || bad "/heap_snapshot answered $code"
grep -qi '^Content-Type: application/json' "$T/hdr" &&
    grep -qi '^Content-Disposition: attachment; filename="heap.heapsnapshot"' "$T/hdr" &&
    ok "application/json, attachment heap.heapsnapshot" || bad "headers: $(cat "$T/hdr")"
code1=$(pe_fetch '/heap_snapshot?all_one=true' "$T/one.json")
[ "$code1" = 200 ] || bad "/heap_snapshot?all_one=true answered $code1"
if $CHK "$T/snap.json" >"$T/sum.json" 2>"$T/chk.err" && $CHK "$T/one.json" >"$T/one.sum" 2>>"$T/chk.err"; then
    ok "V8 heap snapshot format, counts consistent, a tree below the root (both)"
    # One Python for every figure (each start costs on a loaded machine).
    python3 - "$T/sum.json" "$T/one.sum" "$(val three site_a_bytes)" "$(val three site_b_bytes)" \
        "$(val three site_c_bytes)" <<'PY' >"$T/eval"
import json, sys
s, one = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
truth = dict(zip(("site_a", "site_b", "site_c"), map(int, sys.argv[3:6])))
print("ok: %d nodes, %d objects" % (s["nodes"], s["objects"]))
for k, want in truth.items():
    got = s["sizes"].get(k, 0)
    d = (got - want) * 100.0 / want
    print("%s: %s %d bytes vs true %d (%+.2f%%)%s" % ("ok" if abs(d) <= 10 else "FAIL", k, got,
          want, d, "" if abs(d) <= 10 else ", want within 10%"))
fill = [p for p in s["retained"] if p.endswith(";main;fill")]
abc = sum(s["sizes"].get(k, 0) for k in truth)
rf = s["retained"][fill[0]] if fill else -1
print("%s: retained size at main;fill %d = the three sites' bytes %d" % ("ok" if rf == abc else "FAIL", rf, abc))
same = all(one["counts"].get(k) == s["counts"].get(k) == one["sizes"].get(k) for k in truth)
print("%s: all_one=true: self_size 1 each (%s), as many objects per site as samples (%s)" % (
      "ok" if one["ones"] and same else "FAIL", one["ones"], {k: one["counts"].get(k) for k in truth}))
PY
    cat "$T/eval"
    checks_bad=$((checks_bad + $(grep -c '^FAIL' "$T/eval")))
else
    bad "reader: $(cat "$T/chk.err")"
fi

code=$(pe_fetch '/heap_snapshot?all_one=perhaps' "$T/x")
[ "$code" = 400 ] && ok "all_one=perhaps is 400" || bad "all_one=perhaps answered $code"
code=$(curl -s -m 10 -I -o "$T/head" -w '%{http_code}' "http://$PE_ADDR/heap_snapshot")
[ "$code" = 200 ] && ok "HEAD is 200" || bad "HEAD answered $code"

out=$(curl -s -m 40 -X POST -d '{"profile_type": "heap_snapshot", "all_one": true}' "http://$PE_ADDR/debug_engine")
case $out in
*.heapsnapshot) [ -f "$out" ] && $CHK "$out" >/dev/null 2>&1 && ok "/debug_engine heap_snapshot wrote $out" ||
    bad "/debug_engine file $out unreadable"; rm -f "$out" ;;
*) bad "/debug_engine heap_snapshot answered: $out" ;;
esac

# Eight at once, while two threads allocate and free: all complete and parse.
t0=$(date +%s%N)
pids=
for i in 1 2 3 4 5 6 7 8; do
    curl -s -m 40 -D "$T/par$i.hdr" -o "$T/par$i.json" -w '%{http_code}\n' "http://$PE_ADDR/heap_snapshot" >"$T/par$i.code" &
    pids="$pids $!"
done
wait $pids # not the workload, which is a child too
t1=$(date +%s%N)
# Six long requests run at once; a seventh is refused at once with 503 and
# Retry-After (ENDPOINTS.md, the bound that keeps workers for the quick endpoints).
okc=0 busy=0 got=
for i in 1 2 3 4 5 6 7 8; do
    case $(cat "$T/par$i.code") in
    200) okc=$((okc + 1)); got="$got $T/par$i.json" ;;
    503) grep -qi '^Retry-After:' "$T/par$i.hdr" && busy=$((busy + 1)) ;;
    esac
done
[ $okc -ge 6 ] && [ $((okc + busy)) = 8 ] && $CHK --all $got >/dev/null 2>"$T/chk.err" &&
    ok "8 concurrent snapshots during churn: $okc answered, all valid, $busy refused with Retry-After ($(((t1 - t0) / 1000000)) ms)" ||
    bad "8 concurrent snapshots: $okc 200, $busy 503 with Retry-After: $(cat "$T/chk.err")"
pe_stop_ready three

pe_start_ready off PROFEP_HEAP_RATE=0 -- "$BUILD/test/p_heap_three" 1 1 1 || pe_finish
code=$(curl -s -m 10 -D "$T/hdr" -o "$T/off.txt" -w '%{http_code}' "http://$PE_ADDR/heap_snapshot")
[ "$code" = 503 ] && grep -q 'PROFEP_HEAP_RATE=0' "$T/off.txt" && grep -qi '^X-Go-Pprof: 1' "$T/hdr" &&
    ok "heap sampling off: 503 saying why" || bad "sampling off answered $code: $(cat "$T/off.txt")"
pe_stop_ready off
pe_finish
