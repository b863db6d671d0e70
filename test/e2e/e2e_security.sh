#!/usr/bin/env bash
# e2e_security: the server under hostile clients.  Slow (slowloris) and idle
# connections cannot hold the workers for long; oversized request lines and
# headers, garbage and odd methods are refused; nothing is ever served from
# disk; the token is exact, long ones (4 KiB, openssl rand -hex 64) are
# enforced, and one that cannot be used means no server at all (so do a Unix
# socket address and an oversized PROFEP_MATCH); the port file is 0600,
# written by rename, never through a planted symlink, and a relative path is
# the directory at load; a non-loopback address without a token warns.  After
# each, the program's output and exit status are its own.  (Browsers:
# test/e2e/e2e_security_web.sh; TLS: test/e2e/e2e_tls.sh.)
source test/e2e/lib.sh
trap "" PIPE # writes to sockets the server closed must not end the script
P=$BUILD/test

# raw REQUEST: send bytes as they are, print the status line (or nothing).
raw() {
    local fd line
    exec {fd}<>"/dev/tcp/${PE_ADDR%:*}/${PE_ADDR#*:}" || return 1
    printf '%b' "$1" >&$fd
    IFS= read -r -t 5 line <&$fd
    exec {fd}>&-
    printf '%s\n' "${line%$'\r'}"
}
# Limits: a slowloris client holds a worker 2 s, so 20 on 8 workers take about
# 4-6 s and idle ones none; held for good they would block the index for the
# program's life (35 s, long enough for every check below on a loaded machine).
# The limits leave room for a loaded machine and still tell the two apart.
index_within() { # seconds: the index answers 200 within that time
    local t
    t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 30 "http://$PE_ADDR/debug/pprof/")
    echo "  index: $t (limit ${1} s)"
    [ "${t% *}" = 200 ] && awk -v t="${t#* }" -v l="$1" 'BEGIN { exit !(t < l) }'
}

# ---- slowloris: 20 connections that never finish their headers ------------------
pe_start $P/p_sleep 35 5 || exit 1
slow=()
for _ in $(seq 20); do
    exec {fd}<>"/dev/tcp/${PE_ADDR%:*}/${PE_ADDR#*:}"
    printf 'GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\nX-Slow: ' >&$fd
    slow+=("$fd")
done
sleep 0.2
check "20 slowloris connections: the index still answers within 12 s" index_within 12
# They keep trickling a byte a second: the header deadline counts from the first byte.
for _ in 1 2 3; do for fd in "${slow[@]}"; do printf 'a' >&$fd 2>/dev/null; done; sleep 1; done
check "trickling slow clients: the index answers within 12 s" index_within 12
for fd in "${slow[@]}"; do exec {fd}>&-; done

# ---- idle connections (connect, send nothing) hold no worker ---------------------
idle=()
for _ in $(seq 30); do exec {fd}<>"/dev/tcp/${PE_ADDR%:*}/${PE_ADDR#*:}"; idle+=("$fd"); done
check "30 idle connections: the index answers within 5 s" index_within 5
for fd in "${idle[@]}"; do exec {fd}>&-; done

# ---- sizes and garbage ------------------------------------------------------------
long=$(head -c 20000 /dev/zero | tr '\0' a)
st=$(pe_status "/$long")
check "a 20 kB request line is refused ($st)" one_of "$st" 400 413 414
st=$(pe_status /debug/pprof/ -H "X-Big: $long")
check "a 20 kB header is refused ($st)" one_of "$st" 400 413 431
hs=()
for i in $(seq 200); do hs+=(-H "X-H$i: v"); done
st=$(pe_status /debug/pprof/ "${hs[@]}")
check "200 headers: answered, not crashed ($st)" one_of "$st" 200 400 413 431
for req in 'GARBAGE\x00\x01\x02\r\n\r\n' 'GET /\r\n\r\n' 'GET / HTTP/9.9\r\n\r\n' \
    '\xff\xfe\xfd\r\n\r\n' 'GET /debug/pprof/ HTTP/1.1\r\nHost: \x00\r\n\r\n' \
    'GET /debug/pprof/?%%%%%%=%%zz HTTP/1.1\r\n\r\n' \
    'POST /debug/pprof/symbol HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n0x1' \
    'POST /debug/pprof/symbol HTTP/1.1\r\nContent-Length: -5\r\n\r\n' \
    'POST /debug/pprof/symbol HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n0x1'; do
    line=$(raw "$req")
    case $line in "HTTP/1.1 5"*) bad "garbage '$req': $line" ;; *) ok "garbage '$req': ${line:-closed}" ;; esac
done
check "after garbage: the index answers" index_within 5

# ---- nothing from disk; other methods refused --------------------------------------
for p in /etc/passwd /../../../etc/passwd /%2e%2e/%2e%2e/etc/passwd //etc/passwd \
    /debug/pprof/../../../etc/passwd /debug/pprof/%2e%2e/%2e%2e/etc/passwd /proc/self/environ \
    /.htpasswd /index.html; do
    st=$(curl -s --path-as-is -o $T/body -w '%{http_code}' "http://$PE_ADDR$p")
    check "no file serving: $p -> $st, no file content" \
        bash -c "[ $st = 404 ] && ! grep -q 'root:' $T/body && ! grep -qa 'PATH=' $T/body"
