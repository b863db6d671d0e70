#!/usr/bin/env bash
# e2e_views: the formats for people on real endpoints.  folded round-trips the
# values of the pprof output (go tool pprof -traces, summed by stack) for a
# fixed profile and for a live heap profile fetched twice; format=folded|svg|
# text on every profile endpoint that is built; the SVG is well-formed XML;
# Accept negotiation (browser -> svg, curl and go tool pprof -> pprof);
# sample_index; /debug_engine leaves files go tool pprof reads, and 503 when
# the stage directory is not writable.  The browser check is e2e_views_browser.
source test/e2e/lib.sh
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }

# traces_folded FILE SAMPLE_INDEX: the profile's stacks as folded lines, from
# go tool pprof -traces (values in base units), summed by stack, zeros left out.
# (pprof's -traces mangles names with markup or newlines: the fixed profile's
# "[weird ...]" frame is compared by hand instead.)
traces_folded() {
    local unit=
    case $2 in cpu | wall | delay) unit=-unit=ns ;; *_space) unit=-unit=B ;; esac
    go tool pprof -traces -sample_index="$2" $unit "$1" 2>/dev/null | python3 -c '
import re, sys
stacks, cur, val = {}, None, None
def flush():
    if cur is not None:
        key = ";".join(n.replace(";", "_") for n in reversed(cur))
        stacks[key] = stacks.get(key, 0) + val
for line in sys.stdin.read().split("\n"):
    if line.startswith("-----------+"):
        flush(); cur = None; continue
    m = re.match(r"^\s*(-?[0-9][0-9.e+]*)([A-Za-z]*)\s+(\S.*)$", line)
    if cur is None and m:
        val, cur = int(float(m.group(1))), [m.group(3).strip()]
    elif cur is not None and re.match(r"^\s{13}\S", line):
        cur.append(line.strip())
flush()
for k in sorted(stacks):
    if stacks[k]:
        print(k, stacks[k])
