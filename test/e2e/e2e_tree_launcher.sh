#!/usr/bin/env bash
# e2e_tree_launcher: trees outlive their launcher (issue 38, item 4).
#  - p_launcher: the root forks a long-lived child that forks 2 members, then
#    exits.  Within 10 s a member takes over the root's role and port: the
#    root's address still answers, /debug/pprof/processes there lists the
#    child and both members (and nothing dead), pid=all merges all three, the
#    root's port file still names that address, and one line says who took
#    over.  Their own %p port files go when they exit.
#  - pg_ctl start (PostgreSQL 15, when installed and we are root: scripts/deps.sh
#    tree): pg_ctl is the root and exits; the postmaster takes its address,
#    and processes there lists the postmaster and its background processes.
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl go python3
pids_of() { curl -s -m 10 "http://$1/debug/pprof/processes" | grep -o '"pid": [0-9]*' | awk '{print $2}' | sort -n | tr '\n' ' '; }

# ---- p_launcher ------------------------------------------------------------------------
pe_start $P/p_launcher 800 12 || exit 1
ROOT=$PE_PID
wait $ROOT
PE_PID=
check "the launcher exited 0" grep -q 'launcher exits' "$PE_OUT"
want=$(awk '$1 == "child" || $1 == "member" { print $2 }' "$PE_OUT" | sort -n | tr '\n' ' ')
check "a child and 2 members ($want)" [ "$(wc -w <<<"$want")" = 3 ]
eventually 10 sh -c "[ \"\$(curl -s -m 5 http://$PE_ADDR/debug/pprof/processes | grep -o '\"pid\": [0-9]*' | awk '{print \$2}' | sort -n | tr '\n' ' ')\" = \"$want\" ]"
got=$(pids_of "$PE_ADDR")
check "processes at the root's address ($PE_ADDR) lists every live member ($got = $want)" [ "$got" = "$want" ]
check "one of them is now the root" sh -c "curl -s http://$PE_ADDR/debug/pprof/processes | grep -q '\"origin\": \"root\"'"
check "the root's port file still names it" [ "$(cat $T/port.$ROOT)" = "$PE_ADDR" ]
check "one line says who took over" [ "$(grep -c 'is gone: pid [0-9]* (p_launcher) serves the tree on' "$PE_ERR")" = 1 ]
code=$(pe_fetch '/debug/pprof/profile?seconds=1&pid=all' $T/all.pb)
check "pid=all through the root's address: 200 ($code)" [ "$code" = 200 ]
check "pid=all merges all three" sh -c "go tool pprof -comments $T/all.pb 2>/dev/null | grep -q '3 of 3 processes merged'"
# they exit on their own after 12 s: their port files go with them
for p in $want; do eventually 20 sh -c "! kill -0 $p 2>/dev/null"; done
left=$(for p in $want; do [ -e $T/port.$p ] && echo $p; done | tr '\n' ' ')
check "the members' port files are gone after they exit (left: $left)" [ -z "$left" ]

# ---- pg_ctl start ----------------------------------------------------------------------
PGBIN=/usr/lib/postgresql/15/bin
if [ -x $PGBIN/pg_ctl ] && [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1; then
    PGD=$T/pg
    mkdir -p $PGD && chown postgres $PGD && chmod 755 $T
    PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    su postgres -s /bin/sh -c "$PGBIN/initdb -D $PGD/data -A trust >$PGD/initdb.log 2>&1"
    su postgres -s /bin/sh -c "echo \$\$ >$PGD/launcher.pid; exec env PROFEP_ADDR=127.0.0.1:0 \
        PROFEP_PORT_FILE=$PGD/port.%p LD_PRELOAD=$LIB $PGBIN/pg_ctl -D $PGD/data -w -t 120 \
        -o '-k $PGD -p $PGPORT -c listen_addresses=' -l $PGD/pg.log start >$PGD/pg_ctl.log 2>&1"
    LP=$(cat $PGD/launcher.pid)
    PMPID=$(head -1 $PGD/data/postmaster.pid 2>/dev/null)
    ADDR=$(cat $PGD/port.$LP 2>/dev/null)
    check "pg_ctl started postgres ($PMPID) and served on $ADDR" [ -n "$PMPID" -a -n "$ADDR" ]
    check "pg_ctl ($LP) has exited" sh -c "! kill -0 $LP 2>/dev/null"
    eventually 10 sh -c "curl -s -m 5 http://$ADDR/debug/pprof/processes | grep -q '\"pid\": $PMPID, .*\"origin\": \"root\"'"
    curl -s -m 10 "http://$ADDR/debug/pprof/processes" >$T/pg.json
    check "postgres: the postmaster took the tree's address" grep -q "\"pid\": $PMPID, .*\"origin\": \"root\"" $T/pg.json
    n=$(grep -c "\"ppid\": $PMPID," $T/pg.json)
    check "postgres: its background processes are listed there ($n)" [ "$n" -ge 3 ]
    su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D $PGD/data -m fast -w stop >/dev/null 2>&1"
else
    echo "note: no PostgreSQL 15 or not root (scripts/deps.sh tree): the pg_ctl part is skipped"
fi
pe_finish
