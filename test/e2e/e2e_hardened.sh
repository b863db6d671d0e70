#!/usr/bin/env bash
# e2e_hardened: the library built with ASan+UBSan (BUILD-asan/libprofendpoints.so, made by
# `make test` from the unit tests' ASan objects) inside real processes, on the paths only
# end-to-end tests reach: an overrun there (a fixed nanopb array on the stack, a merge's
# buffers) corrupts silently in the plain build, here it stops the process with a report.
#  - a p_tree tree (root, two fork workers, a grandchild, an exec'd leaf) preloaded with
#    libasan + the ASan library: pid=all CPU and goroutine (debug=0/1/2) in every format
#    (pprof, text, folded, svg, tree, flat), threadcreate; /profile and /profile_wall
#    views; the trace; start/stop sessions; godeltaprof; symbol; a sweep of every endpoint of the
#    index with odd parameters (bad numbers, huge and negative durations, unknown formats,
#    unknown pids, long values), four at a time;
#  - the same tree started with libasan alone, `profep attach --children` of the ASan
#    library, pid=all profiles through the root, `profep detach --children`;
#  - each time: every process still alive, no sanitizer report on their stderr, and the
#    root ends by our SIGTERM (wait status 143, not SIGABRT/SIGSEGV/SIGILL).
# ASan's malloc comes first, so heap profiling is unavailable here: the heap endpoints
# only have to answer (503, or 502 from pid=all).
source test/e2e/lib.sh
pe_need curl python3 setsid
P=$BUILD/test
ALIB=$BUILD-asan/libprofendpoints.so
[ -f "$ALIB" ] || { echo "SKIP: $ALIB not built (make test builds it)"; exit 77; }
# the ASan runtime the library was linked with, preloaded first as ASan requires
RT=$(ldd "$ALIB" | awk '/libasan|clang_rt\.asan/ {print $3; exit}')
[ -f "$RT" ] || { echo "SKIP: no ASan runtime found for $ALIB"; exit 77; }
# The first report stops the process (SIGABRT): a test cannot miss it.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:allow_user_segv_handler=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
REPORT='ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|Undefined)|AddressSanitizer:DEADLYSIGNAL'

root=
stop_group() { [ -n "$root" ] && kill -9 -- -"$root" 2>/dev/null; root=; }
trap 'stop_group; pe_cleanup' EXIT

# start_tree NAME PRELOAD...: p_tree tree in its own session; sets root, pids, PE_ADDR when served
start_tree() {
    local name=$1; shift
    setsid env LD_PRELOAD="$*" PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/$name.port.%p" \
        "$P/p_tree" tree >"$T/$name.out" 2>"$T/$name.err" &
    root=$!
    PE_PID=
    eventually 20 bash -c "[ \$(grep -c '^\(fork\|grand\|exec\) ' '$T/$name.out') = 4 ]" ||
        { bad "$name: p_tree did not start its tree"; cat "$T/$name.err"; return 1; }
    pids="$root $(awk '{print $2}' "$T/$name.out" | tr '\n' ' ')"
}
listed() { [ "$(curl -s -m 10 "http://$PE_ADDR/debug/pprof/processes" | grep -c '"pid"')" = "$1" ]; }
# survive NAME: the answers parse, every process of the tree alive, stderr free of reports, root ends by SIGTERM
survive() {
    local name=$1 p dead= st
    parse_all
    for p in $pids; do kill -0 "$p" 2>/dev/null || dead="$dead $p"; done
    check "$name: the five processes are alive${dead:+ (gone:$dead)}" [ -z "$dead" ]
    if grep -qE "$REPORT" "$T/$name.err"; then
        bad "$name: a sanitizer report"
        grep -E -A30 "$REPORT" "$T/$name.err" | head -n 60
    else
        ok "$name: no sanitizer report"
    fi
    kill -TERM "$root" 2>/dev/null
    wait "$root"
    st=$?
    check "$name: the root ends by our SIGTERM (wait status $st)" [ "$st" = 143 ]
    stop_group
}

# fetch NAME PATH KIND: GET into $T/f.NAME; parse_all checks later that it parses as KIND
fetch() {
    local name=$1 path=$2 kind=$3 f=$T/f.$1 code
    : >"$f" # (curl creates no file for an empty body)
    code=$(curl -s -m 60 -o "$f" -w '%{http_code}' "http://$PE_ADDR$path")
    if [ "$code" != 200 ]; then bad "$path: HTTP $code"; head -c 300 "$f"; echo; return; fi
    printf '%s %s %s\n' "$f" "$kind" "$path" >>"$T/parse"
}
# parse_all: every fetched answer parses (one python: its start costs seconds on a busy box)
parse_all() {
    local line
    [ -s "$T/parse" ] || return 0
    while read -r line; do
        case $line in ok*) ok "${line#ok }" ;; *) bad "${line#FAIL }" ;; esac
    done < <(python3 - "$T/parse" <<'PY'
import gzip, json, sys, re, xml.dom.minidom

def pprof(b):  # the protobuf wire format, every field to the end; a string table
    d, i, strings = gzip.decompress(b), 0, 0
    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = d[i]; i += 1; v |= (c & 0x7f) << s; s += 7
            if c < 0x80: return v
    while i < len(d):
        key = varint()
        if key & 7 == 0: varint()
        elif key & 7 == 2:
            n = varint(); i += n; assert i <= len(d), "field past the end"
            strings += key >> 3 == 6
        else: raise AssertionError("wire type %d" % (key & 7))
    assert strings > 0, "no string table"

def check(kind, b):
    if kind == "pprof":
        pprof(b)
    elif kind == "json":
        json.loads(gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b)
    elif kind == "svg":
        xml.dom.minidom.parseString(b)
    elif kind == "folded":
        for line in b.decode().splitlines():
            assert re.match(r"^.+ \d+$", line), line
    else:
        assert b.strip(), "empty"

for line in open(sys.argv[1]):
    f, kind, path = line.split(" ", 2)
    try:
        check(kind, open(f, "rb").read())
        print("ok %s: %s parses" % (path.strip(), kind))
    except Exception as e:
        print("FAIL %s: %s does not parse: %r" % (path.strip(), kind, e))
PY
    )
    rm -f "$T/parse"
}

