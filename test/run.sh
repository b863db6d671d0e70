#!/usr/bin/env bash
# run.sh: the test runner behind `make test`.
#   test/run.sh [-k PATTERN] BUILD [EXTRA_BUILD...]
# Runs every unit test binary (BUILD/test/u_*, then each EXTRA_BUILD/test/u_*,
# the ASan+UBSan build) and every end-to-end script (test/e2e/e2e_*.sh and
# test/e2e/check_*.sh), each bounded in time.  With PATTERN (-k, or the
# environment's T, as in `make test T=heap`) only the tests whose name matches
# it run: an extended regular expression searched in the name as printed
# (u_heap, build-asan/u_heap, e2e_heap_time, check_lint), so `-k heap` runs
# every heap test and `-k '^u_'` the unit tests.  Exit codes: 0 pass, 77 skip,
# else fail.  The last line is "N passed, N failed, N skipped".
set -u
pattern=${T:-}
unset T # the e2e harness uses T for its temporary directory
while [ $# -gt 0 ]; do
    case $1 in
    -k) pattern=${2:-}; shift 2 ;;
    -k*) pattern=${1#-k}; shift ;;
    -h | --help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
BUILD=${1:-build}
export BUILD TEST_DIR=test
cd "$(dirname "$0")/.." || exit 2
passed=0 failed=0 skipped=0 failures=()
logdir=$(mktemp -d /tmp/pe-test.XXXXXX)
run_one() { # name, timeout, command...
    local name=$1 limit=$2; shift 2
    local start=$SECONDS rc
    [ -z "$pattern" ] || [[ $name =~ $pattern ]] || return 0
    timeout -k 5 "$limit" "$@" >"$logdir/${name//\//_}.log" 2>&1
    rc=$?
    case $rc in
    0) passed=$((passed + 1)); printf 'PASS  %-36s %3ds\n' "$name" $((SECONDS - start)) ;;
    77) skipped=$((skipped + 1)); printf 'SKIP  %-36s %s\n' "$name" "$(tail -n 1 "$logdir/${name//\//_}.log")" ;;
    *) failed=$((failed + 1)); failures+=("$name")
       printf 'FAIL  %-36s (exit %d)\n' "$name" "$rc"
       # the failed checks first (they may lie above the tail), then the tail
       grep -E '^FAIL |CHECK failed' "$logdir/${name//\//_}.log" | head -n 20 | sed 's/^/      ! /'
       sed 's/^/      | /' "$logdir/${name//\//_}.log" | tail -n 40 ;;
    esac
}
for t in "$BUILD"/test/u_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" 120 "$t"
done
# Extra build directories (the ASan+UBSan build of the unit tests).
for extra in "${@:2}"; do
    for t in "$extra"/test/u_*; do
        [ -x "$t" ] || continue
        run_one "$(basename "$extra")/$(basename "$t")" 300 "$t"
    done
done
for t in test/e2e/e2e_*.sh test/e2e/check_*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t" .sh)" 600 bash "$t" # e2e_heap_cases takes 200 s at load 16
done
rm -rf "$logdir"
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
