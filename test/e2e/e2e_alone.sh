#!/usr/bin/env bash
# e2e_alone: real programs that must be alone or filter their system calls
# run with the library as without it (README "A process that must be alone"):
# the same stdout and exit status, every run bounded.
#   - unshare --user --map-root-user (unshare(CLONE_NEWUSER) needs one thread);
#   - bubblewrap running commands, one of which counts its own threads;
#   - a libseccomp program (test/progs/p_alone_seccomp.c) whose filter
#     (SCMP_ACT_KILL_PROCESS, a short allow list, TSYNC) goes on after 1 s with
#     no request made, at heap rate 1; the same with SCMP_ACT_KILL_THREAD while
#     CPU, wall-clock and stack profiles run, PE_ALONE_RUNS times (20): never
#     a hang, never another status;
#   - headless Chromium dumping a page's DOM without its sandbox, and sandboxed
#     as nobody where it runs so without the library here (skipped otherwise,
#     and all of Chromium when it is not installed: scripts/deps.sh browser).
# Every process runs as the root of its own tree (PROFEP_ADDR=127.0.0.1:0).
source test/e2e/lib.sh
pe_need curl timeout
RUNS=${PE_ALONE_RUNS:-20}
P=$BUILD/test

# same NAME [VAR=VALUE...] -- CMD...: CMD's stdout and exit status with the
# library (root of a tree, heap rate 1) equal those without it; 90 s each at most.
same() {
    local name=$1 vars=() want got
    shift
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    local t0=$SECONDS
    # both at once (the wall time of one); a reference run already made
    # ($T/NAME.ref and NAME.ref.rc) is used as it is
    local ref=
    if [ ! -f "$T/$name.ref.rc" ]; then
        timeout -k 5 90 env "${vars[@]}" "$@" >"$T/$name.ref" 2>"$T/$name.ref.err" &
        ref=$!
    fi
    timeout -k 5 90 env "${vars[@]}" LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=1 \
        "$@" >"$T/$name.out" 2>"$T/$name.err"
    got=$?
    if [ -n "$ref" ]; then
        wait $ref
        want=$?
    else
        want=$(cat "$T/$name.ref.rc")
    fi
    echo "  ($name: $((SECONDS - t0)) s)"
    if [ "$want" = "$got" ] && cmp -s "$T/$name.ref" "$T/$name.out"; then
        ok "$name: exit $got and the same output as without the library"
    else
        bad "$name: exit $got (without the library $want); output differs: $(diff "$T/$name.ref" \
            "$T/$name.out" | head -c 300 | tr '\n' '|'); stderr: $(grep -v -e dbus -e '^\[' \
            "$T/$name.err" | head -c 400 | tr '\n' '|')"
    fi
}

# ---- namespaces: unshare and bubblewrap ----------------------------------------------
if unshare --user --map-root-user true 2>/dev/null; then
    same unshare -- unshare --user --map-root-user sh -c 'id -u; echo in'
    # the same, 0.3 s after the library's threads started (the shell is the root)
    same unshare_late -- sh -c 'sleep 0.3; unshare --user --map-root-user id -u'
else
    echo "skip: unshare --user does not work here"
fi
if command -v bwrap >/dev/null && bwrap --ro-bind / / true 2>/dev/null; then
    same bwrap -- bwrap --ro-bind / / --dev /dev --unshare-user --unshare-pid --proc /proc \
        sh -c 'echo hi; id -u'
    # a command that counts its own threads (it loads the library too, in the sandbox)
    same bwrap_tasks -- bwrap --ro-bind / / --unshare-all --proc /proc \
        sh -c 'sleep 0.3; ls /proc/self/task | wc -l'
else
    echo "skip: bwrap missing or cannot make a sandbox here"
fi

