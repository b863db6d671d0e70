#!/usr/bin/env bash
# e2e_exec_chain: a launcher chain in one pid says "serving" once (issue 38,
# item 5).  (1) env -> python3 -> python3 -> python3 by exec (each image
# lives 0.3 s and serves): one "serving" line, and its address answers the
# last image.  (2) env -> bash (busy) -> python3 by exec, as pyenv's shims
# are, with PROFEP_PORT_FILE=%p (a shell passes on the environment it read
# at its start, so the port file tells the later image): one line, and the
# port file's address answers the last image.
source test/e2e/lib.sh
pe_need curl
PY=/usr/bin/python3
[ -x $PY ] || { echo "skip: no $PY"; exit 77; }
serving() { grep -c '^profendpoints: serving' "$1"; }

# (1) the program passes its environment on: PROFEP_TREE carries the port
: >$T/1.out
env PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB env $PY -c '
import os, time
time.sleep(0.3)
os.execv("'$PY'", ["python3", "-c", "import os, time; time.sleep(0.3); os.execv(\"'$PY'\", [\"python3\", \"-c\", \"import time; print(\\\"last\\\", flush=True); time.sleep(20)\", \"last-image\"])"])' \
    >$T/1.out 2>$T/1.err &
P1=$!
eventually 20 grep -q last $T/1.out || bad "(1) the last image never ran"
sleep 0.5 # its server: 30 ms after load
check "(1) one serving line ($(serving $T/1.err))" [ "$(serving $T/1.err)" = 1 ]
addr=$(sed -n 's|^profendpoints: serving http://\([^ ]*\) .*|\1|p' $T/1.err | head -1)
check "(1) the announced address ($addr) answers the last image" \
    sh -c "curl -s -m 10 http://$addr/debug/pprof/cmdline | tr '\0' ' ' | grep -q last-image"
kill $P1; wait $P1 2>/dev/null

# (2) a shell in the chain: the port file tells
: >$T/2.out
env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD=$LIB env bash -c \
    'end=$((SECONDS + 1)); while [ $SECONDS -lt $end ]; do :; done
     exec '$PY' -c "import time; print(\"last\", flush=True); time.sleep(20)" shim-image' \
    >$T/2.out 2>$T/2.err &
P2=$!
eventually 20 grep -q last $T/2.out || bad "(2) the last image never ran"
sleep 0.5
check "(2) one serving line ($(serving $T/2.err))" [ "$(serving $T/2.err)" = 1 ]
check "(2) the port file's address answers the last image" \
    sh -c "curl -s -m 10 http://$(cat $T/port.$P2)/debug/pprof/cmdline | tr '\0' ' ' | grep -q shim-image"
check "(2) the line names that address" grep -q "serving http://$(cat $T/port.$P2) " $T/2.err
kill $P2; wait $P2 2>/dev/null
pe_finish
