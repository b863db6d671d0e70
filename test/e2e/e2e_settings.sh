#!/usr/bin/env bash
# e2e_settings: PROFEP_* settings in real processes: a taken port (one line,
# program runs on), bad values (one line each, defaults kept, program unchanged),
# a bad PROFEP_ADDR, PROFEP_MATCH (non-matching programs stay silent and bind
# nothing), PROFEP_PORT_FILE's %p, a daemon's dormant child releasing the port,
# and PROFEP_CHILDREN (LD_PRELOAD inherited by default, only us removed with off);
# one line or none: python3 and a program with its own malloc print only the
# serving line, and nothing with PROFEP_ADDR=off (unless a setting is bad).
source test/e2e/lib.sh
P=$BUILD/test

# Port taken: a second process on the same port warns once and runs on.
pe_start $P/p_sleep 30 0 || exit 1
out=$(PROFEP_ADDR=$PE_ADDR LD_PRELOAD=$LIB $P/p_sleep 0.5 4 2>$T/second.err); st=$?
check "port taken: program runs on with its own status" [ "$st" = 4 ] && [ "$out" = slept ]
check "port taken: exactly one stderr line" [ "$(wc -l <$T/second.err)" = 1 ]
check "port taken: the line names pid, program and PROFEP_MATCH" \
    grep -q 'cannot listen.*pid [0-9]* (p_sleep).*PROFEP_MATCH' $T/second.err
pe_stop

# Bad settings: one line each, defaults kept, program unchanged.
out=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=lots PROFEP_MAX_SECONDS=-3 PROFEP_CHILDREN=maybe \
      PROFEP_LOG=loud LD_PRELOAD=$LIB $P/p_hello x 2>$T/bad.err); st=$?
check "bad settings: program unchanged" [ "$st" = 3 ] && [ "$(echo "$out" | wc -l)" = 5 ]
for v in PROFEP_HEAP_RATE=lots PROFEP_MAX_SECONDS=-3 PROFEP_CHILDREN=maybe PROFEP_LOG=loud; do
    check "bad settings: one line for $v" [ "$(grep -c "$v" $T/bad.err)" = 1 ]
done
out=$(PROFEP_ADDR=nonsense:99999 LD_PRELOAD=$LIB $P/p_sleep 0.3 0 2>$T/addr.err)
check "bad PROFEP_ADDR: one line, default used" grep -q 'PROFEP_ADDR=nonsense:99999' $T/addr.err

# One line, or none (issue 31): a program with its own malloc (heap profiling
# cannot work) and python3 print only the serving line, and nothing at all
# with PROFEP_ADDR=off; a bad setting is still said under off.
cat >$T/ownmalloc.c <<'CEOF'
#include <stddef.h>
#include <stdio.h>
static char pool[1 << 22];
static size_t used;
void *malloc(size_t n) { void *p = pool + used; used += (n + 15) & ~(size_t)15; return used <= sizeof(pool) ? p : NULL; }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { return malloc(a * b); }
void *realloc(void *p, size_t n) { void *q = malloc(n); if (q && p) { char *d = q, *s = p; for (size_t i = 0; i < n; i++) d[i] = s[i]; } return q; }
int main(void) { printf("ok\n"); return 0; }
CEOF
if ${CC:-cc} -O1 -o $T/ownmalloc $T/ownmalloc.c 2>/dev/null; then
    PROFEP_ADDR=off LD_PRELOAD=$LIB $T/ownmalloc >/dev/null 2>$T/off.err
    check "PROFEP_ADDR=off, own malloc: nothing on stderr" [ ! -s $T/off.err ]
    PROFEP_ADDR=off PROFEP_HEAP_RATE=lots LD_PRELOAD=$LIB $T/ownmalloc >/dev/null 2>$T/offbad.err
    check "PROFEP_ADDR=off, a bad setting: its one line" \
        [ "$(wc -l <$T/offbad.err)" = 1 -a "$(grep -c PROFEP_HEAP_RATE=lots $T/offbad.err)" = 1 ]
fi
if [ -x /usr/bin/python3 ]; then # Debian's (a pyenv shim would exec twice more)
    PROFEP_ADDR=off LD_PRELOAD=$LIB /usr/bin/python3 -c 'print(1)' >/dev/null 2>$T/pyoff.err
    check "PROFEP_ADDR=off, python3: nothing on stderr" [ ! -s $T/pyoff.err ]
    PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB /usr/bin/python3 -c 'import time; time.sleep(0.5)' 2>$T/py.err
    check "python3: exactly the serving line on stderr" \
        [ "$(wc -l <$T/py.err)" = 1 -a "$(grep -c '^profendpoints: serving' $T/py.err)" = 1 ]
fi

# PROFEP_MATCH: a non-matching program stays dormant and silent.
out=$(PROFEP_MATCH='nomatch*' PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/m.port LD_PRELOAD=$LIB $P/p_sleep 0.5 0 2>$T/match.err)
check "PROFEP_MATCH: non-matching process prints nothing" [ ! -s $T/match.err ]
check "PROFEP_MATCH: non-matching process binds nothing" [ ! -e $T/m.port ]
PE_ENV="PROFEP_MATCH=p_sl*" pe_start $P/p_sleep 2 0 || exit 1
check "PROFEP_MATCH: matching process serves" [ "$(pe_status /debug/pprof/)" = 200 ]
pe_stop; PE_ENV=

# Port file with %p.
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/pe.%p" LD_PRELOAD=$LIB $P/p_sleep 3 0 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -s "$T/pe.$pid" ] && break; sleep 0.05; done
check "PROFEP_PORT_FILE expands %p" grep -q '^127.0.0.1:[0-9]*$' "$T/pe.$pid"
wait $pid

# A daemon's fork child (dormant) does not keep the parent's port bound.
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/d.port LD_PRELOAD=$LIB $P/p_daemon 4 2>/dev/null
sleep 0.5
PE_ENV="PROFEP_ADDR=$(cat $T/d.port)" pe_start $P/p_sleep 2 0 2>/dev/null
check "fork child released the listening port" [ "$(pe_status /debug/pprof/ 2>/dev/null)" = 200 ]
pe_stop; PE_ENV=

# Children: inherited by default, removed (only us) with PROFEP_CHILDREN=off.
got=$(PROFEP_ADDR=off PROFEP_CHILDREN=off LD_PRELOAD="/lib/x86_64-linux-gnu/libm.so.6 $LIB" \
      sh -c 'echo "[$LD_PRELOAD]"' 2>/dev/null)
check "PROFEP_CHILDREN=off removes only us from LD_PRELOAD" [ "$got" = "[/lib/x86_64-linux-gnu/libm.so.6]" ]
got=$(PROFEP_ADDR=off LD_PRELOAD="$LIB" sh -c 'echo "[$LD_PRELOAD]"' 2>/dev/null)
check "children inherit LD_PRELOAD by default" [ "$got" = "[$LIB]" ]
pe_finish
