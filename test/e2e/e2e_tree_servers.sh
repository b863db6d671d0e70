#!/usr/bin/env bash
# e2e_tree_servers: real prefork servers as process trees (issue 18):
#  - nginx (nginx-light), master_process on, 2 workers, a few thousand
#    requests: both workers listed within 5 s; a worker's CPU profile through
#    the root names ngx_* functions; pid=all carries both workers' pids; a
#    worker's heap has the four sample types; every request answered; nginx
#    quits cleanly on SIGQUIT;
#  - Python multiprocessing, fork start method, pool of 4: each worker listed,
#    CPU of all four merged with pid=all;
#  - PostgreSQL 15 (initdb/pg_ctl in $T as an unprivileged user), a query loop
#    from psql: its backend is listed, its CPU profile names executor
#    functions (Exec*), its heap profile parses.
# The servers come from scripts/deps.sh tree (installed here when missing); a part
# is skipped when its server still is not installed;
# PostgreSQL needs root (to run it as the postgres user).
source test/e2e/lib.sh
scripts/deps.sh tree >/dev/null 2>&1 || echo "note: scripts/deps.sh tree failed"
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
procs() { curl -s --max-time 10 "http://$PE_ADDR/debug/pprof/processes"; }
pids_of() { procs | python3 -c "import json,sys; print(' '.join(str(p['pid']) for p in json.load(sys.stdin) if p['origin'] != 'root'))"; }
ran=0

# ---- nginx ----------------------------------------------------------------------------
if command -v nginx >/dev/null; then
    ran=1
    NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p $T/nginx
    cat >$T/nginx/nginx.conf <<CONF
daemon off;
master_process on;
worker_processes 2;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $T/nginx/cb;
    proxy_temp_path $T/nginx/px;
    fastcgi_temp_path $T/nginx/fc;
    uwsgi_temp_path $T/nginx/uw;
    scgi_temp_path $T/nginx/sc;
    server {
        listen 127.0.0.1:$NPORT;
        location / { return 200 "hello\n"; }
    }
}
CONF
    pe_start nginx -p $T/nginx -c $T/nginx/nginx.conf || exit 1
    NGX=$PE_PID
    listed=
    for _ in $(seq 50); do [ "$(pids_of | wc -w)" -ge 2 ] && listed=1 && break; sleep 0.1; done
    check "nginx: both workers listed within 5 s" test -n "$listed"
    W=$(pids_of)
    W1=$(echo $W | awk '{print $1}')
    W2=$(echo $W | awk '{print $2}')
    check "nginx: the listed are the master's children" test "$(ps -o ppid= -p "$W1" | tr -d ' ')" = "$NGX"
    # load: rounds of 2000 requests, 32 at a time, for as long as the profiles run
    (while [ ! -e $T/nginx/stop ]; do
        curl -s --parallel --parallel-max 32 -o /dev/null -w '%{http_code}\n' \
            "http://127.0.0.1:$NPORT/[1-2000]"
    done >$T/nginx/codes) &
    load=$!
    pe_get "/debug/pprof/profile?seconds=3&pid=$W1" -o $T/nw.pb
    pe_get "/debug/pprof/profile?seconds=3&pid=all" -o $T/nall.pb
    touch $T/nginx/stop
    wait $load
    n=$(wc -l <$T/nginx/codes)
    check "nginx: every request answered 200 ($n)" test "$(grep -c '^200$' $T/nginx/codes)" = "$n" -a "$n" -ge 2000
    check "nginx: worker's CPU profile names ngx_ functions" sh -c "go tool pprof -top $T/nw.pb 2>&1 | grep -q ' ngx_'"
    go tool pprof -tags $T/nall.pb >$T/nall.tags 2>&1
    check "nginx: pid=all carries worker $W1" grep -q " $W1\$" $T/nall.tags
    check "nginx: pid=all carries worker $W2" grep -q " $W2\$" $T/nall.tags
    pe_get "/debug/pprof/heap?pid=$W2" -o $T/nh.pb
    check "nginx: worker heap has the four sample types" sh -c "go tool pprof -raw $T/nh.pb 2>&1 | grep -q 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes'"
    kill -QUIT $NGX
    st=timeout
    for _ in $(seq 100); do kill -0 $NGX 2>/dev/null || { wait $NGX; st=$?; break; }; sleep 0.1; done
    check "nginx: quits cleanly on SIGQUIT (status $st)" test "$st" = 0
    check "nginx: no worker left" sh -c "! kill -0 $W1 2>/dev/null && ! kill -0 $W2 2>/dev/null"
    PE_PID=