# answered PATH: an answer, 200 or the 502/503 of what cannot work here
answered() {
    local code
    code=$(curl -s -m 60 -o /dev/null -w '%{http_code}' "http://$PE_ADDR$1")
    check "$1: answered (HTTP $code)" one_of "$code" 200 502 503
}

# ---- an LD_PRELOAD tree -----------------------------------------------------------------
start_tree pre "$RT $ALIB" || pe_finish
eventually 20 [ -s "$T/pre.port.$root" ] || { bad "no port file"; cat "$T/pre.err"; pe_finish; }
PE_ADDR=$(cat "$T/pre.port.$root")
check "pre: five processes listed" eventually 20 listed 5

echo "== pid=all profiles ($SECONDS s)"
fetch cpu "/debug/pprof/profile?seconds=0.5&pid=all" pprof
fetch cputext "/debug/pprof/profile?seconds=0.5&pid=all&format=text" text
for f in pprof text folded svg tree flat; do
    k=$f; case $f in tree | flat) k=text ;; esac
    fetch "gor.$f" "/debug/pprof/goroutine?pid=all&format=$f" $k
done
fetch gor1 "/debug/pprof/goroutine?pid=all&debug=1" text
fetch gor2 "/debug/pprof/goroutine?pid=all&debug=2" text
fetch thc "/debug/pprof/threadcreate?pid=$(awk '/^grand/ {print $2}' "$T/pre.out")&debug=1" text
fetch view.folded "/profile?duration=0.5&pid=all&format=folded" folded
fetch view.svg "/profile?duration=0.5&format=svg" svg
fetch view.tree "/profile?duration=0.5&format=tree" text
fetch wall "/profile_wall?duration=0.5&pid=all&format=text" text
fetch trace "/debug/pprof/trace?seconds=0.5" json
fetch trace.leaf "/debug/pprof/trace?seconds=0.5&pid=$(awk '/^exec/ {print $2}' "$T/pre.out")" json
fetch procs "/debug/pprof/processes" json
fetch tasks "/task_backtraces" text
# Heap profiling is unavailable under ASan (its malloc comes first): 503, or 502 from pid=all.
for f in pprof text svg; do
    answered "/debug/pprof/heap?pid=all&format=$f"
done
answered "/debug/pprof/allocs?pid=all"
answered "/heap_snapshot"

echo "== sessions ($SECONDS s)"
# start/stop sessions, godeltaprof twice, the symbol protocol
for s in profile allocs_profile profile_wall; do
    curl -s -m 20 -o /dev/null "http://$PE_ADDR/${s}_start"
done
sleep 0.5
fetch profile.stop "/profile_stop?format=folded" folded
fetch profile_wall.stop "/profile_wall_stop?format=folded" folded
answered "/allocs_profile_stop?format=folded"
for d in heap mutex block heap mutex block; do
    curl -s -m 20 -o /dev/null "http://$PE_ADDR/debug/pprof/delta_$d"