'
}
# unnamed_as_one <FOLDED: frames without a name ("0x..." in pprof's -traces, our
# "[object]" box, which merges the unnamed addresses of one object under one
# parent) as "?", the lines summed again.
unnamed_as_one() {
    python3 -c '
import re, sys
acc = {}
for line in sys.stdin:
    stack, _, v = line.rstrip("\n").rpartition(" ")
    if not stack:
        continue
    key = ";".join("?" if re.match(r"^(0x[0-9a-fA-F]+|\[[^]]*\])$", f) else f for f in stack.split(";"))
    acc[key] = acc.get(key, 0) + int(v)
for k in sorted(acc):
    print(k, acc[k])
'
}
same_folded() { # ours, theirs: equal as sets of lines (unnamed frames as one)
    if diff <(unnamed_as_one <"$1") <(unnamed_as_one <"$2") >"$T/diff"; then return 0; fi
    head -20 "$T/diff"; return 1
}
fetch_to() { # path file -> HTTP status
    curl -s -o "$2" -w '%{http_code}' --max-time 120 "http://$PE_ADDR$1"
}
xml_ok() { python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$1"; }
lines_ok() { # every line "frame;frame... N" and at least one
    [ -s "$1" ] && ! grep -Ev '^[^ ].* -?[0-9]+$' "$1" | head -3 | grep -q .
}

# ---- the fixed profile: pprof and folded of one model ---------------------------------
"$P/u_views" --dump "$T" || bad "u_views --dump"
for t in samples cpu; do
    traces_folded "$T/views.pb.gz" $t | grep -v '^\[weird' >"$T/views.$t.theirs"
    grep -v '^\[weird' "$T/views.$t.folded" >"$T/views.$t.ours"
    check "fixed profile: folded $t equals pprof -traces $t" \
        same_folded "$T/views.$t.ours" "$T/views.$t.theirs"
done
check "fixed profile: the frame with markup, ';' and a newline is one frame" \
    grep -qx "\[weird <&>\"' name_x_\] 1" "$T/views.samples.folded"

# ---- a live CPU profile -----------------------------------------------------------------
PE_ENV="PROFEP_STAGE_DIR=$T" pe_start $P/p_cpu_split 120 0.5 || exit 1
PE_ENV=
pe_get '/profile?duration=2&format=folded' >$T/cpu.folded
check "CPU folded: well-formed lines" lines_ok $T/cpu.folded
check "CPU folded: cpu_three_quarters and cpu_one_quarter stacks" \
    bash -c "grep -q ';cpu_three_quarters;spin [0-9]*$' $T/cpu.folded && grep -q ';cpu_one_quarter;' $T/cpu.folded"
hdr=$(curl -s -D - -o $T/cpu.svg --max-time 60 "http://$PE_ADDR/debug/pprof/profile?seconds=1&format=svg")
check "format=svg: Content-Type image/svg+xml" grep -qi '^Content-Type: image/svg+xml' <<<"$hdr"
check "format=svg: not an attachment" bash -c "! grep -qi '^Content-Disposition' <<<\"$hdr\""
check "format=svg: well-formed XML" xml_ok $T/cpu.svg
check "format=svg: names the functions" grep -qE '<title>cpu_three_quarters( at [^ ]*p_cpu_split.c)? \(' $T/cpu.svg
check "format=svg: nothing fetched from the network" \
    bash -c "! grep -Eo '(href|src)=\"[a-z]+:' $T/cpu.svg | grep -q ."
hdr=$(curl -s -D - -o $T/b.svg --max-time 60 -H 'Accept: text/html,application/xhtml+xml,*/*;q=0.8' \
    "http://$PE_ADDR/profile?duration=1")
check "browser Accept gets the SVG by default" \
    bash -c "grep -qi '^Content-Type: image/svg+xml' <<<\"$hdr\" && grep -q '<svg' $T/b.svg"
hdr=$(curl -s -D - -o $T/c.pb.gz --max-time 60 "http://$PE_ADDR/profile?duration=1")
check "curl gets pprof by default" \
    bash -c "grep -qi '^Content-Type: application/octet-stream' <<<\"$hdr\" && go tool pprof -raw $T/c.pb.gz >/dev/null 2>&1"
check "go tool pprof reads the endpoint directly" \
    bash -c "go tool pprof -top 'http://$PE_ADDR/debug/pprof/profile?seconds=1' 2>/dev/null | grep -q spin"
check "browser Accept with pprof=true still gets pprof" \
    bash -c "curl -s -H 'Accept: text/html' 'http://$PE_ADDR/profile?duration=0.5&pprof=true' | head -c2 | od -An -tx1 | grep -q '1f 8b'"
check "format=text: the tree report" \
    bash -c "curl -s 'http://$PE_ADDR/profile?duration=1&format=text' | grep -q 'cpu_three_quarters'"
check "sample_index=samples: folded counts" \
    bash -c "curl -s 'http://$PE_ADDR/profile?duration=1&format=folded&sample_index=samples' | awk '{ s += \$NF } END { exit !(s > 0 && s < 1000) }'"
check "sample_index=bogus: 400 naming the types" \
    bash -c "curl -s 'http://$PE_ADDR/profile?duration=0.1&format=folded&sample_index=bogus' | grep -q 'sample_index=bogus: must be one of samples, cpu'"

# /debug_engine: the file is the endpoint's output, in the format asked for.
post() { curl -s -w '\n%{http_code}' --max-time 60 -X POST -d "$1" "http://$PE_ADDR/debug_engine"; }
out=$(post '{"profile_type": "cpu_profile", "duration": 1}')
f=$(head -1 <<<"$out")
check "debug_engine cpu_profile: 200 with a path ($f)" \
    bash -c "[ '$(tail -1 <<<"$out")' = 200 ] && [ -s '$f' ]"
check "debug_engine: the file is a pprof go tool pprof reads" \
    bash -c "go tool pprof -top '$f' 2>/dev/null | grep -q cpu_three_quarters"
check "debug_engine: file name \$PROFEP_STAGE_DIR/profep-cpu-PID-*.pb.gz" \
    bash -c "[[ '$f' == $T/profep-cpu-$PE_PID-*.pb.gz ]]"
rm -f "$f"
out=$(post '{"profile_type": "cpu_profile", "duration": 0.5, "format": "folded"}')
f=$(head -1 <<<"$out")
check "debug_engine format=folded: a .folded file" bash -c "[[ '$f' == *.folded ]] && grep -q spin '$f'"
rm -f "$f"
out=$(post '{"profile_type": "cpu_profile", "duration": "x"}')
check "debug_engine: the endpoint's 400 passes through" \
    bash -c "[ '$(tail -1 <<<"$out")' = 400 ] && grep -q 'duration=x' <<<'$out'"
check "debug_engine: 400 on bad JSON" [ "$(post '{"profile_type": ' | tail -1)" = 400 ]
pe_stop

PE_ENV="PROFEP_STAGE_DIR=$T/cpu.svg" pe_start $P/p_sleep 30 0 || exit 1
out=$(post '{"profile_type": "cpu_profile", "duration": 1}')
check "debug_engine: 503 when PROFEP_STAGE_DIR is not writable" \
    bash -c "[ '$(tail -1 <<<"$out")' = 503 ] && grep -q 'not writable' <<<'$out'"
pe_stop; PE_ENV=

# ---- a live heap profile, fetched twice while the program holds still ------------------
mkfifo $T/in
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/hport LD_PRELOAD=$LIB \
    $P/p_heap_split 400000000 100000000 60 <$T/in >$T/heap.out 2>$T/heap.err &
PE_PID=$!
exec 3>$T/in
for _ in $(seq 300); do grep -q '^ready' $T/heap.out && [ -s $T/hport ] && break; sleep 0.1; done
PE_ADDR=$(cat $T/hport)
# Once to warm the debug information: on a busy machine the first answer may
# hit the 2 s reading bound and carry names without inlined frames, while the
# folded fetches after it read the cache and have them.
pe_get /debug/pprof/heap -o /dev/null
pe_get /debug/pprof/heap -o $T/heap.pb.gz
for si in inuse_space inuse_objects alloc_space alloc_objects; do
    pe_get "/debug/pprof/heap?format=folded&sample_index=$si" >$T/heap.$si.folded
    traces_folded $T/heap.pb.gz $si >$T/heap.$si.theirs
    check "heap: folded $si equals pprof -traces $si" \
        same_folded $T/heap.$si.folded $T/heap.$si.theirs
done
check "heap: site_a_alloc in the folded stacks" grep -q 'site_a_alloc' $T/heap.inuse_space.folded
pe_get '/debug/pprof/heap?format=svg' -o $T/heap.svg
check "heap svg: well-formed, default inuse_space" \
    bash -c "fetch_to() { # path file -> HTTP status
    curl -s -o "$2" -w '%{http_code}' --max-time 120 "http://$PE_ADDR$1"
}
xml_ok() { python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' \$1; }; xml_ok $T/heap.svg && grep -q 'inuse_space (bytes)' $T/heap.svg"
pe_get '/debug/pprof/heap?format=svg&sample_index=alloc_objects' -o $T/heap2.svg
check "heap svg: sample_index=alloc_objects" grep -q 'alloc_objects (count)' $T/heap2.svg

exec 3>&-
wait $PE_PID; PE_PID=

# Every profile endpoint that is built answers folded, svg and text.  (p_parked
# because the every-thread endpoints interrupt sleeping system calls.)
PE_ENV="PROFEP_STAGE_DIR=$T" pe_start $P/p_parked || exit 1
PE_ENV=
for ep in '/debug/pprof/heap' '/debug/pprof/allocs' '/allocs_profile?duration=0.5' \
    '/profile_wall?duration=0.5' '/debug/pprof/goroutine?debug=0' '/debug/pprof/threadcreate' \
    '/debug/pprof/mutex' '/debug/pprof/block'; do
    case $ep in *\?*) sep='&' ;; *) sep='?' ;; esac
    st=$(fetch_to "$ep${sep}format=folded" $T/ep.folded)
    if [ "$st" = 503 ] || [ "$st" = 404 ]; then
        echo "  ($ep answers $st: not built here)"
        continue
    fi
    check "$ep format=folded: 200" [ "$st" = 200 ]
    st=$(fetch_to "$ep${sep}format=svg" $T/ep.svg)
    check "$ep format=svg: 200 and well-formed" bash -c "[ $st = 200 ] && python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' $T/ep.svg"
    check "$ep format=text: 200" [ "$(pe_status "$ep${sep}format=text")" = 200 ]
    case $ep in /profile_wall* | /debug/pprof/goroutine*)
        check "$ep folded: the parked threads' stacks" grep -q ';park_sleep' $T/ep.folded ;;
    esac
