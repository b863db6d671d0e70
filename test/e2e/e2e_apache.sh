#!/usr/bin/env bash
# e2e_apache: Apache 2.4's event MPM from Debian, a real program whose worker
# threads block SIGPROF (issues 38 and 42).  apache2 runs with its children
# (-DFOREGROUND, not -X) from a private configuration in $T: its own
# ServerRoot, DocumentRoot, PidFile and ErrorLog, 127.0.0.1 on a free port, 2
# children of 8 worker threads, mod_deflate so that a request costs user CPU.
# ab and a client that checks every body load it while:
#  - timer engine (PROFEP_CPU_ENGINE=timer): a child's CPU profile, from its own
#    port and through the root with pid=, says in its comments that its threads
#    block SIGPROF, naming every one; goroutine?debug=2 lists the child's
#    ThreadsPerChild+2 threads (workers, listener, main), each marked;
#  - default engine (perf events where the kernel allows them): pid=all through
#    the root has samples of the workers' request path (ap_run_process_connection
#    and what it calls) on the threads that block SIGPROF;
#  - `profep attach --children` to an apache2 started without the library: the
#    same through the root's address (pid=all), then detach --children: every
#    process has its own threads only again.
# Every answer is correct (ab: no failed or non-2xx request; the checking client
# compares gzip and plain bodies with the file), and apache2 stops on SIGTERM
# with status 0 and no child left.  Skips only when apache2 cannot be installed.
source test/e2e/lib.sh
pe_need curl python3 go
scripts/deps.sh apache >/dev/null 2>&1 || echo "note: scripts/deps.sh apache failed"
command -v apache2 >/dev/null && command -v ab >/dev/null ||
    { echo "SKIP: apache2 or ab not installed (scripts/deps.sh apache)"; exit 77; }
MODS=/usr/lib/apache2/modules
[ -f $MODS/mod_mpm_event.so ] && [ -f $MODS/mod_deflate.so ] ||
    { echo "SKIP: apache2's event MPM or mod_deflate missing in $MODS"; exit 77; }
INJ=$BUILD/profep-inject
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }
no_unsampled() { ! comments "$1" | grep -q 'unsampled:'; }
# on a failure, apache2's children and our load go too (lib.sh kills the parent, PE_PID)
LOAD_AB= LOAD_CHECK=
trap 'if [ "$BASHPID" = "$PE_MAIN_SHELL" ]; then
    [ -n "$PE_PID" ] && kill -9 $(pgrep -P "$PE_PID") 2>/dev/null
    [ -n "$LOAD_AB$LOAD_CHECK" ] && kill $LOAD_AB $LOAD_CHECK 2>/dev/null
fi; pe_cleanup' EXIT
PER_CHILD=8
A=$T/apache
chmod 755 "$T" # the children run as www-data when we are root
mkdir -p $A/htdocs $A/run $A/logs $A/ports $A/cores
chmod 1777 $A/ports $A/cores # the children's port files; a crashed child's core (CoreDumpDirectory)
# 64 KiB of text that compresses, not too well: deflate is the user CPU of a request
python3 -c '
import random, sys; r = random.Random(7); w = ["apache", "event", "worker", "listener", "pool", "bucket", "brigade", "filter"]
t = "\n".join(" ".join(r.choice(w) + str(r.randrange(1000)) for _ in range(12)) for _ in range(900))
sys.stdout.write(t[:65536])' >$A/htdocs/index.html
[ -s $A/htdocs/index.html ] || { bad "the page was not written"; pe_finish; }

