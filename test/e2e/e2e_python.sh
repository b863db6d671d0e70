#!/usr/bin/env bash
# e2e_python: Debian's CPython 3.11 (/usr/bin/python3) under the library:
# Python functions (co_qualname, co_filename, lines) in CPU profiles read by
# go tool pprof (-top, -traces, -raw), fib under main, _PyEval_EvalFrameDefault
# still there; a 75/25 split between two Python functions within 5 points;
# two Python threads each with its own frames; the same frames in the text,
# folded and svg views, in wall-clock profiles (a sleeping thread read from
# /proc and a running one signalled) and in the goroutine texts; threads that
# come and go by thousands with generators while every capture runs; the same
# with a CPython 3.12 when one is at hand (pyenv's, or PY312=); a program
# that looks like CPython 3.13 is said to be unknown in one line, native only.
source test/e2e/lib.sh
none() { ! grep -Eq "$@"; }
not_python() { ! go tool pprof -raw "$1" 2>/dev/null | grep -q '\[python\]'; }
PY=/usr/bin/python3
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
[ -x $PY ] && $PY -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
    { echo "skip: $PY is not CPython 3.11"; exit 77; }

# ---- our CPython offsets against CPython's own headers ----------------------------------------
# (test/unit/u_pyframes.c; built here too, so that a machine that got python3.11-dev only now runs it)
scripts/deps.sh python >/dev/null 2>&1 || echo "note: scripts/deps.sh python failed"
if [ -f /usr/include/python3.11/internal/pycore_frame.h ]; then
    if ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -I. -I$BUILD/gen -I/usr/include/python3.11 \
        -DPE_HAVE_PY311_HEADERS -o $T/u_pyframes test/unit/u_pyframes.c $BUILD/libpe_core.a \
        -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm 2>$T/u.err; then
        r=$($T/u_pyframes 2>&1); st=$?
        check "u_pyframes: offsets, line table and names ($(echo "$r" | tail -1))" [ $st = 0 ]
        [ $st = 0 ] || echo "$r" | head -5
    else
        bad "u_pyframes does not build: $(head -3 $T/u.err)"
    fi
else
    echo "note: no python3.11-dev headers: offsets not checked"
fi

cat >$T/prog.py <<'PYEOF'
import random, sys, threading, time

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def work():
    s = 0
    for i in range(20000):
        s += i * i
    return s

def spin(n):
    s = 0
    for i in range(n):
        s += i ^ 3
    return s

# Three units of the same work, then one.  The unit's length varies from
# round to round, so that the rounds do not keep step with the sampling
# period (which would make every sample fall at the same point of a round).
def three_quarters(n):
    return spin(n) + spin(n) + spin(n)

def one_quarter(n):
    return spin(n)

def alpha_loop():
    while True:
        fib(15)

def beta_loop():
    while True:
        work()

def sleeper():
    while True:
        time.sleep(0.05)

def main():
    mode = sys.argv[1]
    if mode == "threads":
        ts = [threading.Thread(target=f, daemon=True) for f in (alpha_loop, beta_loop, sleeper)]
        for t in ts:
            t.start()
        time.sleep(0.2)
        with open(sys.argv[2] + ".tmp", "w") as out:
            out.write("%d %d %d\n" % tuple(t.native_id for t in ts))
        import os
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        ts[2].join()
    while True:
        if mode == "basic":
            fib(18)
            work()
        else:
            n = random.randrange(2000, 40000)
            three_quarters(n)
            one_quarter(n)

main()
PYEOF

top() { go tool pprof -top -sample_index=samples "$@" 2>/dev/null; }
# traces FILE: "thread|frame frame ..." per sample, leaf first
traces() {
    go tool pprof -traces "$1" 2>/dev/null | awk '
        /^-+\+-+/ { if (fr != "") print th "|" fr; th = ""; fr = ""; next }
        /^ +thread: / { th = $2; next }
        /^ +[0-9.]+m?s +/ { fr = $2; next }
        /^ +[^ ]/ && fr != "" { fr = fr " " $1 }
        END { if (fr != "") print th "|" fr }'
}

