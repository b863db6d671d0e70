#!/usr/bin/env bash
# check_testonly: every pe_* function or variable that no other file of the
# library uses is either static or declared PE_TESTONLY (a header shows it for
# the unit tests only), and nothing declared PE_TESTONLY is used by another
# file of the library (the mark would lie).  Reads the objects in $BUILD.
# ALLOWED lists the exceptions, with their reasons.
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
ls "$BUILD"/preload/*.o >/dev/null 2>&1 || { echo "check_testonly: no objects in $BUILD"; exit 77; }

# symbol  # reason
ALLOWED="
pe_fd_mark_dead       # preload/fd.c: used in fd.c only (fd_int.h); fd.c is rel38's this round: make static then
pe_fd_resolve         # preload/fd.c: the same
"
allowed=$(echo "$ALLOWED" | sed 's/#.*//' | tr -s ' \n' ' ')

# "symbol defining-object used-elsewhere(0/1)" for every pe_* global
uses=$(for o in "$BUILD"/{preload,symbols,stack,sink,profile,proto,render,trace,sampler,contention,heap,http,interpose}/*.o; do
    o2=${o#"$BUILD"/}
    [ -f "${o2%.o}.c" ] || continue # left by a file since moved
    nm -A "$o" 2>/dev/null
done | awk '
    { split($1, a, ":"); o = a[1] }
    NF == 3 && $2 ~ /^[TDBRC]$/ && $3 ~ /^pe_/ { def[$3] = o }
    NF == 3 && ($2 == "U" || $2 == "w") && $3 ~ /^pe_/ { use[$3] = use[$3] " " o }
    END { for (s in def) { ext = 0; n = split(use[s], u, " ")
              for (i = 1; i <= n; i++) if (u[i] != def[s]) ext = 1
              print s, def[s], ext } }')
# the names a header declares PE_TESTONLY
marked=$(cat preload/*.h symbols/*.h stack/*.h sink/*.h profile/*.h proto/*.h render/*.h trace/*.h \
    sampler/*.h contention/*.h heap/*.h http/*.h interpose/*.h |
    sed -n 's/^PE_TESTONLY\(.*\)$/\1/p' | grep -oE '\bpe_[A-Za-z0-9_]+' | sort -u)
bad=0
while read -r sym obj ext; do
    is_marked=0
    case " $marked " in *[[:space:]]$sym[[:space:]]*) is_marked=1 ;; esac
    case " $allowed " in *" $sym "*) continue ;; esac
    if [ "$ext" = 0 ] && [ $is_marked = 0 ]; then
        echo "check_testonly: ${obj#"$BUILD"/} defines $sym, which no other file uses:" \
            "make it static, or declare it PE_TESTONLY if a unit test needs it"
        bad=$((bad + 1))
    elif [ "$ext" = 1 ] && [ $is_marked = 1 ]; then
        echo "check_testonly: $sym is declared PE_TESTONLY but ${obj#"$BUILD"/}'s neighbours use it"
        bad=$((bad + 1))
    fi
done <<<"$uses"
[ $bad = 0 ] || exit 1
echo "check_testonly: $(echo "$marked" | wc -w) test-only exports, all marked; no unused export"
