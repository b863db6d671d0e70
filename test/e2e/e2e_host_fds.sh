#!/usr/bin/env bash
# e2e_host_fds: our descriptors and the program's (issue 15, points 4, 6, 7
# and 8).  A program that closes every descriptor (loop, close_range,
# closefrom) keeps its own clients and does not make our server spin; dup2
# onto each of our sockets gives the program what it asked for while a
# request in flight still gets its answer; RLIMIT_NOFILE=16 leaves the program
# every number; a raw close of our socket makes us stop with one line; the
# "serving" line never lands in a file the program put at fd 2; children of
# a tree whose root serves stay silent; IPv6 says what it lacks.
source test/e2e/lib.sh
P=$BUILD/test

# row_start PROG ARGS: the program under the library, its stdin a fifo we
# hold open (rows block on stdin until EOF); sets PE_PID, PE_ADDR, ROW_IN.
row_start() {
    local pf
    PE_ERR=$T/stderr.$RANDOM
    PE_OUT=$T/stdout.$RANDOM
    ROW_FIFO=$T/in.$RANDOM
    mkfifo "$ROW_FIFO"
    env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" ${PE_ENV:-} "$@" \
        <"$ROW_FIFO" >"$PE_OUT" 2>"$PE_ERR" &
    PE_PID=$!
    exec {ROW_IN}>"$ROW_FIFO"
    pf=$T/port.$PE_PID
    for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.05; done
    [ -s "$pf" ] || { echo "no port file from $*"; cat "$PE_ERR"; return 1; }
    PE_ADDR=$(cat "$pf")
}
row_done() { # WORD SECONDS: the row printed WORD within that time
    for _ in $(seq $(($2 * 10))); do
        grep -q "$1" "$PE_OUT" && return 0
        kill -0 "$PE_PID" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "$1" "$PE_OUT"
}
row_end() { # close stdin; the row's exit status
    local st
    exec {ROW_IN}>&-
    wait "$PE_PID"; st=$?
    PE_PID=
    return $st
}
only_serving() { # stderr holds the serving line and nothing else
    [ "$(grep -c . "$PE_ERR")" = 1 ] && grep -q 'profendpoints: serving' "$PE_ERR"
}

# Point 4: close loop, close_range(3, ~0U), closefrom(3); the row checks its
# own 3 x 20 clients and civetweb-master's CPU in 2 s of idle.
row_start $P/p_host_close_all || exit 1
check "close-all: every client answered by the program, no spin" row_done HOST-ROW-DONE 40
check "close-all: our server still serves" [ "$(pe_status /debug/pprof/)" = 200 ]
check "close-all: exit 0" row_end
check "close-all: stderr holds only the serving line" only_serving
only_serving || sed 's/^/  stderr: /' "$PE_ERR" | head -5

# The issue's recipe: a Python daemon that closes its descriptors (the
# python-daemon way, os.closerange), listens a while on sockets of its own,
# then has 20 clients: it answers all of them itself.
if [ -x /usr/bin/python3 ]; then
    cat >$T/daemon.py <<'EOF'
import os, socket, time
time.sleep(0.5)
os.closerange(3, 1024)
srvs = []
for _ in range(10):  # the lowest free numbers: those just closed
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    srvs.append(s)
time.sleep(2.2)  # a poll begun on a closed socket times out meanwhile
mine = 0
for srv in srvs:
    port = srv.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    time.sleep(0.05)
    srv.settimeout(0.5)
    for _ in clients:
        try:
            c, _a = srv.accept()
            c.sendall(b"mine")
            c.close()
        except OSError:
            pass
    for c in clients:
        c.settimeout(0.5)
        try:
            mine += c.recv(8) == b"mine"
        except OSError:
            pass
print(mine)
EOF
    n=$(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB /usr/bin/python3 $T/daemon.py 2>/dev/null)
    check "python daemon after os.closerange: $n of 20 clients answered by itself" [ "$n" = 20 ]
fi

# dup2 onto each of our sockets while a 2 s profile is in flight on one of
# them: the program reads back only its data, the profile still arrives.
row_start $P/p_host_dup2 || exit 1
pe_get '/debug/pprof/profile?seconds=2' -o $T/dup2.pb.gz -w '%{http_code}' >$T/dup2.st &
cpid=$!
check "dup2: the program got exactly what it wrote through each number" row_done HOST-ROW-DONE 30
wait $cpid
check "dup2: the profile in flight still arrived ($(cat $T/dup2.st))" \
    bash -c "[ \"\$(cat $T/dup2.st)\" = 200 ] && gzip -t $T/dup2.pb.gz"