# ---- main -> fib, work -------------------------------------------------------------------
pe_start $PY $T/prog.py basic || exit 1
sleep 0.5
pe_get '/profile?duration=3' -o $T/b.pb.gz
check "the profile is read by go tool pprof" go tool pprof -raw $T/b.pb.gz >$T/b.raw 2>&1
top $T/b.pb.gz >$T/b.top
for fn in fib work main '<module>' _PyEval_EvalFrameDefault; do
    check "-top names $fn" awk -v fn="$fn" '$6 == fn { f = 1 } END { exit !f }' $T/b.top
done
for fn in fib work main; do
    check "$fn is a location of prog.py with its line and start line" \
        grep -Eq "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ $fn $T/prog.py:[0-9]+ s=[1-9]" $T/b.raw
done
check "Python frames in a [python] mapping" grep -Eq '^[0-9]+: 0x8000000000000000/.* \[python\]' $T/b.raw
check "the C main is still its own function" \
    grep -Eq "^ +[0-9]+: 0x[0-9a-f]+ M=1 (Py_BytesMain|main) :" $T/b.raw
traces $T/b.pb.gz >$T/b.tr
n_fib=$(grep -c ' fib' $T/b.tr); n_fib_main=$(grep -Ec ' fib( fib)*( [^ ]+)* main <module>' $T/b.tr)
echo "  stacks with fib: $n_fib, of them fib ... main <module>: $n_fib_main"
check "fib under main in every stack that has it" [ "$n_fib" -gt 0 ] && [ "$n_fib" = "$n_fib_main" ]
check "Python frames sit above _PyEval_EvalFrameDefault" \
    grep -q ' <module> _PyEval_EvalFrameDefault' $T/b.tr
lines=$(go tool pprof -top -lines $T/b.pb.gz 2>/dev/null | grep -c "fib $T/prog.py:[45]")
check "per-line view: fib's own lines (4-5)" [ "$lines" -ge 1 ]
# the other views
pe_get '/profile?duration=1&pprof=false' >$T/b.txt
check "text view: prog.py:LINE; fib" grep -Eq ' prog.py:[0-9]+; fib$' $T/b.txt
check "text view: prog.py:LINE; main" grep -Eq ' prog.py:[0-9]+; main$' $T/b.txt
pe_get '/profile?duration=1&format=folded' >$T/b.folded
check "folded view: <module>;main;fib" grep -q ';<module>;main;fib' $T/b.folded
pe_get '/profile?duration=1&format=svg' >$T/b.svg
check "svg view: fib and work" grep -q '>fib' $T/b.svg
check "svg view: work" grep -q 'work' $T/b.svg
pe_get '/debug/pprof/goroutine?debug=2' >$T/b.g2
check "goroutine debug=2: <module> of prog.py" sh -c "grep -A1 -x '<module>(...)' $T/b.g2 | grep -q 'prog.py'"
pe_get '/debug/pprof/goroutine?debug=1' >$T/b.g1
check "goroutine debug=1: main" grep -Pq '\tmain\t'"$T"'/prog.py' $T/b.g1
# the interpreter is named in the profiles and the index, and stderr holds
# only the serving line (issue 31: one line, or none)
check "stderr: exactly the one serving line" \
    [ "$(wc -l <"$PE_ERR")" = 1 -a "$(grep -c '^profendpoints: serving' "$PE_ERR")" = 1 ]
check "the profile's comments name the interpreter" \
    sh -c "go tool pprof -comments $T/b.pb.gz 2>/dev/null | grep -q 'python: CPython 3.11.*Python frames in every stack'"
pe_get '/debug/pprof/' >$T/index.html
check "the index page names the interpreter" grep -q 'python: CPython 3.11' $T/index.html
pe_stop