# apache_conf PORT: the private configuration
apache_conf() {
    local user=
    [ "$(id -u)" = 0 ] && user="User www-data
Group www-data"
    cat >$A/httpd.conf <<CONF
ServerRoot $A
ServerName 127.0.0.1
Listen 127.0.0.1:$1
PidFile $A/run/httpd.pid
DefaultRuntimeDir $A/run
ErrorLog $A/logs/error.log
LogLevel notice
CoreDumpDirectory $A/cores
LoadModule mpm_event_module $MODS/mod_mpm_event.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule deflate_module $MODS/mod_deflate.so
$user
DocumentRoot $A/htdocs
<Directory $A/htdocs>
    Require all granted
    SetOutputFilter DEFLATE
</Directory>
StartServers 2
ServerLimit 2
ThreadsPerChild $PER_CHILD
MaxRequestWorkers $((2 * PER_CHILD))
MinSpareThreads $PER_CHILD
MaxSpareThreads $((2 * PER_CHILD))
MaxConnectionsPerChild 0
CONF
}

# apache_start NAME [VAR=VALUE...]: apache2 in the foreground with its children,
# under the given environment (LD_PRELOAD among it, or none); sets HPID, HPORT
apache_start() {
    local name=$1
    shift
    HPORT=$(free_port)
    apache_conf "$HPORT"
    rm -f $A/ports/* $A/run/httpd.pid
    : >$A/logs/error.log
    env "$@" apache2 -f $A/httpd.conf -DFOREGROUND >$T/$name.out 2>$T/$name.err &
    HPID=$!
    PE_PID=$HPID
    # generous: a loaded machine takes seconds to start a server and its children
    if ! eventually 30 bash -c "[ \$(pgrep -P $HPID | wc -l) = 2 ] &&
            curl -s -o /dev/null -m 5 http://127.0.0.1:$HPORT/index.html"; then
        bad "$name: apache2 did not start"
        cat $T/$name.err $A/logs/error.log
        return 1
    fi
}
threads_are() { [ "$(ls /proc/$1/task 2>/dev/null | wc -l)" = "$2" ]; }
none_alive() { local p; for p in "$@"; do ! kill -0 "$p" 2>/dev/null || return 1; done; }
# apache_stop NAME: SIGTERM to the parent; status 0 within 20 s, no child left
apache_stop() {
    local kids st=timeout
    kids=$(pgrep -P $HPID | tr '\n' ' ')
    kill -TERM $HPID
    for _ in $(seq 200); do kill -0 $HPID 2>/dev/null || break; sleep 0.1; done
    if kill -0 $HPID 2>/dev/null; then kill -9 $HPID; fi
    wait $HPID
    st=$?
    PE_PID=
    check "$1: apache2 stops on SIGTERM, status $st" [ "$st" = 0 ]
    check "$1: no child left ($kids)" eventually 10 none_alive $kids
    check "$1: no child crashed (error log)" bash -c "! grep -E 'exit signal|Segmentation|core dump' $A/logs/error.log"
    # a crash says where: the core's stack (the library is preloaded from $LIB, gdb reads it)
    local core cores=($A/cores/core*) pat pid
    pat=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
    for pid in $(sed -n 's/.*child pid \([0-9]*\) exit signal.*/\1/p' $A/logs/error.log); do
        [[ $pat == /*%p* ]] && cores+=("${pat//%p/$pid}") # a machine's own place for cores
    done
    for core in "${cores[@]}"; do
        [ -f "$core" ] || continue
        echo "  $1: $core:"
        timeout 60 gdb -batch -nx -ex 'thread apply all bt 12' "$(command -v apache2)" "$core" \
            </dev/null 2>&1 | grep -E '^(Thread|#)' | head -60 | sed 's/^/    /'
        rm -f "$core"
    done
}
# the load: rounds of ab (gzip) and a client that checks bodies, until $A/stop
load_start() {
    rm -f $A/stop $T/ab.* $T/check.out
    (i=0
    while [ ! -e $A/stop ] && [ $i -lt 200 ]; do
        ab -q -n 2000 -c 8 -s 20 -H 'Accept-Encoding: gzip' \
            "http://127.0.0.1:$HPORT/index.html" >$T/ab.$i 2>&1
        i=$((i + 1))
    done) &
    LOAD_AB=$!
    (i=0
    while [ ! -e $A/stop ] && [ $i -lt 2000 ]; do
        if [ $((i % 2)) = 0 ]; then
            curl -s -m 20 --compressed "http://127.0.0.1:$HPORT/index.html" -o $T/body
        else
            curl -s -m 20 "http://127.0.0.1:$HPORT/index.html" -o $T/body
        fi
        if cmp -s $T/body $A/htdocs/index.html; then echo ok; else echo "bad $i"; fi
        i=$((i + 1))
    done >$T/check.out) &
    LOAD_CHECK=$!
}
# load_stop NAME: every request answered and every body right
load_stop() {
    local done failed non2xx nchk
    touch $A/stop
    wait $LOAD_AB $LOAD_CHECK
    LOAD_AB= LOAD_CHECK=
    done=$(cat $T/ab.* | awk '/^Complete requests:/ { n += $3 } END { print n + 0 }')
    failed=$(cat $T/ab.* | awk '/^Failed requests:/ { n += $3 } END { print n + 0 }')
    non2xx=$(cat $T/ab.* | awk '/^Non-2xx responses:/ { n += $3 } END { print n + 0 }')
    nchk=$(grep -c . $T/check.out)
    echo "  $1: ab completed $done requests, $failed failed, $non2xx not 2xx; $nchk bodies checked"
    check "$1: ab's requests all answered 2xx with the right length ($done, $failed failed, $non2xx non-2xx)" \
        [ "$done" -ge 2000 -a "$failed" = 0 -a "$non2xx" = 0 ]
    check "$1: every checked body is the file ($nchk checked)" \
        bash -c "[ $nchk -gt 0 ] && ! grep -q bad $T/check.out"
}
# blocks_sigprof MASK: a /proc SigBlk mask has SIGPROF (27) in it
blocks_sigprof() { python3 -c "import sys; sys.exit(0 if int(sys.argv[1], 16) >> 26 & 1 else 1)" "$1"; }
# samples (the first sample type) of PROFILE whose stack has FUNC, per thread: "tid count" lines
samples_with() {
    go tool pprof -traces -sample_index=0 "$1" 2>/dev/null | awk -v fn="$2" '
        /^-----/ { if (has) n[tid] += v; has = 0; v = 0; tid = "?"; next }
        $1 == "thread:" { tid = $2; next }
        $1 ~ /^[0-9]+$/ && NF >= 2 { v = $1; if ($2 == fn) has = 1; next }
        $1 == fn { has = 1 }
        END { if (has) n[tid] += v; for (t in n) print t, n[t] }'
}

# ---- timer engine: every thread accounted for ----------------------------------------------
apache_start timer LD_PRELOAD=$LIB PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$A/ports/port.%p \
    PROFEP_CPU_ENGINE=timer || pe_finish
check "timer: the root's port file" eventually 10 test -s $A/ports/port.$HPID
ROOT=$(cat $A/ports/port.$HPID 2>/dev/null)
KIDS=$(pgrep -P $HPID | sort -n | tr '\n' ' ')
C1=$(awk '{print $1}' <<<"$KIDS")
check "timer: both children listed in /debug/pprof/processes ($KIDS)" eventually 10 bash -c \
    "[ \$(curl -s -m 5 http://$ROOT/debug/pprof/processes | grep -c '\"origin\": \"fork\"') = 2 ]"
check "timer: child $C1's port file" eventually 10 test -s $A/ports/port.$C1
CADDR=$(cat $A/ports/port.$C1 2>/dev/null)
load_start
code=$(curl -s -m 40 -o $T/t_own.pb.gz -w '%{http_code}' "http://$CADDR/debug/pprof/profile?seconds=2")
check "timer: child's own CPU profile 200 ($code)" [ "$code" = 200 ]
code=$(curl -s -m 40 -o $T/t_root.pb.gz -w '%{http_code}' "http://$ROOT/debug/pprof/profile?seconds=2&pid=$C1")
check "timer: child's CPU profile through the root 200 ($code)" [ "$code" = 200 ]
code=$(curl -s -m 40 -o $T/t_all.pb.gz -w '%{http_code}' "http://$ROOT/debug/pprof/profile?seconds=2&pid=all")
check "timer: pid=all CPU profile 200 ($code)" [ "$code" = 200 ]
txt=$(curl -s -m 40 "http://$ROOT/debug/pprof/goroutine?debug=2&pid=$C1")
idx=$(curl -s -m 40 "http://$CADDR/debug/pprof/")
load_stop timer
# debug=2 lists the program's threads (not ours); the event MPM's child has
# ThreadsPerChild workers, a listener and its main thread, and /proc says each blocks SIGPROF
listed=$(awk '/^goroutine / { print $2 }' <<<"$txt" | sort -n | tr '\n' ' ')
marked=$(awk '/^goroutine / { tid = $2 } /^# unsampled: blocks SIGPROF/ { print tid }' <<<"$txt" |
    sort -n | tr '\n' ' ')
n=$(wc -w <<<"$listed")
echo "  timer: debug=2 lists $n threads of child $C1: $listed"
echo "  timer: $(grep '^unsampled:' <<<"$txt")"
check "timer: debug=2 lists the workers, the listener and the main thread ($n = $PER_CHILD + 2)" \
    [ "$n" = $((PER_CHILD + 2)) ]
check "timer: debug=2 marks every one as blocking SIGPROF ($marked)" [ "$marked" = "$listed" ]
check "timer: debug=2's count line: $n of $n threads block SIGPROF" \
    grep -q "^unsampled: $n of $n threads block SIGPROF" <<<"$txt"
ok_proc=1
for t in $listed; do
    m=$(awk '/^SigBlk:/ { print $2 }' /proc/$C1/task/$t/status 2>/dev/null)
    [ -n "$m" ] && blocks_sigprof "$m" || { ok_proc=; echo "  tid $t: SigBlk '$m'"; }
done
check "timer: each listed thread is the child's and blocks SIGPROF by /proc" [ -n "$ok_proc" ]
for f in t_own t_root; do
    c=$(comments $T/$f.pb.gz | grep 'unsampled:')
    echo "  $f: $c"
    check "timer: $f says $n threads block SIGPROF" grep -q "unsampled: $n threads block SIGPROF (of $n;" <<<"$c"
    tids=$(grep -o 'tids [0-9 ]*' <<<"$c" | cut -d' ' -f2- | tr ' ' '\n' | sort -n | tr '\n' ' ')
    check "timer: $f names every thread debug=2 lists" [ "$tids" = "$listed" ]
done
check "timer: the child's index page says $n block SIGPROF" grep -q "$n block SIGPROF" <<<"$idx"
# a merge keeps each member's own comments, after whose they are
c=$(comments $T/t_all.pb.gz | grep "pid $C1.*unsampled:")
echo "  t_all: $c"
check "timer: pid=all says child $C1's $n threads block SIGPROF" \
    grep -q "unsampled: $n threads block SIGPROF (of $n;" <<<"$c"
apache_stop timer

# ---- the default engine: the workers sampled ------------------------------------------------
# perf_profile NAME ADDR PID: a 1000 Hz CPU profile of PID (a child, or all) through ADDR
# under load; its samples of the request path on threads that block SIGPROF
PERF_ON=1
perf_profile() {
    local name=$1 addr=$2 pid=$3 code eng total req blk fn
    load_start
    code=$(curl -s -m 60 -o $T/$name.pb.gz -w '%{http_code}' \
        "http://$addr/profile?duration=3&delay=0.001&pid=$pid")
    load_stop "$name"
    check "$name: CPU profile of pid=$pid 200 ($code)" [ "$code" = 200 ]
    if [ "$pid" != all ]; then # a merged profile (pid=all) carries no member's comments
        eng=$(comments $T/$name.pb.gz | grep 'engine:')
        echo "  $name: $eng"
        if grep -q 'engine: timer.*perf events not used' <<<"$eng"; then
            echo "  $name: perf events are refused here: the workers cannot be sampled (not checked)"
            PERF_ON=
            return 0
        fi
        check "$name: the perf engine" grep -q 'engine: perf' <<<"$eng"
        check "$name: no thread called unsampled" no_unsampled $T/$name.pb.gz
    fi
    [ -n "$PERF_ON" ] || return 0
    total=$(count_total $T/$name.pb.gz)
    samples_with $T/$name.pb.gz ap_run_process_connection >$T/$name.req
    req=$(awk '{ n += $2 } END { print n + 0 }' $T/$name.req)
    # those of threads that block SIGPROF (every apache thread of the children), by /proc
    blk=0
    while read -r t c; do
        for k in $KIDS; do
            m=$(awk '/^SigBlk:/ { print $2 }' /proc/$k/task/$t/status 2>/dev/null)
            [ -n "$m" ] && blocks_sigprof "$m" && blk=$((blk + c)) && break
        done
    done <$T/$name.req
    echo "  $name: $total samples, $req under ap_run_process_connection on $(wc -l <$T/$name.req) threads, $blk on threads that block SIGPROF"
    go tool pprof -top -nodecount=100000 -sample_index=0 $T/$name.pb.gz 2>/dev/null >$T/$name.top
    grep -E ' (ap_|apr_|deflate)' $T/$name.top | head -12 | sed 's/^/    /'
    check "$name: the request path sampled on threads that block SIGPROF ($blk samples, at least 50)" \
        [ "$blk" -ge 50 ]
    check "$name: the request path is most of the profile ($req of $total)" \
        awk -v r="$req" -v t="$total" 'BEGIN { exit !(t > 0 && r * 2 >= t) }'
    for fn in ap_process_async_request ap_invoke_handler deflate; do
        check "$name: $fn on the request path" \
            awk -v fn=$fn '$6 == fn && $4 + 0 >= 10 { f = 1 } END { exit !f }' $T/$name.top
    done
}
apache_start perf LD_PRELOAD=$LIB PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$A/ports/port.%p || pe_finish
check "perf: the root's port file" eventually 10 test -s $A/ports/port.$HPID
ROOT=$(cat $A/ports/port.$HPID 2>/dev/null)
KIDS=$(pgrep -P $HPID | sort -n | tr '\n' ' ')
check "perf: both children listed" eventually 10 bash -c \
    "[ \$(curl -s -m 5 http://$ROOT/debug/pprof/processes | grep -c '\"origin\": \"fork\"') = 2 ]"
C1=$(awk '{print $1}' <<<"$KIDS")
perf_profile perf "$ROOT" "$C1"
apache_stop perf

# ---- profep attach --children to an apache2 started without the library -----------------
if [ -x "$INJ" ] && [ "$(id -u)" = 0 ]; then
    export PROFEP_INJECT=$INJ PROFEP_LIB=$LIB
    apache_start attach || pe_finish
    KIDS=$(pgrep -P $HPID | sort -n | tr '\n' ' ')
    declare -A before
    for p in $HPID $KIDS; do before[$p]=$(ls /proc/$p/task | wc -l); done
    out=$(timeout 60 scripts/profep attach $HPID --port 0 --children 2>&1)
    echo "  attach: $out"
    check "attach: 2 of 2 children joined" grep -q '2 of 2 descendants joined' <<<"$out"
    ROOT=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$out" | head -1 | sed 's|http://||')
    check "attach: the root and both children listed" eventually 10 bash -c \
        "[ \$(curl -s -m 5 http://$ROOT/debug/pprof/processes | grep -c '\"pid\"') = 3 ]"
    perf_profile attach "$ROOT" all
    out=$(timeout 60 scripts/profep detach $HPID --children 2>&1)
    check "attach: detach --children ($out)" grep -q '2 of 2 descendants detached' <<<"$out"
    for p in "${!before[@]}"; do
        check "attach: pid $p has its own ${before[$p]} threads after the detach" \
            eventually 10 threads_are $p "${before[$p]}"
    done
    load_start
    sleep 1
    load_stop after-detach
    apache_stop attach
else
    echo "skip attach: needs root and $INJ"
fi
pe_finish