# ---- a libseccomp program -------------------------------------------------------------
if [ -x "$P/p_alone_seccomp" ]; then
    same seccomp_kill_process -- "$P/p_alone_seccomp" kill-process
    # One run: the program under profiles at 1000 Hz (CPU, wall) and stack
    # captures, its filter going on at 1 s.  Writes res.N: "ok" or why not.
    kill_thread_run() {
        local n=$1 d=$T/kt.$1 pid addr rc dog
        mkdir -p "$d"
        env LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$d/port.%p" \
            "$P/p_alone_seccomp" kill-thread >"$d/out" 2>"$d/err" &
        pid=$!
        # bounded: a run that hangs is killed after 30 s (its status then 137)
        (sleep 30; kill -9 $pid 2>/dev/null) &
        dog=$!
        for _ in $(seq 100); do [ -s "$d/port.$pid" ] && break; sleep 0.05; done
        addr=$(cat "$d/port.$pid" 2>/dev/null)
        if [ -n "$addr" ]; then
            curl -s -o /dev/null -m 20 "http://$addr/profile?duration=3&delay=0.001" &
            curl -s -o /dev/null -m 20 "http://$addr/profile_wall?duration=3&delay=0.001" &
            for _ in 1 2 3 4 5; do
                curl -s -o /dev/null -m 5 "http://$addr/debug/pprof/goroutine?debug=2&capture=signal"
                sleep 0.2
            done
        fi
        wait $pid
        rc=$?
        kill $dog 2>/dev/null
        wait
        if [ $rc = 0 ] && cmp -s "$d/out" "$T/kt.ref"; then
            echo ok >"$T/kt.res.$n"
        else
            echo "run $n: exit $rc (137: hung, killed after 30 s), port ${addr:-none}, out $(tr '\n' '|' <"$d/out")" \
                >"$T/kt.res.$n"
        fi
    }
    t0=$SECONDS
    "$P/p_alone_seccomp" kill-thread >"$T/kt.ref" 2>/dev/null
    for n in $(seq "$RUNS"); do
        while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
        kill_thread_run "$n" &
    done
    wait
    fails=$(cat "$T"/kt.res.* | grep -vc '^ok$')
    echo "  (kill-thread runs: $((SECONDS - t0)) s)"
    check "seccomp kill-thread under profiles: $RUNS runs, $fails failed (output and status as without the library, none hung)" [ "$fails" = 0 ]
    grep -hv '^ok$' "$T"/kt.res.* | head -5
else
    echo "skip: $P/p_alone_seccomp not built (libseccomp-dev: scripts/deps.sh)"
fi

# ---- PROFEP_ADDR=off: nothing of ours on stderr, in any process of the tree ---------------
# p_host_alone's parent and its fork child each look at their own thread list and
# step aside; with the server off that is said nowhere (PROFEP_LOG=info still says it)
timeout -k 5 60 env LD_PRELOAD="$LIB" PROFEP_ADDR=off "$P/p_host_alone" >"$T/off.out" 2>"$T/off.err"
check "PROFEP_ADDR=off, a forking program that must be alone: stderr has nothing of ours ($(grep -m1 profendpoints "$T/off.err"))" \
    bash -c "grep -q HOST-ROW-DONE $T/off.out && ! grep -q '^profendpoints:' $T/off.err"
timeout -k 5 60 env LD_PRELOAD="$LIB" PROFEP_ADDR=off PROFEP_LOG=info "$P/p_host_alone" >/dev/null 2>"$T/offlog.err"
check "PROFEP_ADDR=off PROFEP_LOG=info: the stepping aside is still said" \
    grep -q '^profendpoints: .*profiling stops in this process' "$T/offlog.err"

# ---- headless Chromium ------------------------------------------------------------------
CHROMIUM=$(command -v chromium) || CHROMIUM=
if [ -n "$CHROMIUM" ]; then
    # a home for root's runs and one for nobody's (Chromium writes its profile there)
    mkdir -p "$T/web/root" "$T/web/home" && chmod 755 "$T" "$T/web" && chown nobody "$T/web/home"
    printf '<html><body><p id="x">alone</p><script>document.getElementById("x").textContent += " and well"</script></body></html>\n' \
        >"$T/web/page.html"
    chmod 644 "$T/web/page.html"
    same chromium_nosandbox HOME="$T/web/root" -- "$CHROMIUM" --headless --no-sandbox \
        --dump-dom "file://$T/web/page.html"
    check "chromium (no sandbox) ran the page's script" grep -q 'alone and well' "$T/chromium_nosandbox.out"
    # its processes with PROFEP_ADDR=off: not a line of ours
    timeout -k 5 90 env HOME="$T/web/root" LD_PRELOAD="$LIB" PROFEP_ADDR=off "$CHROMIUM" --headless \
        --no-sandbox --dump-dom "file://$T/web/page.html" >"$T/chromium_off.out" 2>"$T/chromium_off.err"
    check "chromium with PROFEP_ADDR=off: its page, and nothing of ours on stderr ($(grep -m1 profendpoints "$T/chromium_off.err"))" \
        bash -c "grep -q 'alone and well' $T/chromium_off.out && ! grep -q 'profendpoints:' $T/chromium_off.err"
    # sandboxed (its zygote, namespaces and seccomp-bpf), as nobody, where it runs so without us
    timeout -k 5 90 runuser -u nobody -- env HOME="$T/web/home" "$CHROMIUM" --headless \
        --dump-dom "file://$T/web/page.html" >"$T/chromium_sandbox.ref" 2>/dev/null
    echo $? >"$T/chromium_sandbox.ref.rc"
    if grep -q 'alone and well' "$T/chromium_sandbox.ref"; then
        same chromium_sandbox -- runuser -u nobody -- env HOME="$T/web/home" "$CHROMIUM" \
            --headless --dump-dom "file://$T/web/page.html"
    else
        echo "skip: chromium does not run sandboxed as nobody here (without the library either)"
    fi
else
    echo "skip: chromium not installed (scripts/deps.sh browser)"
fi
pe_finish