# ---- the 75/25 split -----------------------------------------------------------------------
pe_start $PY $T/prog.py split || exit 1
sleep 0.5
pe_get '/profile?duration=8&delay=0.004' -o $T/s.pb.gz
a=$(count_cum $T/s.pb.gz three_quarters); b=$(count_cum $T/s.pb.gz one_quarter)
pct=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + b > 0) printf "%.1f", 100 * a / (a + b); else print 0 }')
echo "  three_quarters=$a one_quarter=$b: $pct%"
check "75/25 split within 5 points ($pct%)" awk -v p="$pct" -v n=$((a + b)) \
    'BEGIN { exit !(n >= 200 && p >= 70 && p <= 80) }'
pe_stop

# ---- two Python threads, and a sleeping one ---------------------------------------------------
pe_start $PY $T/prog.py threads $T/tids || exit 1
for _ in $(seq 100); do [ -s $T/tids ] && break; sleep 0.05; done
read -r ta tb tsl <$T/tids
pe_get '/profile?duration=3' -o $T/t.pb.gz
traces $T/t.pb.gz >$T/t.tr
na=$(grep -c "^$ta|" $T/t.tr); nb=$(grep -c "^$tb|" $T/t.tr)
echo "  alpha ($ta): $na stacks, beta ($tb): $nb stacks"
check "thread alpha has samples" [ "$na" -gt 0 ]
check "thread beta has samples" [ "$nb" -gt 0 ]
own() { # tid n func: at least 95% of the thread's n stacks have func (a stack the
    # native unwinder cut still has the Python frames, but let a rare odd one pass)
    local k; k=$(grep "^$1|" $T/t.tr | grep -c " $3")
    [ $((k * 100)) -ge $(($2 * 95)) ] ||
        { echo "  $((${2} - k)) of $2 stacks of $1 without $3:"; grep "^$1|" $T/t.tr | grep -v " $3" | head -3; false; }
}
check "alpha's stacks are in alpha_loop" own $ta $na alpha_loop
check "no alpha stack has beta's frames" none "^$ta\\|.*(beta_loop| work )" $T/t.tr
check "beta's stacks are in beta_loop" own $tb $nb beta_loop
check "no beta stack has alpha's frames" none "^$tb\\|.*(alpha_loop| fib )" $T/t.tr
check "alpha's stacks: fib, alpha_loop, then threading's Thread.run, Thread._bootstrap" \
    grep -Eq "^$ta\|(fib )+alpha_loop _PyEval_EvalFrameDefault .*Thread.run Thread._bootstrap_inner Thread._bootstrap " $T/t.tr