done
for m in PUT DELETE OPTIONS TRACE PROPFIND MKCOL PATCH LOCK CONNECT; do
    st=$(pe_status /debug/pprof/ -X $m)
    check "method $m refused ($st)" one_of "$st" 405 400
done
check "the program ran on with its own output and status" program_unchanged $PE_PID 5

# ---- token: exact match only ------------------------------------------------------------
PE_ENV="PROFEP_TOKEN=s3cret-token" pe_start $P/p_sleep 30 0 || exit 1
for t in '' s s3cret-toke s3cret-tokenX S3CRET-TOKEN 's3cret-token%00x'; do
    st=$(pe_status "/debug/pprof/?token=$t") # an encoded NUL makes the query malformed: 400
    check "token '$t' refused ($st)" one_of "$st" 401 400
    check "Bearer '$t' refused" [ "$(pe_status /debug/pprof/ -H "Authorization: Bearer $t")" = 401 ]
done
check "token accepted" [ "$(pe_status /debug/pprof/?token=s3cret-token)" = 200 ]
check "401 before any work: a profile without the token" [ "$(pe_status '/profile?duration=5')" = 401 ]
pe_stop; PE_ENV=

# Bearer or token=, 401 otherwise (with X-Go-Pprof).
PE_ENV="PROFEP_TOKEN=s3cret" pe_start $P/p_sleep 30 0 || exit 1
check "token: 401 without it" [ "$(pe_status /debug/pprof/)" = 401 ]
check "token: 401 with a wrong one" [ "$(pe_status /debug/pprof/ -H 'Authorization: Bearer nope')" = 401 ]
check "token: 200 with Bearer" [ "$(pe_status /debug/pprof/ -H 'Authorization: Bearer s3cret')" = 200 ]
check "token: 200 with token=" [ "$(pe_status '/debug/pprof/?token=s3cret')" = 200 ]
check "token: 401 carries X-Go-Pprof" bash -c "curl -s -D - -o /dev/null http://$PE_ADDR/ | grep -qi 'X-Go-Pprof: 1'"
pe_stop
PE_ENV=

# ---- long tokens are enforced ------------------------------------------------------
long_token=$(head -c 3072 /dev/urandom | base64 -w0) # 4096 characters
hex_token=$(openssl rand -hex 64 2>/dev/null || head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n')
for tok in "$long_token" "$hex_token"; do
    PE_ENV="PROFEP_TOKEN=$tok" pe_start $P/p_sleep 30 0 || exit 1
    check "${#tok}-byte token: no token -> 401" [ "$(pe_status /debug/pprof/cmdline)" = 401 ]
    # the last character changed (to another one: a random token may end in x)
    wrong=${tok%?}x
    [ "$wrong" != "$tok" ] || wrong=${tok%?}y
    check "${#tok}-byte token: a wrong one -> 401" \
        [ "$(pe_status /debug/pprof/cmdline -H "Authorization: Bearer $wrong")" = 401 ]
    check "${#tok}-byte token: one byte short -> 401" \
        [ "$(pe_status /debug/pprof/cmdline -H "Authorization: Bearer ${tok%?}")" = 401 ]
    check "${#tok}-byte token: Bearer -> 200" \
        [ "$(pe_status /debug/pprof/cmdline -H "Authorization: Bearer $tok")" = 200 ]
    check "${#tok}-byte token: no warning" [ "$(grep -c -v serving $PE_ERR)" = 0 ]
    pe_stop
done
check "a 128-byte token also works in the query" bash -c \
    "$(declare -f pe_start pe_status); T=$T LIB=$LIB PE_ENV=PROFEP_TOKEN=$hex_token; \
     pe_start $P/p_sleep 5 0 >/dev/null && [ \$(pe_status /debug/pprof/?token=$hex_token) = 200 ] && \
     [ \$(pe_status /debug/pprof/?token=x) = 401 ]; st=\$?; kill \$PE_PID; exit \$st"

# ---- a security setting that cannot be used: no server, one line -----------------
# (never the server without it: no token, a TCP port for a Unix socket, every program)
nl_token=$'two\nlines'
for bad in "PROFEP_TOKEN=" "PROFEP_TOKEN=$(head -c 9000 /dev/zero | tr '\0' t)" \
    "PROFEP_TOKEN= padded" "PROFEP_TOKEN=$nl_token" "PROFEP_TOKEN=caf$(printf '\xc3\xa9')" \
    "PROFEP_ADDR=unix:$T/pe.sock" "PROFEP_MATCH=$(head -c 300 /dev/zero | tr '\0' '*')"; do
    rm -f $T/nosrv.port
    out=$(env PROFEP_ADDR=127.0.0.1:0 "$bad" PROFEP_PORT_FILE=$T/nosrv.port LD_PRELOAD=$LIB \
          $P/p_sleep 0.5 3 2>$T/nosrv.err); st=$?
    what=$(printf '%s' "${bad:0:40}" | tr '\n' '~')
    check "$what...: one line, no server, program unchanged" \
        bash -c "[ $st = 3 ] && [ '$out' = slept ] && [ \$(wc -l <$T/nosrv.err) = 1 ] && \
                 grep -q 'no server' $T/nosrv.err && ! grep -q serving $T/nosrv.err && \
                 [ ! -e $T/nosrv.port ] && [ ! -e $T/pe.sock ]"
    [ "$checks_bad" = 0 ] || sed 's/^/  | /' $T/nosrv.err | cut -c1-200
done

out=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_TOKEN= PROFEP_MATCH=not-this-one LD_PRELOAD=$LIB \
      $P/p_sleep 0.3 3 2>$T/nosrv.err); st=$?
