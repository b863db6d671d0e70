#!/usr/bin/env bash
# lint.sh (`make lint`, and test/e2e/check_lint.sh in `make test`):
#  1. every C file is as clang-format (.clang-format) would write it;
#  2. the signal handler files call nothing but functions declared PE_SIGSAFE,
#     compiler atomics, and the async-signal-safe libc calls listed here.
set -u
cd "$(dirname "$0")/.." || exit 2
rc=0
if command -v clang-format >/dev/null; then
    for f in $(git ls-files '*.c' '*.h' 2>/dev/null || ls */*.c */*.h */*/*.c */*/*.h); do
        if clang-format --dry-run "$f" 2>&1 | grep -q warning; then
            echo "lint: $f is not clang-formatted (make format)"
            rc=1
        fi
    done
else
    echo "lint: clang-format not installed; layout not checked"
fi

# POSIX async-signal-safe functions the handlers may call (signal-safety(7)).
safe="getpid write read errno sigaction sigprocmask pthread_sigmask sem_post syscall clock_gettime"
handlers="sampler/handler.c"
for h in $handlers; do
    # identifiers followed by "(", minus keywords, comments and string contents
    calls=$(sed -e 's://.*$::' -e 's:/\*.*\*/::g' -e '/^ *\*/d' -e 's/"[^"]*"//g' "$h" |
        grep -oE '\b[A-Za-z_][A-Za-z0-9_]*\s*\(' | sed 's/\s*($//' | sort -u)
    for c in $calls; do
        case " if while for switch return sizeof $safe " in *" $c "*) continue ;; esac
        case $c in __atomic_* | __builtin_* | PE_* ) continue ;; esac
        # defined in this file and itself marked, or declared PE_SIGSAFE in a header
        if grep -qE "PE_SIGSAFE[^;{]*\b$c\s*\(" "$h" */*.h 2>/dev/null; then
            continue
        fi
        if grep -qE "^PE_SIGSAFE" "$h" && grep -B1 -E "^$c\(" "$h" | grep -q PE_SIGSAFE; then
            continue
        fi
        echo "lint: $h calls $c, which is not marked PE_SIGSAFE"
        rc=1
    done
done
[ $rc = 0 ] && echo "lint: clean"
exit $rc
