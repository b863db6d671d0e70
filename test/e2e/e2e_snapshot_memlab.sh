#!/usr/bin/env bash
# e2e_snapshot_memlab.sh: /heap_snapshot read by memlab, a loader we did not
# write.  @memlab/core (memlab's heap snapshot parser, the one behind `memlab
# analyze` and @memlab/heap-analysis) is installed once with npm into
# $BUILD/npm (nodejs and npm from `scripts/deps.sh node`); when that cannot be
# done (offline, not root) this test is skipped (77) and says why, and
# test/e2e/e2e_snapshot.sh still checks the format with its own reader.
# memlab must load the snapshot of p_heap_three (two threads allocating and
# freeing meanwhile) and the all_one=true one with the counts we declared,
# compute the same retained size as ours at every frame node, and see each
# site's bytes within 10% of the truth.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
MEMLAB_VERSION=${MEMLAB_VERSION:-2.0.5}
NPM_DIR=$BUILD/npm
MOD=$NPM_DIR/node_modules

scripts/deps.sh node >"$T/deps.log" 2>&1 ||
    { echo "SKIP: nodejs/npm not installable: $(tail -n 1 "$T/deps.log")"; exit 77; }
exec 8>"$NPM_DIR.lock" && flock 8 # one npm install there at a time: tests run side by side
if [ ! -f "$MOD/@memlab/core/package.json" ]; then
    mkdir -p "$NPM_DIR"
    # No browser download (memlab's puppeteer dependency), no install scripts.
    if ! PUPPETEER_SKIP_DOWNLOAD=1 timeout 240 npm install --prefix "$NPM_DIR" --no-audit --no-fund \
        --ignore-scripts --loglevel=error "@memlab/core@$MEMLAB_VERSION" >"$T/npm.log" 2>&1; then
        echo "SKIP: cannot install @memlab/core with npm (offline?): $(tail -n 2 "$T/npm.log" | tr '\n' ' ')"
        exit 77
    fi
fi
exec 8>&-
echo "memlab: @memlab/core $(node -p "require('$MOD/@memlab/core/package.json').version") in $MOD"

pe_start_ready three PROFEP_HEAP_RATE=16384 -- "$BUILD/test/p_heap_three" 40 20 10 16 2 || pe_finish
for q in "" "?all_one=true"; do
    code=$(pe_fetch "/heap_snapshot$q" "$T/s.json")
    [ "$code" = 200 ] || { bad "/heap_snapshot$q answered $code"; continue; }
    python3 test/e2e/heapsnapshot.py "$T/s.json" "$T/ours.json" >"$T/sum.json" 2>"$T/chk.err" ||
        { bad "our reader: $(cat "$T/chk.err")"; continue; }
    node test/e2e/heapsnapshot_memlab.js "$MOD" "$T/s.json" "$T/ours.json" >"$T/memlab.out" 2>&1
    st=$?
    res=$(sed -n 's/^RESULT //p' "$T/memlab.out")
    if [ $st -ne 0 ] || [ -z "$res" ]; then
        bad "memlab on /heap_snapshot$q (exit $st): $(tail -c 600 "$T/memlab.out")"
        continue
    fi
    ok "memlab loads /heap_snapshot$q; same node and edge counts, retained sizes equal ours at every frame node: $(python3 -c '
import json, sys; r = json.loads(sys.argv[1])
print("%d nodes, %d edges, %d frames compared, root retains %d" % (r["nodes"], r["edges"], r["compared"], r["root_retained"]))' "$res")"
    [ -n "$q" ] && continue
    python3 - "$res" "$(val three site_a_bytes)" "$(val three site_b_bytes)" "$(val three site_c_bytes)" \
        <<'PY' >"$T/eval"
import json, sys
sites = json.loads(sys.argv[1])["sites"]
for k, want in zip(("site_a", "site_b", "site_c"), map(int, sys.argv[2:5])):
    got = sites.get(k, 0)
    d = (got - want) * 100.0 / want
    print("%s: memlab: %s %d bytes vs true %d (%+.2f%%)" % ("ok" if abs(d) <= 10 else "FAIL", k, got, want, d))
PY
    cat "$T/eval"
    checks_bad=$((checks_bad + $(grep -c '^FAIL' "$T/eval")))
done
pe_stop_ready three
pe_finish
