#!/usr/bin/env bash
# e2e_views_browser: the flame graph a browser gets from a live CPU profile,
# opened in headless Chromium (Debian's chromium, installed by
# `scripts/deps.sh browser`; skip when it cannot be).  Checks: well-formed XML
# (xmllint), the DOM after the script ran names the functions, the URL
# fragment's search and zoom work (--dump-dom), a screenshot taken here is a
# flame graph (test/e2e/png_flame.py: drawn, coloured, stacked), and, with
# playwright-core from npm, the labels are on screen, and real clicks, hover,
# the search prompt and Escape work (test/e2e/views_browser.js).  The index
# page as Chromium shows it: one click to the five things people want most
# (each answering), every parameter with what its absence means.
# Screenshots are kept in $BUILD/test/views-*.png for people to look at.
cd "$(dirname "$0")/../.." || exit 1
scripts/deps.sh browser >/dev/null 2>&1 || echo "note: scripts/deps.sh browser failed"
command -v npm >/dev/null || scripts/deps.sh node >/dev/null 2>&1 # for playwright-core; optional
CHROMIUM=$(command -v chromium) || { echo "skip: chromium cannot be installed"; exit 77; }
NODE_DIR=${PE_NODE_DIR:-/var/tmp/libprofendpoints-node}
source test/e2e/lib.sh
P=$BUILD/test
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }

chrome() { # headless, isolated, quiet
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" "$@" 2>/dev/null
}

pe_start $P/p_cpu_split 120 0.5 || exit 1
sleep 0.6 # let the late thread start
curl -s --max-time 60 -H 'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' \
    -o $T/cpu.svg "http://$PE_ADDR/profile?duration=2"

# The index as Chromium shows it: the quick links first, each a working link.
chrome --dump-dom "http://$PE_ADDR/debug/pprof/" >$T/index.html
quick=$(sed -n '/<ul class="quick">/,/<\/ul>/p' $T/index.html)
for want in '/profile?duration=10&amp;format=svg">CPU flame graph of the next 10 s' \
    '/debug/pprof/heap?format=svg">Live heap as a flame graph' \
    '/debug/pprof/goroutine?debug=2">Every thread' '/heap_timeline">Heap timeline' \
    '/debug/pprof/trace?seconds=5" download="">A 5 s trace to download'; do
    check "index: one click to ${want#*>}" grep -qF -- "$want" <<<"$quick"
done
check "index: the quick links come before the table of every endpoint" \
    awk '/class="quick"/ { q = NR } /<table>/ && !t { t = NR } END { exit !(q && t && q < t) }' $T/index.html
for q in '/debug/pprof/heap?format=svg' '/debug/pprof/goroutine?debug=2' '/heap_timeline' \
    '/debug/pprof/trace?seconds=0.2'; do
    check "index link $q answers 200" [ "$(pe_status "$q" -o /dev/null)" = 200 ]
done
check "index: each parameter with its default (duration=10, seconds=30, format, delay=0.01)" \
    bash -c "grep -q '<code>duration</code><span class=\"def\">=10<' $T/index.html &&
             grep -q '<code>seconds</code><span class=\"def\">=30<' $T/index.html &&
             grep -q '<code>format</code><span class=\"def\">=pprof; svg for a browser<' $T/index.html &&
             grep -q '<code>delay</code><span class=\"def\">=0.01<' $T/index.html"
chrome --window-size=1300,1400 --hide-scrollbars --screenshot=$T/index.png "http://$PE_ADDR/debug/pprof/" >/dev/null
check "index: a screenshot" test -s $T/index.png
cp $T/index.png $BUILD/test/views-index.png 2>/dev/null
pe_stop
check "a browser's request gets an SVG" grep -q '<svg' $T/cpu.svg
if command -v xmllint >/dev/null; then
    check "xmllint: well-formed" xmllint --noout $T/cpu.svg