check "dup2: our server still serves" [ "$(pe_status /debug/pprof/)" = 200 ]
check "dup2: exit 0" row_end
check "dup2: stderr holds only the serving line" only_serving

# RLIMIT_NOFILE=16 after start-up: every number below 16 is the program's.
row_start $P/p_host_nofile || exit 1
check "nofile: the program gets every descriptor below 16" row_done HOST-ROW-DONE 20
check "nofile: exit 0" row_end
only_serving || sed 's/^/  stderr: /' "$PE_ERR" | head -5

# A raw close(2) syscall of our socket (no interposer sees it), the number
# then reused by the program's listener: its client is its own, one line
# says we stopped, and the accept loop stays idle.
row_start $P/p_fd_rawclose || exit 1
check "raw close: the program's client answered by the program" row_done DONE 20
master_ms() { # CPU ms of civetweb-master over 1 s
    local t a b
    for t in /proc/$PE_PID/task/*; do
        [ "$(cat $t/comm 2>/dev/null)" = civetweb-master ] || continue
        a=$(awk '{print $1}' $t/schedstat); sleep 1; b=$(awk '{print $1}' $t/schedstat)
        echo $(((b - a) / 1000000)); return
    done
    echo 0
}
ms=$(master_ms)
check "raw close: civetweb-master idle ($ms ms in 1 s)" [ "$ms" -lt 50 ]
check "raw close: exit 0" row_end
check "raw close: one line says the server stopped" \
    bash -c "[ \$(grep -c 'closed behind our back' $PE_ERR) = 1 ] && [ \$(grep -c . $PE_ERR) = 2 ]"

# Point 6: fd 2 closed and a data file opened in its place at the start of
# main: the file holds only the program's records (the row checks it too).
row_start $P/p_host_stderr $T/data.txt || exit 1
check "stderr swapped: the data file holds only the program's records" row_done HOST-ROW-DONE 20
check "stderr swapped: exit 0" row_end
check "stderr swapped: no line of ours in it" bash -c "! grep -q profendpoints $T/data.txt"

# Point 7: a shell whose children load the library again: the root serves,
# the children (port held by their ancestor) stay silent.
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/free.port LD_PRELOAD=$LIB $P/p_sleep 0.3 0 >/dev/null 2>&1
port=$(sed 's/.*://' $T/free.port)
PROFEP_ADDR=127.0.0.1:$port LD_PRELOAD=$LIB bash -c \
    'sleep 0.5; for i in $(seq 20); do /bin/true; done; for i in 1 2 3 4; do sleep 0.3; done' \
    >/dev/null 2>$T/tree.err
check "tree: children stay silent ($(grep -c 'cannot listen' $T/tree.err) cannot-listen lines)" \
    [ "$(grep -c 'cannot listen' $T/tree.err)" = 0 ]
check "tree: the root's serving line, once" [ "$(grep -c 'serving' $T/tree.err)" = 1 ]
# A process outside the tree still says the port is taken.
PROFEP_ADDR=127.0.0.1:$port LD_PRELOAD=$LIB $P/p_sleep 5 0 >/dev/null 2>$T/root.err &
rpid=$!
eventually 4 grep -q serving $T/root.err # bound before the other one tries
PROFEP_ADDR=127.0.0.1:$port LD_PRELOAD=$LIB $P/p_sleep 0.5 0 >/dev/null 2>$T/other.err
wait $rpid
check "not a descendant: one cannot-listen line" [ "$(grep -c 'cannot listen' $T/other.err)" = 1 ]

# Point 8: IPv6.  Debian's civetweb 1.15 is built without it: one line says
# so and the program runs on; where civetweb has it, [::1] serves.
out=$(PROFEP_ADDR='[::1]:0' PROFEP_PORT_FILE=$T/v6.port LD_PRELOAD=$LIB $P/p_sleep 1.5 0 2>$T/v6.err)
if grep -q 'built without IPv6' $T/v6.err; then
    check "IPv6 unavailable: one line, program unchanged" \
        bash -c "[ \$(grep -c . $T/v6.err) = 1 ] && [ '$out' = slept ]"
else
    check "IPv6: [::1] serves" grep -q '^\[::1\]:[0-9]*$' $T/v6.port
fi

pe_finish