check "an unusable token in a program PROFEP_MATCH does not pick: silent, unchanged" \
    bash -c "[ $st = 3 ] && [ '$out' = slept ] && [ ! -s $T/nosrv.err ]"

# ---- the port file -----------------------------------------------------------------
mode() { stat -c %a "$1"; }
pe_start $P/p_sleep 30 0 || exit 1
check "port file: mode 600" [ "$(mode $T/port.$PE_PID)" = 600 ]
check "port file: no temporary file left" bash -c "! ls -a $T | grep -q profep-port"
pe_stop
# A symlink planted at the final path: left as it is, the file it names untouched.
mkdir -p $T/pf
echo "precious" >$T/pf/victim
ln -s $T/pf/victim $T/pf/port
out=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/pf/port LD_PRELOAD=$LIB $P/p_sleep 1 0 2>$T/pf.err)
check "port file: a planted symlink is left alone (one line, still a link, victim intact)" \
    bash -c "[ -L $T/pf/port ] && [ \"\$(cat $T/pf/victim)\" = precious ] && \
             grep -q 'PROFEP_PORT_FILE.*symbolic link' $T/pf.err && [ \$(wc -l <$T/pf.err) = 2 ] && \
             [ \$(ls -a $T/pf | wc -l) = 4 ] && [ '$out' = slept ]"
[ "$checks_bad" = 0 ] || { sed 's/^/  | /' $T/pf.err; ls -la $T/pf; }
# A file planted at the final path is replaced (by rename): its owner's copy gets nothing.
rm -f $T/pf/port; echo planted >$T/pf/port; chmod 666 $T/pf/port; exec {held}<$T/pf/port
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/pf/port LD_PRELOAD=$LIB $P/p_sleep 1 0 >/dev/null 2>&1
check "port file: a planted file is replaced, 600, the planted inode unchanged" \
    bash -c "grep -q '^127.0.0.1:[0-9]*\$' $T/pf/port && [ \$(stat -c %a $T/pf/port) = 600 ] && \
             [ \"\$(cat /proc/$$/fd/$held)\" = planted ]"
exec {held}<&-
# A relative path is the directory at load, whatever main does next.
mkdir -p $T/start $T/elsewhere
case $P in /*) pchdir=$P/p_chdir ;; *) pchdir=$PWD/$P/p_chdir ;; esac
# (looked at while it runs: a root's own %p file goes at its normal exit)
(cd $T/start && PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=rel.%p LD_PRELOAD=$LIB \
    $pchdir $T/elsewhere 3 >/dev/null 2>$T/rel.err) &
eventually 10 bash -c "ls $T/start | grep -q '^rel\.[0-9]'"
check "port file: relative path resolved at load (main chdir'd at once)" \
    bash -c "ls $T/start | grep -q '^rel\.[0-9]' && ! ls $T/elsewhere | grep -q rel"
wait $!
check "port file: the root's own %p file is gone after its normal exit" \
    bash -c "! ls $T/start $T/elsewhere | grep -q rel"
[ "$checks_bad" = 0 ] || { ls -la $T/start $T/elsewhere; cat $T/rel.err; }

# ---- non-loopback without a token warns (once); with one, it does not -------------
PE_ENV="PROFEP_ADDR=0.0.0.0:0" pe_start $P/p_sleep 1 0 || exit 1
sleep 0.2
check "0.0.0.0 without PROFEP_TOKEN: one warning" [ "$(grep -c 'non-loopback.*PROFEP_TOKEN' $PE_ERR)" = 1 ]
pe_stop
PE_ENV="PROFEP_ADDR=0.0.0.0:0 PROFEP_TOKEN=x" pe_start $P/p_sleep 1 0 || exit 1
sleep 0.2
check "0.0.0.0 with PROFEP_TOKEN: no warning" [ "$(grep -c 'non-loopback' $PE_ERR)" = 0 ]
pe_stop; PE_ENV=
PE_ENV="PROFEP_ADDR=127.0.0.1:0" pe_start $P/p_sleep 1 0 || exit 1
sleep 0.2
check "loopback: one stderr line only" [ "$(wc -l <$PE_ERR)" = 1 ]
pe_stop

pe_finish