done
curl -s -m 20 -o /dev/null --data '0x1+0x401000+0xffffffffffffffff' "http://$PE_ADDR/debug/pprof/symbol"

# every endpoint of the index with odd parameters, four requests at a time: any answer but none
echo "== sweep ($SECONDS s)"
long=$(head -c 3000 /dev/zero | tr '\0' 9)
paths=$(grep -o '"/[a-z_/]*"' http/routes.c | tr -d '"' | grep -v '^/debug_engine$' | sort -u)
odd=("debug=3" "format=bogus" "format=svg&pid=all" "format=folded&debug=1&pid=all"
    "n=0&maxdepth=-5&mincount=abc" "sample_index=zzz&granularity=x&groupby=thread"
    "pid=-1&token=" "names=%00%ff&since=$long" "delay=-3&capture=2&min_age=9e99&max_age=-1&mem=0&gzip=1")
for p in $paths; do
    # a short profile where the endpoint takes a duration (its default is up to 30 s)
    case $p in
    /profile | /profile_wall | /allocs_profile) base="duration=0.2&" ;;
    /debug/pprof/profile | /debug/fgprof | /debug/pprof/trace | /debug/pprof/heap | \
        /debug/pprof/allocs | /debug/pprof/mutex | /debug/pprof/block | /heap_timeline)
        base="seconds=0.2&"
        printf '%s\n' "$p?seconds=-1" "$p?seconds=1e30" "$p?seconds=nan" "$p?seconds=0x10" ;;
    *) base= ;;
    esac
    for q in "${odd[@]}"; do echo "$p?$base$q"; done
done >"$T/sweep.urls"
# one python, four threads: a shell and a curl per request cost more than the requests
python3 - "$PE_ADDR" "$T/sweep.urls" >"$T/sweep" <<'PY'
import concurrent.futures, http.client, sys, time
addr, urls = sys.argv[1], open(sys.argv[2]).read().split()
def get(u):
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection(addr, timeout=30)
        c.request("GET", u)
        r = c.getresponse()
        r.read()
        code = r.status
    except Exception as e:
        code = "000(%s)" % type(e).__name__
    return "%s %.2f %s" % (code, time.monotonic() - t0, u)
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    for line in ex.map(get, urls):
        print(line)
PY
n=$(wc -l <"$T/sweep.urls")
check "sweep: every one of $n odd requests answered" [ "$(grep -c '^[1-5][0-9][0-9] ' "$T/sweep")" = "$n" ]
grep -v '^[1-5][0-9][0-9] ' "$T/sweep" | head -n 5
check "sweep: no 500" [ "$(grep -c '^500 ' "$T/sweep")" = 0 ]
grep '^500 ' "$T/sweep" | head -n 5
awk '{print $1}' "$T/sweep" | sort | uniq -c | tr '\n' ' '
echo "slowest:"
sort -k2 -n -r "$T/sweep" | head -n 3 | cut -c1-120
echo "== sweep done ($SECONDS s)"
fetch after "/debug/pprof/goroutine?pid=all" pprof
survive pre

# ---- attach and detach ------------------------------------------------------------------
INJ=$BUILD/profep-inject
if [ -x "$INJ" ]; then
    start_tree att "$RT" || pe_finish
    out=$(PROFEP_INJECT=$INJ PROFEP_LIB=$ALIB timeout 60 scripts/profep attach "$root" --port 0 --children 2>&1)
    PE_ADDR=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$out" | head -n 1 | sed 's|http://||')
    check "attach --children: 4 of 4 descendants joined ($out)" grep -q '4 of 4 descendants joined' <<<"$out"
    check "att: five processes listed" eventually 20 listed 5
    fetch att.cpu "/debug/pprof/profile?seconds=0.5&pid=all" pprof
    fetch att.gor "/debug/pprof/goroutine?pid=all" pprof
    fetch att.gor2 "/debug/pprof/goroutine?pid=all&debug=2" text
    fetch att.svg "/profile?duration=0.5&pid=all&format=svg" svg
    fetch att.trace "/debug/pprof/trace?seconds=0.5&pid=$(awk '/^grand/ {print $2}' "$T/att.out")" json
    out=$(PROFEP_INJECT=$INJ PROFEP_LIB=$ALIB timeout 60 scripts/profep detach "$root" --children 2>&1)
    check "detach --children: 4 of 4 descendants detached ($out)" grep -q '4 of 4 descendants detached' <<<"$out"
    survive att
else
    echo "note: $INJ not built, attach part skipped"
fi
pe_finish