else
    echo "skip nginx: not installed (scripts/deps.sh tree)"
fi

# ---- Python multiprocessing, fork, pool of 4 --------------------------------------------
if [ -x /usr/bin/python3 ]; then
    ran=1
    cat >$T/pool.py <<'PY'
import multiprocessing as mp, os, sys, time
def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return os.getpid()
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(4) as pool:
        seen = set()
        end = time.time() + 60
        while time.time() < end:
            seen.update(pool.map(work, [200000] * 8))
            print("pids", " ".join(map(str, sorted(seen))), flush=True)
PY
    pe_start /usr/bin/python3 $T/pool.py || exit 1
    listed=
    for _ in $(seq 50); do [ "$(pids_of | wc -w)" -ge 4 ] && listed=1 && break; sleep 0.1; done
    check "python pool: four workers listed within 5 s" test -n "$listed"
    pe_get "/debug/pprof/profile?seconds=3&pid=all" -o $T/py.pb
    go tool pprof -tags $T/py.pb >$T/py.tags 2>&1
    n=0
    for p in $(pids_of); do grep -q " $p\$" $T/py.tags && n=$((n + 1)); done
    check "python pool: pid=all carries the four workers ($n)" test "$n" -ge 4
    check "python pool: program label python3" grep -q "python3" $T/py.tags
    pe_stop
fi

# ---- PostgreSQL 15 ----------------------------------------------------------------------
PGBIN=/usr/lib/postgresql/15/bin
if [ -x $PGBIN/postgres ] && [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1; then
    ran=1
    PGD=$T/pg
    mkdir -p $PGD && chown postgres $PGD && chmod 755 $T
    PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    su postgres -s /bin/sh -c "$PGBIN/initdb -D $PGD/data -A trust >$PGD/initdb.log 2>&1"
    su postgres -s /bin/sh -c "env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$PGD/port.%p LD_PRELOAD=$LIB \
        $PGBIN/postgres -D $PGD/data -k $PGD -p $PGPORT -c listen_addresses= >$PGD/pg.log 2>&1 &"
    # generous: initdb and start-up take seconds when the machine is busy
    for _ in $(seq 600); do [ -s $PGD/data/postmaster.pid ] && ls $PGD/port.* >/dev/null 2>&1 && break; sleep 0.1; done
    PMPID=$(head -1 $PGD/data/postmaster.pid 2>/dev/null)
    PE_ADDR=$(cat $PGD/port.$PMPID 2>/dev/null)
    # accepting connections (before it, a client gets "the database system is starting up")
    for _ in $(seq 600); do $PGBIN/pg_isready -q -h $PGD -p $PGPORT && break; sleep 0.1; done
    # a query loop: one backend, busy in the executor
    su postgres -s /bin/sh -c "for i in \$(seq 200); do echo 'select count(*) from generate_series(1,300000) a, generate_series(1,3) b where a % 7 = b;'; done | \
        $PGBIN/psql -h $PGD -p $PGPORT -d postgres -q >/dev/null 2>&1 &"
    BE=
    end=$((SECONDS + 60))
    while [ $SECONDS -lt $end ]; do
        BE=$(su postgres -s /bin/sh -c "$PGBIN/psql -h $PGD -p $PGPORT -d postgres -Atc \"select pid from pg_stat_activity where query like 'select count(*) from generate_series%' and pid <> pg_backend_pid() limit 1\"" 2>/dev/null)
        [ -n "$BE" ] && break
        sleep 0.2
    done
    listed=
    for _ in $(seq 50); do pids_of | grep -qw "$BE" && listed=1 && break; sleep 0.1; done
    check "postgres: the query loop's backend ($BE) is listed" test -n "$listed" -a -n "$BE"
    pe_get "/debug/pprof/profile?seconds=3&pid=$BE" -o $T/pgc.pb
    check "postgres: backend CPU profile names executor functions" sh -c "go tool pprof -top $T/pgc.pb 2>&1 | grep -q ' Exec'"
    pe_get "/debug/pprof/heap?pid=$BE" -o $T/pgh.pb
    check "postgres: backend heap profile parses" sh -c "go tool pprof -raw $T/pgh.pb >/dev/null 2>&1"
    su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D $PGD/data -m fast stop >/dev/null 2>&1"
fi
[ "$ran" = 1 ] || { echo "skip: no server installed"; exit 77; }
pe_finish