else
    check "xml.etree: well-formed" python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' $T/cpu.svg
fi
H=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\)".*/\1/p' $T/cpu.svg | head -1)

# The DOM after the script ran.
chrome --dump-dom "file://$T/cpu.svg" >$T/dom.xml
check "DOM: the script ran (data-ready)" grep -q 'data-ready="[1-9]' $T/dom.xml
# A box for each; its label whole, or cut with ".." where the box is narrow (a
# frame's width follows the sample split, which a busy machine shifts a little).
for fn in cpu_three_quarters cpu_one_quarter late_work spin; do
    check "DOM: $fn has a box and a label" \
        bash -c "grep -Eq '<title>$fn( at [^<]*)? \(' $T/dom.xml &&
                 grep -Eq 'class=\"l\"[^>]*>($fn|${fn:0:6}[a-z_]*\.\.)</text>' $T/dom.xml"
done
chrome --dump-dom "file://$T/cpu.svg#s=cpu_three_quarters&z=worker" >$T/dom2.xml
check "DOM: #z=worker zooms" grep -q 'data-zoom="worker"' $T/dom2.xml
check "DOM: zoom hides late_work (another thread's stack)" \
    grep -Eq '<g class="f[^"]*"[^>]*style="display: none;"><title>late_work( at [^<]*)? \(' $T/dom2.xml
pct=$(sed -n 's/.*data-matched="\([0-9.]*\)".*/\1/p' $T/dom2.xml | head -1)
check "DOM: #s=cpu_three_quarters matches a share (${pct:-none}%)" \
    awk -v p="${pct:-0}" 'BEGIN { exit !(p > 20 && p < 95) }'
check "DOM: matches are highlighted" \
    grep -q 'fill="rgb(230,0,230)"/><text class="l"[^>]*>cpu_three_quarters<' $T/dom2.xml

# A screenshot, checked as a picture (not blank, frames drawn and stacked) by
# test/e2e/png_flame.py; the names in it are read from the rendered DOM (above, and
# the labels' on-screen boxes in views_browser.js), never by OCR, whose reading
# of identifiers depends on the machine's fonts.
chrome --window-size=1200,$((H + 10)) --force-device-scale-factor=2 --hide-scrollbars \
    --screenshot=$T/shot.png "file://$T/cpu.svg" >/dev/null
check "screenshot taken" test -s $T/shot.png
cp $T/shot.png $BUILD/test/views-cpu.png 2>/dev/null
python3 test/e2e/png_flame.py $T/shot.png >$T/png.out 2>&1
cat $T/png.out
checks_ok=$((checks_ok + $(grep -c '^ok ' $T/png.out)))
checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/png.out)))
grep -q '^ok ' $T/png.out || bad "screenshot: png_flame.py produced no checks"

# Real clicks and keys.
exec 8>"$NODE_DIR.lock" && flock 8 # one npm install there at a time: tests run side by side
if [ ! -d "$NODE_DIR/node_modules/playwright-core" ] && command -v npm >/dev/null; then
    mkdir -p "$NODE_DIR" &&
        timeout 180 npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent \
            playwright-core@1 >/dev/null 2>&1
fi
exec 8>&-
if [ -d "$NODE_DIR/node_modules/playwright-core" ] && command -v node >/dev/null; then
    NODE_PATH=$NODE_DIR/node_modules node test/e2e/views_browser.js "$CHROMIUM" $T/cpu.svg \
        $T/click.png worker cpu_three_quarters late_work >$T/pw.out 2>&1
    cat $T/pw.out
    checks_ok=$((checks_ok + $(grep -c '^ok ' $T/pw.out)))
    checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/pw.out)))
    grep -q '^ok ' $T/pw.out || bad "browser: playwright run produced no checks"
    cp $T/click.png $BUILD/test/views-search.png 2>/dev/null
else
    echo "note: playwright-core not available (npm); click checks skipped"
fi
pe_finish
