#!/usr/bin/env bash
# e2e_flame_browser: the flame graph of a C++ program (test/progs/lines/work.cc,
# g++ -O2 -g) in headless Chromium, as people see it (test/e2e/flame_browser.js):
# at 800x600 and, after a resize, 1600x900 the boxes fill the window's width;
# a legend; the program's frames and libc's coloured apart (in the DOM and in
# the screenshot's pixels, test/e2e/png_flame.py --families); inlined frames
# dashed; demangled names without glibc's symbol versions; the icicle toggle,
# with zoom and search there.  The same program stripped of its symbols shows
# one [w-strip] box per parent, no bare addresses.  The heap timeline page's
# peak label stays in its chart and the page says which threads are ours.
# Screenshots are kept in $BUILD/test/flame/; with PE_DOCS=1 they (and a Python
# workload's flame graph) are copied to docs/ for the README.
cd "$(dirname "$0")/../.." || exit 1
scripts/deps.sh browser >/dev/null 2>&1 || echo "note: scripts/deps.sh browser failed"
command -v npm >/dev/null || scripts/deps.sh node >/dev/null 2>&1 # for playwright-core
CHROMIUM=$(command -v chromium) || { echo "skip: chromium cannot be installed"; exit 77; }
NODE_DIR=${PE_NODE_DIR:-/var/tmp/libprofendpoints-node}
source test/e2e/lib.sh
pe_need curl g++ strip python3
exec 8>"$NODE_DIR.lock" && flock 8 # one npm install there at a time: tests run side by side
if [ ! -d "$NODE_DIR/node_modules/playwright-core" ] && command -v npm >/dev/null; then
    mkdir -p "$NODE_DIR" &&
        timeout 180 npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent \
            playwright-core@1 >/dev/null 2>&1
fi
exec 8>&-
[ -d "$NODE_DIR/node_modules/playwright-core" ] && command -v node >/dev/null ||
    { echo "skip: playwright-core (npm) not available"; exit 77; }
OUT=$BUILD/test/flame
mkdir -p $OUT

g++ -O2 -g -o $T/w-cxx test/progs/lines/work.cc || { bad "g++ work.cc"; pe_finish; }
cp $T/w-cxx $T/w-strip && strip -s $T/w-strip

# A 2 s CPU profile at 500 Hz from ADDR, as a browser asks for it (Accept: text/html
# gets the SVG).
flame() { # FILE ADDR
    curl -s --max-time 60 -H 'Accept: text/html,application/xhtml+xml,*/*;q=0.8' -o "$1" \
        "http://$2/profile?duration=2&delay=0.002"
}
# Both programs at once (the stripped one is stopped by hand, pe_stop takes the last).
pe_start $T/w-strip 30 || exit 1
STRIP_PID=$PE_PID STRIP_ADDR=$PE_ADDR
pe_start $T/w-cxx 60 || { kill $STRIP_PID; exit 1; }
flame $T/strip.svg $STRIP_ADDR &
flame $T/cxx.svg $PE_ADDR
wait $!
# Reading debug info (source lines, inlined calls) has a 2 s bound, which a busy
# machine can pass; what was read stays cached, so a later profile has them.
for _ in 1 2; do
    grep -q ' inl"' $T/cxx.svg && break
    echo "note: no inlined frames yet (debug info cut short?): profiling again"
    flame $T/cxx.svg $PE_ADDR
done
kill $STRIP_PID 2>/dev/null
wait $STRIP_PID 2>/dev/null
for f in strip cxx; do check "$f.svg: an SVG" grep -q '<svg' $T/$f.svg; done
# The pages are self-contained (no script, nothing fetched): saved, the program
# stops, and the browser does not compete with it for the CPU.
check "heap timeline page" pe_get /heap_timeline -o $T/timeline.html
check "index page" pe_get /debug/pprof/ -o $T/index.html
pe_stop

NODE_PATH=$NODE_DIR/node_modules timeout 120 node test/e2e/flame_browser.js "$CHROMIUM" $OUT \
    $T/cxx.svg $T/strip.svg '[w-strip]' "$T/timeline.html=timeline.png" \
    "$T/index.html=index.png" >$T/pw.out 2>&1
cat $T/pw.out
checks_ok=$((checks_ok + $(grep -c '^ok ' $T/pw.out)))
checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/pw.out)))
grep -q '^ok ' $T/pw.out || bad "browser: flame_browser.js produced no checks"

for shot in flame-cpp-800 flame-cpp-1600; do
    python3 test/e2e/png_flame.py --families main,libc $OUT/$shot.png >$T/png.out 2>&1
    sed "s/screenshot:/$shot:/" $T/png.out
    checks_ok=$((checks_ok + $(grep -c '^ok ' $T/png.out)))
    checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/png.out)))
done

if [ "${PE_DOCS:-0}" = 1 ]; then
    # A Python workload for docs/flame-python.png (not a check: e2e_python has those).
    cat >$T/shop.py <<'PYEOF'
import json, random, sys, time

def price(items):
    return sum(i * 1.07 for i in items)

def parse(n):
    return [json.loads('{"a": %d, "b": [1, 2, 3]}' % i) for i in range(n)]

def checkout(rounds):
    t = 0
    for r in range(rounds):
        items = sorted(random.random() for _ in range(2000))
        t += price(items) + len(parse(200))
    return t

end = time.time() + float(sys.argv[1])
while time.time() < end:
    checkout(20)
PYEOF
    pe_start /usr/bin/python3 $T/shop.py 30 || exit 1
    flame $T/py.svg $PE_ADDR
    pe_stop
    # The C++ pictures from a longer profile at 1000 Hz: the deep std::sort recursion shows.
    pe_start $T/w-cxx 30 || exit 1
    pe_get '/profile?duration=6&delay=0.001&format=svg' -o $T/cxx-docs.svg
    pe_stop
    # A heap that peaks and falls, for docs/timeline.png.
    pe_start_ready peak PROFEP_HEAP_RATE=16384 -- "$BUILD/test/p_heap_peak" 200 40 4 || pe_finish
    sleep 10
    pe_get /heap_timeline -o $T/timeline-docs.html
    pe_stop_ready peak
    mkdir -p $T/docs docs
    NODE_PATH=$NODE_DIR/node_modules timeout 120 node test/e2e/flame_browser.js "$CHROMIUM" \
        $T/docs $T/cxx-docs.svg $T/strip.svg '[w-strip]' "$T/py.svg=flame-python.png" \
        "$T/timeline-docs.html=timeline.png" >/dev/null 2>&1
    for f in flamegraph flame-cpp-800 flame-cpp-1600 flame-python timeline; do
        cp $T/docs/$f.png docs/
    done
    cp $OUT/index.png docs/
    echo "note: screenshots copied to docs/"
fi
pe_finish