pe_get '/profile_wall?duration=2' -o $T/w.pb.gz
traces $T/w.pb.gz >$T/w.tr
check "wall: the sleeping thread in sleeper" grep -q "^$tsl|.* sleeper _PyEval_EvalFrameDefault .*Thread.run" $T/w.tr
check "wall: alpha in alpha_loop" grep -q "^$ta|.* alpha_loop _PyEval_EvalFrameDefault .*Thread.run" $T/w.tr
check "wall: the main thread waiting in join, under main" grep -q ' Thread.join main <module>' $T/w.tr
pe_get '/debug/pprof/goroutine?debug=2' >$T/t.g2
check "goroutine debug=2: the main thread, blocked in join, read from /proc with its Python frames" \
    awk -v t="$PE_PID" '$1 == "goroutine" { on = ($2 == t) } on && /# capture: proc/ { p = 1 }
        on && /^Thread.join\(/ { s = 1 } END { exit !(p && s) }' $T/t.g2
check "goroutine debug=2: the sleeper in sleeper" \
    awk -v t="$tsl" '$1 == "goroutine" { on = ($2 == t) } on && /^sleeper\(/ { s = 1 } END { exit !s }' $T/t.g2
pe_stop

# ---- thread churn and generators: frames read while threads come and go ---------------------
cat >$T/churn.py <<'PYEOF'
import threading, time
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
def gen():
    for i in range(50):
        yield fib(10)
def worker():
    sum(gen())
end = time.time() + 4
n = 0
while time.time() < end:
    ts = [threading.Thread(target=worker) for _ in range(8)]
    for t in ts: t.start()
    for t in ts: t.join()
    n += 8
print("threads", n)
PYEOF
pe_start $PY $T/churn.py || exit 1
sleep 0.3
pe_get '/profile?duration=2&delay=0.002' -o $T/c1.pb.gz &
pe_get '/profile_wall?duration=2&delay=0.002' -o $T/c2.pb.gz &
for _ in 1 2 3 4; do pe_get '/debug/pprof/goroutine?debug=2' >/dev/null; sleep 0.2; done
wait
for _ in $(seq 100); do grep -q '^threads' "$PE_OUT" && break; sleep 0.1; done
check "churn: the program ran to its end ($(cat "$PE_OUT"))" grep -q '^threads [1-9]' "$PE_OUT"
traces $T/c1.pb.gz >$T/c1.tr
check "churn: a generator's frames under its caller (fib gen ... worker)" \
    grep -Eq '\|(fib )+gen _PyEval_EvalFrameDefault .* worker _PyEval_EvalFrameDefault' $T/c1.tr
check "churn: wall profile read" go tool pprof -top $T/c2.pb.gz >/dev/null
pe_stop

# ---- CPython 3.12, when one is at hand (PY312=..., or pyenv's) ------------------------------------
PY312=${PY312:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1)}
if [ -n "$PY312" ] && [ -x "$PY312" ]; then
    inc=$("$PY312" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    if [ -f "$inc/internal/pycore_frame.h" ] && ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -I. -I$BUILD/gen \
        -I"$inc" -DPE_HAVE_PY311_HEADERS -o $T/u_pyframes12 test/unit/u_pyframes.c \
        $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm 2>/dev/null; then
        r=$($T/u_pyframes12 2>&1); st=$?
        check "3.12: offsets against its headers ($(echo "$r" | tail -1))" [ $st = 0 ]
    fi
    pe_start "$PY312" $T/prog.py basic || exit 1
    sleep 0.5
    pe_get '/profile?duration=2' -o $T/b12.pb.gz
    traces $T/b12.pb.gz >$T/b12.tr
    check "3.12: the profile's comments name it" \
        sh -c "go tool pprof -comments $T/b12.pb.gz 2>/dev/null | grep -q 'python: CPython 3.12'"
    check "3.12: fib ... main <module>, then _PyEval_EvalFrameDefault" \
        grep -Eq ' fib( fib)*( [^ ]+)* main <module> _PyEval_EvalFrameDefault' $T/b12.tr
    check "3.12: work under main" grep -q ' work main <module>' $T/b12.tr
    go tool pprof -raw $T/b12.pb.gz >$T/b12.raw 2>&1
    check "3.12: fib with its file and line" grep -Eq " fib $T/prog.py:[0-9]+ s=[1-9]" $T/b12.raw
    pe_stop
else
    echo "note: no CPython 3.12 here (PY312=...): 3.12 not tried"
fi

# ---- an unknown version: said in the comments, native frames only -----------------------------------
cat >$T/fake.c <<'CEOF'
#include <unistd.h>
/* what a CPython 3.13 exports, as far as we look: no 3.13 layout is known */
char _PyRuntime[4096];
const unsigned long Py_Version = 0x030d01f0;
volatile unsigned long spin;
int main(void) { for (;;) spin++; }
CEOF
if ${CC:-cc} -O1 -rdynamic -o $T/fake $T/fake.c 2>/dev/null; then
    pe_start $T/fake || exit 1
    pe_get '/profile?duration=1' -o $T/f.pb.gz
    check "another version: profiles still work" go tool pprof -top $T/f.pb.gz >/dev/null
    check "another version: said in the profile's comments" \
        sh -c "go tool pprof -comments $T/f.pb.gz 2>/dev/null | grep -q 'python: CPython 3.13.1 has no known frame layout (we know 3.11, 3.12): native frames only'"
    pe_get '/profile?duration=1' -o $T/f2.pb.gz
    check "another version: nothing on stderr" [ "$(grep -c 'python:' "$PE_ERR")" = 0 ]
    check "another version: no [python] mapping" not_python $T/f.pb.gz
    pe_stop
fi
pe_finish