done
# /debug_engine follows the route table to the every-thread endpoints once they are built.
for ty in wall_profile task_backtraces heap_snapshot; do
    out=$(post "{\"profile_type\": \"$ty\", \"duration\": 0.5}")
    f=$(head -1 <<<"$out")
    if [ "$(tail -1 <<<"$out")" = 503 ]; then
        echo "  (debug_engine $ty: 503, not built here)"
        continue
    fi
    check "debug_engine $ty: 200 and a file ($f)" \
        bash -c "[ '$(tail -1 <<<"$out")' = 200 ] && [ -s '$f' ]"
    case $f in
    *.txt) check "debug_engine $ty: the stacks as text" grep -q park_sleep "$f" ;;
    *.heapsnapshot) check "debug_engine $ty: a .heapsnapshot JSON document" \
        python3 -c 'import json, sys; assert "snapshot" in json.load(open(sys.argv[1]))' "$f" ;;
    *) check "debug_engine $ty: a pprof naming park_sleep" \
        bash -c "go tool pprof -top '$f' 2>/dev/null | grep -q park_sleep" ;;
    esac
    rm -f "$f"
done
if [ "$(pe_status /task_backtraces)" = 200 ]; then
    (pf=$PWD/scripts/profep && cd $T && $pf threads $PE_ADDR -o threads.txt 2>pf4.msg)
    check "profep threads: every thread's stack as text" \
        bash -c "grep -q 'saved the thread stacks to threads.txt' $T/pf4.msg && grep -q park_sleep $T/threads.txt"
fi
pe_stop

# ---- scripts/profep ----------------------------------------------------------------------
PF=$PWD/scripts/profep
check "profep --help shows the commands" \
    bash -c "$PF --help | grep -q 'profep cpu|heap|allocs|threads|snapshot'"
check "profep without a command: usage, exit 2" bash -c "$PF >/dev/null 2>&1; [ \$? = 2 ]"
PROFEP_LIB=$LIB PROFEP_PORT_FILE=$T/pf.port $PF run --port 0 -- $P/p_cpu_split 60 0.3 \
    >/dev/null 2>$T/pf.err &
PE_PID=$!
for _ in $(seq 100); do [ -s $T/pf.port ] && break; sleep 0.05; done
PE_ADDR=$(cat $T/pf.port)
check "profep run preloads the library" grep -q "profendpoints: serving http://$PE_ADDR" $T/pf.err
(cd $T && $PF cpu $PE_ADDR 1 -o pf.pb.gz 2>pf.msg)
check "profep cpu: a profile go tool pprof reads" \
    bash -c "go tool pprof -top $T/pf.pb.gz 2>/dev/null | grep -q cpu_three_quarters"
check "profep cpu: says where it saved and how to view" \
    bash -c "grep -q 'saved the CPU profile (1 s) to pf.pb.gz' $T/pf.msg && grep -q 'go tool pprof -http' $T/pf.msg"
(cd $T && $PF heap :${PE_ADDR#*:} -f svg 2>pf2.msg)
check "profep heap -f svg: heap-DATE.svg, well-formed" \
    bash -c "f=\$(ls $T/heap-*.svg) && python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' \$f"
$PF cpu $PE_ADDR 3000 -o $T/never >$T/pf2.msg 2>&1; st=$? # above PROFEP_MAX_SECONDS: refused before asking
check "profep: seconds above the server's limit refused at once, exit 2" \
    bash -c "[ $st = 2 ] && grep -q PROFEP_MAX_SECONDS $T/pf2.msg && [ ! -e $T/never ]"
$PF heap 127.0.0.1:1 >$T/pf3.msg 2>&1; st=$?
check "profep: unreachable program: exit 1 with a hint" \
    bash -c "[ $st = 1 ] && grep -q 'profep run' $T/pf3.msg"
pe_stop
pe_finish
